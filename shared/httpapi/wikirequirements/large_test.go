package wikirequirements_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// LargeEnv is the flag `make bench` sets: the large diff, coverage and
// exports run at the size they promise (100,000 requirements; a side, for
// the diff) instead of the size `make test` runs them at.
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

	// The exports read as the diff and the search do: each row once (for
	// the diff, besides each side's last key, a row at a cut read twice
	// and the space's baselines).
	s.items.reset()
	records, took, heap := exportLarge(t, s, "/rest/reqs/1/diff/DEMO?from=1&to=current&format=csv")
	if len(records) != 1+n/100 || records[1][1] != "REQ-000000" || records[1][3] != "text" {
		t.Fatalf("diff export: %d records, first %q", len(records), records[1])
	}
	read := s.items.get()
	t.Logf("diff export (%d rows): %v, %.3f items read per requirement and side, heap peak +%.1f MiB", len(records)-1,
		took.Round(time.Millisecond), float64(read)/float64(2*n), float64(heap)/(1<<20))
	if limit := int64(2*n + 2*s.diff.Segments + 1); read > limit {
		t.Fatalf("diff export of %d a side read %d items, want at most %d", n, read, limit)
	}

	s.items.reset()
	records, took, heap = exportLarge(t, s, "/rest/reqs/1/requirement2/DEMO?spaceKey=DEMO&format=csv")
	if len(records) != 1+n || records[n][1] != fmt.Sprintf("REQ-%06d", n-1) || records[3][7] != "Priority: =1+1" {
		t.Fatalf("search export: %d records, want %d", len(records), 1+n)
	}
	read = s.items.get()
	t.Logf("search export (%d rows): %v, %.3f items read per requirement, heap peak +%.1f MiB", n, took.Round(time.Millisecond),
		float64(read)/float64(n), float64(heap)/(1<<20))
	// Each row once, + the space's last key (read before the space is cut
	// into key ranges) and at most one a cut (a key exactly at a cut).
	if limit := int64(n + search.New(search.Deps{}).Segments); read > limit {
		t.Fatalf("search export of %d read %d items, want at most %d (one per requirement, + the last key and one a cut)", n, read, limit)
	}
}

// exportLarge serves an export in process as the function does (the rows
// read and written as CSV to S3, then 303 to the download) and measures its
// time and heap peak; then it fetches and parses the download, outside the
// measurement.
func exportLarge(t *testing.T, s *server, path string) ([][]string, time.Duration, uint64) {
	t.Helper()
	rec := httptest.NewRecorder()
	start := time.Now()
	heap := httpapitest.PeakHeap(func() {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set("Authorization", "Bearer demo-wiki-user")
		s.ServeHTTP(rec, req)
	})
	took := time.Since(start)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("export %s: %d %.300s", path, rec.Code, rec.Body)
	}
	resp, err := http.Get(rec.Header().Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	records, err := csv.NewReader(resp.Body).ReadAll()
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("download of %s: %d %v", path, resp.StatusCode, err)
	}
	return records, took, heap
}

// itemCounter counts the items DynamoDB read for the client's reads
// (ScannedCount of a Query, the items a GetItem or a BatchGetItem
// returned) and the items its writes sent (a PutItem, UpdateItem or
// DeleteItem, each element of a BatchWriteItem or a TransactWriteItems).
type itemCounter struct{ n, written atomic.Int64 }

func (c *itemCounter) options(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("test/itemCounter",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				switch w := in.Parameters.(type) {
				case *dynamodb.PutItemInput, *dynamodb.UpdateItemInput, *dynamodb.DeleteItemInput:
					c.written.Add(1)
				case *dynamodb.TransactWriteItemsInput:
					c.written.Add(int64(len(w.TransactItems)))
				case *dynamodb.BatchWriteItemInput:
					for _, reqs := range w.RequestItems {
						c.written.Add(int64(len(reqs)))
					}
				}
				out, md, err := next.HandleInitialize(ctx, in)
				switch r := out.Result.(type) {
				case *dynamodb.QueryOutput:
					c.n.Add(int64(r.ScannedCount))
				case *dynamodb.GetItemOutput:
					if r.Item != nil {
						c.n.Add(1)
					}
				case *dynamodb.BatchGetItemOutput:
					for _, items := range r.Responses {
						c.n.Add(int64(len(items)))
					}
				}
				return out, md, err
			}), middleware.After)
	})
}

func (c *itemCounter) reset()     { c.n.Store(0); c.written.Store(0) }
func (c *itemCounter) get() int64 { return c.n.Load() }

// coverageRows returns n requirements of space: REQ-i refines REQ-(i+1)
// (so every one is referenced, by REQ-(i-1)), and the even ones implement
// an issue.
func coverageRows(space string, n int) []*requirement.Requirement {
	rows := make([]*requirement.Requirement, 0, n)
	key := func(i int) string { return fmt.Sprintf("REQ-%06d", (i+n)%n) }
	for i := range n {
		r := &requirement.Requirement{SpaceKey: space, Key: key(i), Status: requirement.Active,
			Text:                strings.Repeat(fmt.Sprintf("The system shall do what requirement number %d says. ", i), 4),
			Origin:              requirement.PageRef{PageID: fmt.Sprint(1_000_000 + i/100), Title: "Specs"},
			Dependencies:        []requirement.Dependency{{SpaceKey: space, Key: key(i + 1), Relationship: "refines"}},
			ReverseDependencies: []requirement.Dependency{{SpaceKey: space, Key: key(i - 1), Relationship: "refines"}}}
		if i%2 == 0 {
			r.Issues = []requirement.IssueLink{{IssueKey: fmt.Sprintf("PROJ-%d", i), Relationship: "implements", Page: true}}
		}
		rows = append(rows, r)
	}
	return rows
}

// TestCoverageLarge builds the matrix of n requirements with 2 columns
// (jira, from) through the HTTP API: one pass over the space's rows, one
// item read per requirement, then exports it as CSV. `make test` runs it
// with 2,000 requirements; with REQTRACE_BENCH_FULL=1 (`make bench`) with
// 100,000. Times and the heap are logged, never asserted; items and
// calls are.
func TestCoverageLarge(t *testing.T) {
	t.Parallel()
	n := 2_000
	if os.Getenv(LargeEnv) != "" {
		n = 100_000
	}
	s := newServer(t)
	start := time.Now()
	if err := s.reqs.Put(context.Background(), "demo", coverageRows("DEMO", n)); err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d requirements in %v", n, time.Since(start).Round(time.Millisecond))

	s.calls.Reset()
	s.items.reset()
	var code int
	var raw string
	start = time.Now()
	heap := httpapitest.PeakHeap(func() {
		code, raw = getCoverage(t, s, "demo-wiki-user", "DEMO", params("columns", "jira,from", "limit", "500"))
	})
	took := time.Since(start)
	if code != http.StatusOK {
		t.Fatalf("coverage: %d %.300s", code, raw)
	}
	want := fmt.Sprintf(`"columns":[{"name":"jira","covered":%d,"total":%d},{"name":"from","covered":%d,"total":%d}]`, n/2, n, n, n)
	if !strings.Contains(raw, want) || !strings.Contains(raw, `"count":500,"hasMore":true`) {
		t.Fatalf("coverage of %d: %.400s, want %s", n, raw, want)
	}
	// One pass over the space's rows in key order, in parallel key ranges
	// (search.Service.Each): every item read once, + the space's last key
	// and at most one a cut, by Queries only.
	if items, q := s.items.get(), s.calls.Count("Query"); items < int64(n) || items > int64(n+search.New(search.Deps{}).Segments) || s.calls.Total() != q {
		t.Fatalf("coverage of %d: %d items read, calls %v; want %d items (+ the last key and one a cut) by Queries only", n, items, s.calls.Counts(), n)
	}
	t.Logf("coverage of %d requirements, 2 columns: %v, %.2f items read per requirement, DynamoDB calls %v, heap peak +%.1f MiB",
		n, took.Round(time.Millisecond), float64(s.items.get())/float64(n), s.calls.Counts(), float64(heap)/(1<<20))

	s.calls.Reset()
	s.items.reset()
	records, took, heap := exportLarge(t, s, "/rest/reqs/1/coverage/DEMO?columns=jira,from&format=csv")
	if len(records) != 1+n || records[1][1] != "REQ-000000" || records[1][3] != "PROJ-0" || records[1][4] != fmt.Sprintf("DEMO/REQ-%06d", n-1) ||
		records[2][3] != "" {
		t.Fatalf("coverage export: %d records, first %q", len(records), records[1])
	}
	if items := s.items.get(); items < int64(n) || items > int64(n+search.New(search.Deps{}).Segments) {
		t.Fatalf("coverage export of %d: %d items read, want %d (+ the last key and one a cut)", n, items, n)
	}
	t.Logf("coverage export (%d rows): %v, %.2f items read per requirement, heap peak +%.1f MiB",
		n, took.Round(time.Millisecond), float64(s.items.get())/float64(n), float64(heap)/(1<<20))
}

// TestSuspectMarkingCost measures what suspect marking adds to a page
// save: a page of n requirements, each referenced by 5 requirements of 5
// other pages, saved with every text changed, once with suspectFields []
// (nothing marks) and once with the default (text, properties: every
// referencing row is marked, 5n marks). `make test` runs it with n = 40,
// REQTRACE_BENCH_FULL=1 (`make bench`) with 400. Calls and items written
// are logged per requirement; the marks and the extra items are asserted.
func TestSuspectMarkingCost(t *testing.T) {
	t.Parallel()
	n := 40
	if os.Getenv(LargeEnv) != "" {
		n = 400
	}
	const refs = 5
	s := newServer(t)
	targets := func(v int) string {
		rows := make([]string, 0, n)
		for i := range n {
			rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("T-%03d", i)), fmt.Sprintf("<p>Target %d, version %d.</p>", i, v), "", "", ""))
		}
		return specs(rows...)
	}
	s.save(t, "demo", "10", "DEMO", targets(1))
	for p := range refs {
		rows := make([]string, 0, n)
		for i := range n {
			rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("R%d-%03d", p, i)), "<p>Refines.</p>", "", wt.Link("", fmt.Sprintf("T-%03d", i)), ""))
		}
		s.save(t, "demo", fmt.Sprint(11+p), "DEMO", specs(rows...))
	}
	suspects := func() int {
		a, _ := mustCoverage(t, s, "demo-wiki-user", "DEMO", params("columns", "to", "q", "suspect IS TRUE", "limit", "1"))
		return a.Columns[0].Total
	}
	save := func(fields []string, v int) (map[string]int, int64) {
		if err := s.settings.Put(context.Background(), "demo", integration.Settings{SuspectFields: fields}); err != nil {
			t.Fatal(err)
		}
		s.calls.Reset()
		s.items.reset()
		s.save(t, "demo", "10", "DEMO", targets(v))
		return s.calls.Counts(), s.items.written.Load()
	}
	callsOff, writtenOff := save([]string{}, 2)
	if got := suspects(); got != 0 {
		t.Fatalf("suspectFields []: %d suspect requirements, want 0", got)
	}
	callsOn, writtenOn := save(nil, 3)
	if got := suspects(); got != refs*n {
		t.Fatalf("default suspectFields: %d suspect requirements, want %d", got, refs*n)
	}
	// Each referencing row of another page: its mark (an UpdateItem ADD)
	// and its suspect index item, in the changed row's transaction.
	if extra := writtenOn - writtenOff; extra != int64(2*refs*n) {
		t.Errorf("marking wrote %d items more, want %d (2 per referencing row)", extra, 2*refs*n)
	}
	per := func(calls map[string]int, written int64) string {
		total := 0
		for _, c := range calls {
			total += c
		}
		return fmt.Sprintf("%d calls (%.3f per requirement: %v), %d items written (%.2f per requirement)",
			total, float64(total)/float64(n), calls, written, float64(written)/float64(n))
	}
	t.Logf("save of %d changed requirements, %d reverse dependencies each on other pages:", n, refs)
	t.Logf("  suspectFields []:      %s", per(callsOff, writtenOff))
	t.Logf("  suspectFields default: %s", per(callsOn, writtenOn))
}
