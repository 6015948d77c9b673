package wikirequirements_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
)

// LargeEnv is the flag `make bench` sets: the large diff and export run at
// the size the diff promises (100,000 requirements a side) instead of the
// size `make test` runs them at.
const LargeEnv = "REQTRACE_BENCH_FULL"

// seedLarge writes httpapitest.ChangedRows of DEMO and commits baseline 1.
func seedLarge(t *testing.T, s *server, n int) {
	t.Helper()
	if err := s.reqs.Put(context.Background(), "demo", httpapitest.ChangedRows("DEMO", n)); err != nil {
		t.Fatal(err)
	}
	httpapitest.CommitBaseline(t, s.bl, "demo", "DEMO", 1)
}

// TestDiffAndExportLarge diffs n requirements against n (1% changed)
// through the HTTP API, reading each row once in pages of 500 (in key
// ranges read in parallel), then
// exports the diff and a search of all n as CSV. `make test` runs it with
// 2,000 requirements a side; with REQTRACE_BENCH_FULL=1 (`make bench`) with
// 100,000. Times are logged, never asserted; the calls are.
func TestDiffAndExportLarge(t *testing.T) {
	t.Parallel()
	n := 2_000
	if os.Getenv(LargeEnv) != "" {
		n = 100_000
	}
	s := newServer(t)
	start := time.Now()
	seedLarge(t, s, n)
	t.Logf("seeded %d requirements and baseline 1 (%d items) in %v", n, 2*n, time.Since(start).Round(time.Millisecond))

	s.calls.Reset()
	start = time.Now()
	code, raw := getDiff(t, s, "demo-wiki-user", "DEMO", params("from", "1", "to", "current", "limit", "500"))
	took := time.Since(start)
	if code != http.StatusOK {
		t.Fatalf("diff: %d %.300s", code, raw)
	}
	want := fmt.Sprintf(`"summary":{"added":0,"removed":0,"modified":%d,"unchanged":%d}`, n/100, n-n/100)
	more := fmt.Sprintf(`"hasMore":%t`, n/100 > 500)
	if !strings.Contains(raw, want) || !strings.Contains(raw, more) {
		t.Fatalf("diff of %d: %.400s, want %s and %s", n, raw, want, more)
	}
	// Each side is read once, 500 rows a Query: its first page; then, as
	// it goes on, its last key (one Query of one row) and the rest in at
	// most Segments key ranges read in parallel, each ending in a partial
	// page or an empty one (so at most n/500 + Segments + 1 Queries a
	// side); and the baselines of the space once.
	perSide := n/500 + s.diff.Segments + 1
	if q := s.calls.Count("Query"); q > 2*perSide+1 || s.calls.Total() != q {
		t.Fatalf("diff of %d a side: calls %v, want at most %d Queries and nothing else", n, s.calls.Counts(), 2*perSide+1)
	}
	t.Logf("diff of %d vs %d requirements (1%% changed): %v, DynamoDB calls %v", n, n, took.Round(time.Millisecond), s.calls.Counts())
	// The floor, measured right after on the same data: the reads alone,
	// as the diff makes them (Segments key ranges, InFlight at a time,
	// PageSize a Query), nothing decoded.
	floor, items, err := diffFloor(context.Background(), s.db, s.table, "demo", "DEMO", "REQ-000000", fmt.Sprintf("REQ-%06d", n-1),
		s.diff.Segments, s.diff.InFlight, s.diff.PageSize)
	if err != nil {
		t.Fatal(err)
	}
	if items < 2*n {
		t.Fatalf("the floor read %d items, want both sides' %d", items, 2*n)
	}
	t.Logf("diff floor (the same Queries, nothing decoded or compared): %v for %d items; diff ÷ floor = %.2f",
		floor.Round(time.Millisecond), items, float64(took)/float64(floor))

	start = time.Now()
	records, _, _ := download(t, s, "/rest/reqs/1/diff/DEMO?from=1&to=current&format=csv", "")
	if len(records) != 1+n/100 || records[1][1] != "REQ-000000" || records[1][3] != "text" {
		t.Fatalf("diff export: %d records, first %q", len(records), records[1])
	}
	t.Logf("diff export (%d rows): %v", len(records)-1, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	records, _, _ = download(t, s, "/rest/reqs/1/requirement2/DEMO?spaceKey=DEMO&format=csv", "")
	if len(records) != 1+n || records[n][1] != fmt.Sprintf("REQ-%06d", n-1) || records[3][7] != "Priority: =1+1" {
		t.Fatalf("search export: %d records, want %d", len(records), 1+n)
	}
	t.Logf("search export (%d rows): %v", n, time.Since(start).Round(time.Millisecond))
}
