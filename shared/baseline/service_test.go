package baseline_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

func keysOf(rs []*requirement.Requirement) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Key)
	}
	slices.Sort(out)
	return out
}

func TestArchive(t *testing.T) {
	t.Parallel()
	f := seeded()
	var sel []*requirement.Requirement
	for _, r := range f.rows {
		if r.SpaceKey == "DEMO" && r.Status == requirement.Active && r.Key != "C-1" {
			sel = append(sel, r)
		}
	}
	copies, pages := baseline.Archive("DEMO", 7, sel)
	if got := keysOf(copies); !slices.Equal(got, []string{"A-1", "A-2", "B-1", "B-2"}) {
		t.Fatalf("copies %v", got)
	}
	byKey := map[string]*requirement.Requirement{}
	for _, c := range copies {
		byKey[c.Key] = c
		if c.Status != requirement.Archived || c.Baseline != 7 || c.HTMLNeedsUpdating || c.Text != "text of "+c.Key ||
			len(c.Properties) != 1 || len(c.Issues) != 1 {
			t.Errorf("copy %+v", c)
		}
	}
	deps := func(ds []requirement.Dependency) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.SpaceKey+"/"+d.Key)
		}
		return out
	}
	// A-1 -> A-2, B-1 kept; OTHER/X-1 (another space) dropped. A-2 -> C-1
	// dropped (C-1 not frozen). Reverse dependencies likewise.
	for key, want := range map[string][]string{"A-1": {"DEMO/A-2", "DEMO/B-1"}, "A-2": nil, "B-1": nil, "B-2": {"DEMO/A-1"}} {
		if got := deps(byKey[key].Dependencies); !slices.Equal(got, want) {
			t.Errorf("%s dependencies %v, want %v", key, got, want)
		}
	}
	for key, want := range map[string][]string{"A-1": {"DEMO/B-2"}, "A-2": {"DEMO/A-1"}, "B-1": {"DEMO/A-1"}, "B-2": nil} {
		if got := deps(byKey[key].ReverseDependencies); !slices.Equal(got, want) {
			t.Errorf("%s reverse dependencies %v, want %v", key, got, want)
		}
	}
	// The originals are untouched.
	if r := f.rows[0]; r.Status != requirement.Active || r.Baseline != 0 || len(r.Dependencies) != 3 || !r.HTMLNeedsUpdating {
		t.Errorf("original changed: %+v", r)
	}
	want := []baseline.PageCount{{PageID: "11", Title: "Page 11", Count: 1}, {PageID: "12", Title: "Page 12", Count: 1}, {PageID: "10", Title: "Page 10", Count: 2}}
	slices.SortFunc(want, func(a, b baseline.PageCount) int { return strings.Compare(a.Title, b.Title) })
	if !slices.Equal(pages, want) {
		t.Errorf("pages %+v, want %+v", pages, want)
	}
}

func TestCreate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, query string
		want        []string
	}{
		{"all ACTIVE", "", []string{"A-1", "A-2", "B-1", "B-2", "C-1"}},
		{"key prefix", "key ~ 'a-%'", []string{"A-1", "A-2"}},
		{"page", "page = 10", []string{"A-1", "A-2"}},
		{"page by title", "page = 'PAGE 10'", []string{"A-1", "A-2"}},
		// Defined on page 10 (A-3 is DELETED) or cited by it: A-1 refines
		// A-2, B-1 (page 11) and OTHER/X-1 (another space); A-2 refines C-1.
		{"page cited", "page ~ 10", []string{"A-1", "A-2", "B-1", "C-1"}},
		{"page cited, by title, not defined", "page ~ 'page 12' AND NOT page = 12", []string{"A-1"}},
		{"deleted never", "status = 'DELETED'", nil},
		{"full text", "'text of b'", []string{"B-1", "B-2"}},
		{"to", "to = 'A-2'", []string{"A-1"}},
		{"child closure", "child = 'A-1'", []string{"A-2", "B-1", "C-1"}},
		{"parent closure", "parent = 'C-1'", []string{"A-1", "A-2", "B-2"}},
		{"parent with relationship", "parent@refines = 'B-1' AND NOT key = 'B-2'", []string{"A-1"}},
	}
	st := newStack(t, nil)
	st.svc.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tenant := fmt.Sprint("t", i)
			st.seed(t, tenant)
			s := st.svc
			b, err := s.Create(t.Context(), tenant, "alice", "DEMO", baseline.CreateInput{Name: "Release 1", CEO: "20", QueryString: c.query})
			if err != nil {
				t.Fatal(err)
			}
			if b.Number != 1 || b.Count != len(c.want) || b.CEO != "20" || b.Instant || b.CreatedBy != "alice" || b.Name != "Release 1" ||
				!b.CreatedAt.Equal(s.Now()) || b.SpaceKey != "DEMO" {
				t.Errorf("baseline %+v", b)
			}
			if got := st.copies(t, tenant, "DEMO", 1); !slices.Equal(got, c.want) {
				t.Errorf("copies %v, want %v", got, c.want)
			}
			rec, err := st.bl.Get(t.Context(), tenant, "DEMO", 1)
			if jobs, title := st.jobs(t, tenant, "DEMO"), st.title(t, tenant, "20"); err != nil || len(jobs) != 0 || title != "Release 1" {
				t.Errorf("record %v (%v), jobs %v, page 20 titled %q", rec, err, jobs, title)
			}
		})
	}
}

func TestCreateInstant(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		from     string
		children bool
		want     []string
	}{
		{"page only", "10", false, []string{"A-1", "A-2"}},
		{"page tree, other space and DELETED left out", "10", true, []string{"A-1", "A-2", "B-1", "B-2", "C-1"}},
		{"subtree", "12", true, []string{"B-2", "C-1"}},
		{"page without requirements", "20", true, nil},
	}
	st := newStack(t, nil)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			tenant := fmt.Sprint("t", i)
			st.seed(t, tenant) // page 10 lists A-3, whose row is DELETED: not frozen
			b, err := st.svc.CreateInstant(t.Context(), tenant, "bob", "DEMO",
				baseline.InstantInput{Name: "Snapshot", FromCEO: c.from, WithChildren: c.children})
			if err != nil {
				t.Fatal(err)
			}
			// Nothing is retitled: the page keeps its title, and so does
			// every other.
			if from, p20 := st.title(t, tenant, c.from), st.title(t, tenant, "20"); !b.Instant || b.CEO != c.from || b.Count != len(c.want) ||
				from != "Page "+c.from || p20 != "Page 20" {
				t.Errorf("baseline %+v, titles %q and %q", b, from, p20)
			}
			if got := st.copies(t, tenant, "DEMO", 1); !slices.Equal(got, c.want) {
				t.Errorf("copies %v, want %v", got, c.want)
			}
		})
	}
}

// TestBadInput checks that each bad request is refused before anything is
// allocated or written.
func TestBadInput(t *testing.T) {
	t.Parallel()
	type call func(*baseline.Service) error
	create := func(space string, in baseline.CreateInput) call {
		return func(s *baseline.Service) error {
			_, err := s.Create(context.Background(), "t1", "u", space, in)
			return err
		}
	}
	instant := func(space string, in baseline.InstantInput) call {
		return func(s *baseline.Service) error {
			_, err := s.CreateInstant(context.Background(), "t1", "u", space, in)
			return err
		}
	}
	cases := []struct {
		name string
		call call
		want *apperr.Error
		pos  int
	}{
		{"empty name", create("DEMO", baseline.CreateInput{Name: " ", CEO: "20"}), apperr.ErrInvalid, -1},
		{"long name", create("DEMO", baseline.CreateInput{Name: strings.Repeat("n", 256), CEO: "20"}), apperr.ErrInvalid, -1},
		{"control in name", create("DEMO", baseline.CreateInput{Name: "a\nb", CEO: "20"}), apperr.ErrInvalid, -1},
		{"missing ceo", create("DEMO", baseline.CreateInput{Name: "n"}), apperr.ErrInvalid, -1},
		{"bad ceo", create("DEMO", baseline.CreateInput{Name: "n", CEO: "../1"}), apperr.ErrInvalid, -1},
		{"bad space", create("DE-MO", baseline.CreateInput{Name: "n", CEO: "20"}), apperr.ErrInvalid, -1},
		{"query syntax", create("DEMO", baseline.CreateInput{Name: "n", CEO: "20", QueryString: "key = 'A' AND"}), apperr.ErrInvalid, 13},
		{"unknown space", create("NOPE", baseline.CreateInput{Name: "n", CEO: "20"}), apperr.ErrNotFound, -1},
		{"unknown page", create("DEMO", baseline.CreateInput{Name: "n", CEO: "99"}), apperr.ErrNotFound, -1},
		{"page of another space", create("DEMO", baseline.CreateInput{Name: "n", CEO: "30"}), apperr.ErrInvalid, -1},
		{"instant empty name", instant("DEMO", baseline.InstantInput{FromCEO: "10"}), apperr.ErrInvalid, -1},
		{"instant missing fromCeo", instant("DEMO", baseline.InstantInput{Name: "n"}), apperr.ErrInvalid, -1},
		{"instant unknown page", instant("DEMO", baseline.InstantInput{Name: "n", FromCEO: "99"}), apperr.ErrNotFound, -1},
		{"instant unknown space", instant("NOPE", baseline.InstantInput{Name: "n", FromCEO: "10"}), apperr.ErrNotFound, -1},
		{"instant page of another space", instant("DEMO", baseline.InstantInput{Name: "n", FromCEO: "30"}), apperr.ErrInvalid, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := seeded()
			err := c.call(baseline.New(baseline.Deps{Store: f, Source: f}))
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want.Code)
			}
			if e := apperr.As(err); e.Position != c.pos {
				t.Errorf("position %d, want %d (%v)", e.Position, c.pos, err)
			}
			if len(f.counter) != 0 || len(f.copies) != 0 || len(f.records) != 0 {
				t.Errorf("something was written: %v %v %v", f.counter, f.copies, f.records)
			}
		})
	}
}

// TestFailedFreeze checks that a freeze failing after it was numbered is
// not dropped: the answer is the baseline FREEZING, the worker finishes it
// once writes work again, and the next freeze takes the next number, so
// the space's numbers stay dense.
func TestFailedFreeze(t *testing.T) {
	t.Parallel()
	boom := errors.New("dynamodb is down")
	cases := []struct {
		name  string
		setup func(*fake)
	}{
		{"copies fail", func(f *fake) { f.failPut = boom }},
		{"record fails", func(f *fake) { f.failCommit = boom }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := seeded()
			c.setup(f)
			s := baseline.New(baseline.Deps{Store: f, Source: f})
			b, err := s.Create(t.Context(), "t1", "u", "DEMO", baseline.CreateInput{Name: "n", CEO: "20"})
			if err != nil || b.Number != 1 || b.Status != baseline.StatusFreezing {
				t.Fatalf("create while writes fail: %+v, %v; want baseline 1 FREEZING", b, err)
			}
			if len(f.records) != 0 || len(f.deleted) != 0 || f.jobs["DEMO#1"] == nil {
				t.Fatalf("records %v, deleted %v, jobs %v: want job 1 left to the worker", f.records, f.deleted, f.jobs)
			}
			f.failPut, f.failCommit = nil, nil
			if rep, err := s.RunJobs(t.Context(), time.Minute); err != nil || rep.Completed != 1 {
				t.Fatalf("the worker: %+v, %v", rep, err)
			}
			b, err = s.Create(t.Context(), "t1", "u", "DEMO", baseline.CreateInput{Name: "n", CEO: "20"})
			if err != nil || b.Number != 2 {
				t.Fatalf("next freeze: %+v, %v", b, err)
			}
			if len(f.records) != 2 {
				t.Fatalf("records %v, want baselines 1 and 2", f.records)
			}
		})
	}
}

// TestPageDeletedMeanwhile checks that a baseline page deleted during the
// freeze is no failure: the baseline is committed without a new title.
func TestPageDeletedMeanwhile(t *testing.T) {
	t.Parallel()
	var st *stack
	st = newStack(t, func(bl *wikitable.BaselineStore) baseline.Store {
		return &beforeCopies{BaselineStore: bl, hook: func(ctx context.Context) error { return st.wiki.DeletePage(ctx, "t1", "bob", "20") }}
	})
	st.seed(t, "t1")
	b, err := st.svc.Create(t.Context(), "t1", "u", "DEMO", baseline.CreateInput{Name: "n", CEO: "20"})
	rec, recErr := st.bl.Get(t.Context(), "t1", "DEMO", 1)
	_, pageErr := st.bl.Page(t.Context(), "t1", "20")
	if err != nil || b.Status != baseline.StatusComplete || recErr != nil || !errors.Is(pageErr, apperr.ErrNotFound) {
		t.Fatalf("%+v, %v; record %v (%v), page 20: %v", b, err, rec, recErr, pageErr)
	}
}

// TestDeadline checks that a freeze still writing when the request's
// deadline (less the reserves) comes answers FREEZING with its progress
// saved and its lease released, and that the worker then completes it.
func TestDeadline(t *testing.T) {
	// Not parallel: it measures time, so it runs before the parallel tests
	// start DynamoDB Local beside it.
	f := seeded()
	f.blockPut = true
	s := baseline.New(baseline.Deps{Store: f, Source: f})
	// The times are long enough that a loaded machine's scheduling delays
	// (tens of milliseconds) cannot eat the reserve: the service must give
	// up at about 1.5 s, well before the 2 s deadline.
	s.CleanupReserve = 500 * time.Millisecond
	s.JobReserve = 1500 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	start := time.Now()
	b, err := s.Create(ctx, "t1", "u", "DEMO", baseline.CreateInput{Name: "n", CEO: "20"})
	if err != nil || b.Status != baseline.StatusFreezing || b.Count != 0 || b.Total == 0 {
		t.Fatalf("%+v, %v; want FREEZING", b, err)
	}
	if d := time.Since(start); d > 1900*time.Millisecond {
		t.Errorf("gave up after %v: the cleanup reserve was not kept", d)
	}
	if len(f.deleted) != 0 || len(f.records) != 0 || f.jobs["DEMO#1"] == nil || !f.jobs["DEMO#1"].LeaseUntil.IsZero() {
		t.Fatalf("deleted %v, records %v, jobs %v", f.deleted, f.records, f.jobs)
	}
	f.blockPut = false
	rep, err := s.RunJobs(t.Context(), time.Second)
	if err != nil || rep.Completed != 1 || f.records["DEMO#1"] == nil || f.records["DEMO#1"].Count != b.Total {
		t.Fatalf("worker: %+v, %v; records %v", rep, err, f.records)
	}
}

// TestWorkerSlices checks that the worker resumes from the cursor, one
// slice per run with a tiny budget, and commits the same baseline as an
// inline freeze.
func TestWorkerSlices(t *testing.T) {
	t.Parallel()
	f := seeded()
	for i := range 120 {
		f.rows = append(f.rows, row("DEMO", fmt.Sprintf("Z-%03d", i), "20"))
	}
	s := baseline.New(baseline.Deps{Store: f, Source: f})
	s.InlineBudget, s.SliceSize = 0, 25
	b, err := s.Create(t.Context(), "t1", "u", "DEMO", baseline.CreateInput{Name: "n", CEO: "20"})
	if err != nil || b.Status != baseline.StatusFreezing || b.Count != 0 {
		t.Fatalf("%+v, %v", b, err)
	}
	runs := 0
	for f.records["DEMO#1"] == nil {
		runs++
		if runs > 20 {
			t.Fatal("the worker does not finish")
		}
		if _, err := s.RunJobs(t.Context(), time.Nanosecond); err != nil {
			t.Fatal(err)
		}
		if j := f.jobs["DEMO#1"]; j != nil && j.Cursor != runs*25 {
			t.Fatalf("run %d: cursor %d", runs, j.Cursor)
		}
	}
	if want := (b.Total + 24) / 25; runs != want || f.records["DEMO#1"].Count != b.Total || len(f.copies["DEMO#1"]) != b.Total {
		t.Fatalf("%d runs (want %d), record %+v, %d copies", runs, want, f.records["DEMO#1"], len(f.copies["DEMO#1"]))
	}
	if len(f.retitled) != 1 || len(f.jobs) != 0 {
		t.Fatalf("retitled %v, jobs %v", f.retitled, f.jobs)
	}
	// Nothing pending: a run does nothing.
	if rep, err := s.RunJobs(t.Context(), time.Nanosecond); err != nil || rep.Jobs != 0 {
		t.Fatalf("%+v, %v", rep, err)
	}
}

// TestWorkerFails checks that a job whose writes keep failing is marked
// FAILED after MaxAttempts runs, and stays until deleted.
func TestWorkerFails(t *testing.T) {
	t.Parallel()
	f := seeded()
	s := baseline.New(baseline.Deps{Store: f, Source: f})
	s.InlineBudget = 0
	if _, err := s.Create(t.Context(), "t1", "u", "DEMO", baseline.CreateInput{Name: "n", CEO: "20"}); err != nil {
		t.Fatal(err)
	}
	f.failPut = errors.New("dynamodb is down")
	for range s.MaxAttempts {
		_, _ = s.RunJobs(t.Context(), time.Nanosecond)
	}
	if j := f.jobs["DEMO#1"]; j == nil || j.Status != baseline.StatusFailed || !strings.Contains(j.Message, "dynamodb is down") {
		t.Fatalf("job %+v", j)
	}
	if rep, err := s.RunJobs(t.Context(), time.Nanosecond); err != nil || rep.Jobs != 0 {
		t.Fatalf("a FAILED job was worked on: %+v, %v", rep, err)
	}
}

func TestParseNumber(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		want int
	}{{"1", 1}, {"42", 42}, {"99999999", 99999999}, {"007", 7}, {"0", 0}, {"-1", 0}, {"+1", 0}, {"x", 0}, {"1.5", 0}, {"", 0}, {"100000000", 0}, {"99999999999999999999", 0}} {
		n, err := baseline.ParseNumber(c.in)
		if n != c.want || (c.want == 0) != errors.Is(err, apperr.ErrInvalid) {
			t.Errorf("ParseNumber(%q) = %d, %v; want %d", c.in, n, err, c.want)
		}
	}
}

func TestLabelAndPages(t *testing.T) {
	t.Parallel()
	st := newStack(t, nil)
	st.seed(t, "t1")
	s := st.svc
	if _, err := s.Create(t.Context(), "t1", "u", "DEMO", baseline.CreateInput{Name: "n", CEO: "20"}); err != nil {
		t.Fatal(err)
	}
	b, err := s.SetLabel(t.Context(), "t1", "DEMO", 1, "  approved\n")
	if err != nil || b.Label != "approved" {
		t.Fatalf("label: %+v %v", b, err)
	}
	for _, c := range []struct {
		label string
		n     int
		want  error
	}{
		{strings.Repeat("é", 255), 1, nil},
		{strings.Repeat("é", 256), 1, apperr.ErrInvalid},
		{"a\x00b", 1, apperr.ErrInvalid},
		{"x", 2, apperr.ErrNotFound},
		{"x", 0, apperr.ErrInvalid},
	} {
		if _, err := s.SetLabel(t.Context(), "t1", "DEMO", c.n, c.label); !errors.Is(err, c.want) && !(c.want == nil && err == nil) {
			t.Errorf("SetLabel(%d, %.10q): %v, want %v", c.n, c.label, err, c.want)
		}
	}
	pages, err := s.Pages(t.Context(), "t1", "DEMO", 1)
	if err != nil || len(pages) != 4 || pages[0].Title != "Page 10" || pages[0].Count != 2 {
		t.Fatalf("pages %+v %v", pages, err)
	}
	if _, err := s.Pages(t.Context(), "t1", "DEMO", 9); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("pages of a missing baseline: %v", err)
	}
	list, err := s.List(t.Context(), "t1", "DEMO")
	if err != nil || len(list) != 1 {
		t.Fatalf("list %v %v", list, err)
	}
	if list, err := s.List(t.Context(), "t1", "OTHER"); err != nil || len(list) != 0 {
		t.Errorf("list of a space without baselines: %v %v", list, err)
	}
	if _, err := s.List(t.Context(), "t1", "NOPE"); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("list of an unknown space: %v", err)
	}
	if err := s.Delete(t.Context(), "t1", "DEMO", 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(t.Context(), "t1", "DEMO", 1); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
}

func TestTooManyPages(t *testing.T) {
	t.Parallel()
	f := seeded()
	for i := range baseline.MaxTreePages + 1 {
		id := fmt.Sprint(1000 + i)
		f.pages[id] = &baseline.Page{ID: id, SpaceKey: "DEMO", ParentID: "20"}
	}
	_, err := baseline.New(baseline.Deps{Store: f, Source: f}).CreateInstant(t.Context(), "t1", "u", "DEMO", baseline.InstantInput{Name: "n", FromCEO: "20", WithChildren: true})
	if !errors.Is(err, apperr.ErrTooLarge) || len(f.counter) != 0 {
		t.Fatalf("error %v, counter %v", err, f.counter)
	}
}

func TestTooManyRequirements(t *testing.T) {
	t.Parallel()
	f := seeded()
	for i := range baseline.MaxRequirements + 1 {
		f.rows = append(f.rows, &requirement.Requirement{SpaceKey: "BIG", Key: fmt.Sprintf("K-%06d", i), Status: requirement.Active})
	}
	f.spaces["BIG"] = true
	f.pages["40"] = &baseline.Page{ID: "40", SpaceKey: "BIG"}
	s := baseline.New(baseline.Deps{Store: f, Source: f})
	_, err := s.Create(t.Context(), "t1", "u", "BIG", baseline.CreateInput{Name: "n", CEO: "40"})
	if !errors.Is(err, apperr.ErrTooLarge) || len(f.counter) != 0 {
		t.Fatalf("error %v, counter %v", err, f.counter)
	}
	b, err := s.Create(t.Context(), "t1", "u", "BIG", baseline.CreateInput{Name: "n", CEO: "40", QueryString: "key ~ 'K-00000%'"})
	if err != nil || b.Count != 10 {
		t.Fatalf("narrowed: %+v %v", b, err)
	}
}
