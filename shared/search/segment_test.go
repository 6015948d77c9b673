package search_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
)

// watchStore is a search.Store that watches the key-order reads: how many
// run at once, and the segments (reads with From or Before) with what each
// Query returned.
type watchStore struct {
	search.Store
	mu           sync.Mutex
	active, most int
	calls        int
	segments     []watchedRead
	lastKeyReads int
	bounds       map[[2]string]bool // the (From, Before) of every read
}

type watchedRead struct {
	r    search.Range
	rows int
}

func (w *watchStore) Rows(ctx context.Context, tenant string, r search.Range, after search.Token, limit int) ([]*requirement.Requirement, search.Token, error) {
	w.mu.Lock()
	w.active++
	w.calls++
	w.most = max(w.most, w.active)
	w.mu.Unlock()
	rows, next, err := w.Store.Rows(ctx, tenant, r, after, limit)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.active--
	if r.Desc && limit == 1 {
		w.lastKeyReads++
	}
	if w.bounds == nil {
		w.bounds = map[[2]string]bool{}
	}
	w.bounds[[2]string{r.From, r.Before}] = true
	if r.From != "" || r.Before != "" {
		w.segments = append(w.segments, watchedRead{r, len(rows)})
	}
	return rows, next, err
}

func (w *watchStore) reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.most, w.calls, w.segments, w.lastKeyReads, w.bounds = 0, 0, nil, 0, nil
}

// segmented reports whether the reads since the last reset cut a range
// into segments: a last key read, then reads of several key ranges.
func (w *watchStore) segmented() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastKeyReads > 0 && len(w.bounds) > 2
}

// cuts returns the distinct lower bounds of the segments read.
func (w *watchStore) cuts() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, s := range w.segments {
		if s.r.From != "" && !slices.Contains(out, s.r.From) {
			out = append(out, s.r.From)
		}
	}
	slices.Sort(out)
	return out
}

// segRows is what a test seeds: n current rows of space with keys
// format(i).
func segRows(space string, n int, key func(i int) string) []*requirement.Requirement {
	rows := make([]*requirement.Requirement, n)
	for i := range rows {
		rows[i] = &requirement.Requirement{SpaceKey: space, Key: key(i), Status: requirement.Active,
			Text: fmt.Sprintf("Requirement %d of %s.", i, space)}
	}
	return rows
}

// eachNames runs Each and returns the rows emitted.
func eachNames(t *testing.T, svc *search.Service, req search.Request) []string {
	t.Helper()
	var got []*requirement.Requirement
	if err := svc.Each(context.Background(), req, func(r *requirement.Requirement) error {
		got = append(got, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return names(got)
}

// TestEachSegmented seeds spaces of a few thousand rows in DynamoDB Local
// and checks that Each, reading their key-order range in parallel
// segments (page size 50, up to 16 segments, 3 in flight), emits exactly
// the sequence a sequential read (Segments 1) emits, which is the rows in
// key order, reading every row once but the last key's and the rows at a
// cut; for the cuts at exactly a key, empty segments, keys that share a
// long prefix, the tenant-wide index (several spaces holding the same
// keys) and a baseline's partition. The archived copies of one space
// (read filtered from the tenant's archived index) stay sequential.
func TestEachSegmented(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newStack(t)
	w := &watchStore{Store: s.store}
	seg := search.New(search.Deps{Store: w, Settings: s.store})
	seg.PageSize, seg.Segments, seg.InFlight = 50, 16, 3
	seq := search.New(search.Deps{Store: w, Settings: s.store})
	seq.PageSize, seq.Segments = 50, 1

	digits := func(i int) string { return fmt.Sprintf("REQ-%05d", i) }
	gap := func(i int) string { return fmt.Sprintf("REQ-%05d", i%1000+i/1000*9000) } // 0-999, 9000-9999
	long := func(i int) string { return strings.Repeat("LONGPREFIX-", 20) + fmt.Sprintf("%05d", i*7) }
	same := func(i int) string { return fmt.Sprintf("K-%04d", i) }
	put := func(tenant string, rows []*requirement.Requirement) {
		if err := s.reqs.Put(ctx, tenant, rows); err != nil {
			t.Fatal(err)
		}
	}
	put("seg", segRows("DIGITS", 3000, digits))
	put("seg", segRows("GAP", 2000, gap))
	put("seg", segRows("LONG", 2000, long))
	for _, sp := range []string{"A", "B", "C"} {
		put("segall", segRows(sp, 1000, same))
	}
	bl := segRows("BL", 2000, digits)
	put("seg", bl)
	var copies []*requirement.Requirement
	for _, r := range bl {
		c := r.Clone()
		c.Baseline, c.Status = 1, requirement.Archived
		copies = append(copies, c)
	}
	put("seg", copies)
	httpapitest.CommitBaseline(t, wikitable.NewBaselineStore(s.items, s.table), "seg", "BL", 1)

	for _, tt := range []struct {
		name      string
		req       search.Request
		n         int // rows emitted
		segmented bool
		check     func(t *testing.T, cuts []string)
	}{
		{"cuts at keys", search.Request{Tenant: "seg", PathSpace: "DIGITS", Space: "DIGITS"}, 3000, true,
			func(t *testing.T, cuts []string) {
				if !slices.ContainsFunc(cuts, func(c string) bool { return len(c) == len("REQ-00000") }) {
					t.Errorf("no cut is a key: %q", cuts)
				}
			}},
		{"empty segments", search.Request{Tenant: "seg", PathSpace: "GAP", Space: "GAP"}, 2000, true,
			func(t *testing.T, _ []string) {
				if !slices.ContainsFunc(w.segments, func(r watchedRead) bool {
					return r.rows == 0 && r.r.From > "REQ-01000" && r.r.Before < "REQ-09000" && r.r.Before != ""
				}) {
					t.Errorf("no segment of the gap read: %v", w.segments)
				}
			}},
		{"long common prefix", search.Request{Tenant: "seg", PathSpace: "LONG", Space: "LONG"}, 2000, true, nil},
		{"tenant-wide", search.Request{Tenant: "segall", PathSpace: "A"}, 3000, true, nil},
		{"baseline partition", search.Request{Tenant: "seg", PathSpace: "BL", Space: "BL", Query: mustParse(t, "baseline = 1"), IncludeArchived: true}, 2000, true,
			func(t *testing.T, _ []string) {
				if !slices.ContainsFunc(w.segments, func(r watchedRead) bool { return r.r.Baseline == 1 }) {
					t.Errorf("the baseline's partition was not read in segments: %v", w.segments)
				}
			}},
		{"archived copies of a space", search.Request{Tenant: "seg", PathSpace: "BL", Space: "BL", Query: mustParse(t, "status = 'ARCHIVED'"), IncludeArchived: true}, 2000, false, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want := eachNames(t, seq, tt.req)
			if len(want) != tt.n || !slices.IsSortedFunc(want, func(a, b string) int {
				return strings.Compare(a[strings.Index(a, "/")+1:], b[strings.Index(b, "/")+1:])
			}) {
				t.Fatalf("the sequential read emitted %d rows (want %d), in key order: %v", len(want), tt.n, want[:min(len(want), 20)])
			}
			w.reset()
			s.reset()
			got := eachNames(t, seg, tt.req)
			items := s.items.Items()
			if !slices.Equal(got, want) {
				for i := range min(len(got), len(want)) {
					if got[i] != want[i] {
						t.Fatalf("segmented: %d rows, first difference at %d: %s, want %s", len(got), i, got[i], want[i])
					}
				}
				t.Fatalf("segmented: %d rows, want %d", len(got), len(want))
			}
			cuts := w.cuts()
			t.Logf("%d rows: %d segments, %d Queries, at most %d at once, %d items read", len(got), len(cuts)+1, w.calls, w.most, items)
			if !tt.segmented {
				if len(w.segments) > 0 {
					t.Fatalf("read in segments: %v", w.segments[0])
				}
				return
			}
			if len(cuts) < 2 || w.most < 2 {
				t.Fatalf("%d cuts, %d reads at once: not read in parallel segments", len(cuts), w.most)
			}
			if len(cuts) > seg.Segments-1 {
				t.Errorf("%d cuts, want at most %d", len(cuts), seg.Segments-1)
			}
			if w.most > seg.InFlight+1 {
				t.Errorf("%d reads at once, want at most InFlight", w.most)
			}
			// Every row once, + the last key's and one a cut (+ the
			// baselines' record for the visibility of the copies).
			limit := tt.n + 1 + len(cuts)
			if tt.req.IncludeArchived {
				limit++
			}
			if items > limit {
				t.Errorf("%d items read for %d rows and %d cuts, want at most %d", items, tt.n, len(cuts), limit)
			}
			if tt.check != nil {
				tt.check(t, cuts)
			}
		})
	}

	// emit's error, and the context's end, stop every reader: Each
	// returns with no Query running, and none starts afterwards.
	boom := errors.New("boom")
	for _, stop := range []string{"emit error", "cancel"} {
		t.Run(stop, func(t *testing.T) {
			w.reset()
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			n := 0
			err := seg.Each(ctx, search.Request{Tenant: "seg", PathSpace: "DIGITS", Space: "DIGITS"}, func(*requirement.Requirement) error {
				if n++; n == 120 {
					if stop == "cancel" {
						cancel()
						return nil
					}
					return boom
				}
				return nil
			})
			if stop == "cancel" && !errors.Is(err, context.Canceled) || stop != "cancel" && !errors.Is(err, boom) {
				t.Fatalf("Each returned %v after %d rows", err, n)
			}
			w.mu.Lock()
			active, calls, cuts := w.active, w.calls, len(w.segments)
			w.mu.Unlock()
			if active != 0 || cuts == 0 {
				t.Fatalf("%d Queries still running when Each returned (%d segment reads)", active, cuts)
			}
			time.Sleep(50 * time.Millisecond)
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.calls != calls {
				t.Fatalf("%d Queries started after Each returned", w.calls-calls)
			}
		})
	}
}

// checkEach runs req's export (Each) on svc, whose Store is w, when req's
// order allows one, and compares its rows with the brute-force
// evaluator's (every match, in order). It returns whether it ran and
// whether the range was read in segments.
func checkEach(t *testing.T, svc *search.Service, w *watchStore, all []*requirement.Requirement, titles map[string]string, req search.Request, scope []string, desc string) (ran, segmented bool) {
	t.Helper()
	if len(req.Order) > 0 && req.Order[0].Column != query.ColumnKey {
		return false, false
	}
	every := req
	every.Offset, every.Limit = 0, search.MaxLimit
	want := names(bruteForce(all, titles, every, scope))
	w.reset()
	if got := eachNames(t, svc, req); !slices.Equal(got[:min(len(got), search.MaxLimit)], want) {
		t.Fatalf("%s\nexport in segments:\n got  %v\n want %v", desc, got, want)
	}
	return true, w.segmented()
}
