package baseline_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// fake is an in-memory Store and Source. Its fail* hooks inject errors.
type fake struct {
	mu       sync.Mutex
	spaces   map[string]bool
	pages    map[string]*baseline.Page
	rows     []*requirement.Requirement // current rows, in key order
	counter  map[string]int
	copies   map[string][]*requirement.Requirement // "SPACE#n"
	records  map[string]*baseline.Baseline
	summary  map[string][]baseline.PageCount
	retitled []string
	deleted  []string // DeleteCopies calls
	marks    map[string]bool
	jobs     map[string]*baseline.Job

	failPut    error
	failCommit error
	blockPut   bool // PutCopies waits for its context to end
}

func newFake() *fake {
	return &fake{
		spaces: map[string]bool{"DEMO": true, "OTHER": true}, pages: map[string]*baseline.Page{},
		counter: map[string]int{}, copies: map[string][]*requirement.Requirement{},
		records: map[string]*baseline.Baseline{}, summary: map[string][]baseline.PageCount{}, marks: map[string]bool{},
		jobs: map[string]*baseline.Job{},
	}
}

func bk(space string, n int) string { return fmt.Sprintf("%s#%d", space, n) }

func (f *fake) SpaceExists(_ context.Context, _, space string) (bool, error) {
	return f.spaces[space], nil
}

func (f *fake) Page(_ context.Context, _, id string) (*baseline.Page, error) {
	if p := f.pages[id]; p != nil {
		return p, nil
	}
	return nil, apperr.NotFoundf("page %s not found", id)
}

func (f *fake) Children(_ context.Context, _, id string) ([]*baseline.Page, error) {
	var out []*baseline.Page
	for _, p := range f.pages {
		if p.ParentID == id {
			out = append(out, p)
		}
	}
	return out, nil
}

func (f *fake) SpaceRequirements(_ context.Context, _, space string, fn func(*requirement.Requirement) bool) error {
	for _, r := range f.rows {
		if r.SpaceKey == space && !fn(r) {
			return nil
		}
	}
	return nil
}

func (f *fake) Requirements(_ context.Context, _, space string, keys []string) ([]*requirement.Requirement, error) {
	var out []*requirement.Requirement
	for _, r := range f.rows {
		if r.SpaceKey == space && slices.ContainsFunc(keys, func(k string) bool { return strings.EqualFold(k, r.Key) }) {
			out = append(out, r)
		}
	}
	return out, nil
}

func (f *fake) NextNumber(_ context.Context, _, space string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.counter[space]++
	return f.counter[space], nil
}

func (f *fake) Begin(_ context.Context, job *baseline.Job) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.marks[bk(job.SpaceKey, job.Number)] = true
	c := *job
	c.Keys = slices.Clone(job.Keys)
	f.jobs[bk(job.SpaceKey, job.Number)] = &c
	return nil
}

func (f *fake) Progress(_ context.Context, job *baseline.Job) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.jobs[bk(job.SpaceKey, job.Number)]
	switch {
	case j == nil:
		return apperr.NotFoundf("job gone")
	case j.Owner != job.Owner:
		return apperr.Conflictf("leased by another")
	}
	j.Count, j.Cursor, j.Attempts, j.LeaseUntil = job.Count, job.Cursor, job.Attempts, job.LeaseUntil
	j.Pages = slices.Clone(job.Pages)
	return nil
}

func (f *fake) Fail(_ context.Context, job *baseline.Job, message string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.jobs[bk(job.SpaceKey, job.Number)]
	if j == nil {
		return apperr.NotFoundf("job gone")
	}
	j.Status, j.Message = baseline.StatusFailed, message
	return nil
}

func (f *fake) Pending(_ context.Context, limit int) ([]baseline.JobRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []baseline.JobRef
	for _, j := range f.jobs {
		if j.Status == baseline.StatusFreezing {
			out = append(out, baseline.JobRef{Tenant: j.Tenant, SpaceKey: j.SpaceKey, Number: j.Number})
		}
	}
	slices.SortFunc(out, func(a, b baseline.JobRef) int { return a.Number - b.Number })
	return out[:min(limit, len(out))], nil
}

func (f *fake) Lease(_ context.Context, ref baseline.JobRef, owner string, until, now time.Time) (*baseline.Job, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	j := f.jobs[bk(ref.SpaceKey, ref.Number)]
	if j == nil || j.Status != baseline.StatusFreezing || j.LeaseUntil.After(now) {
		return nil, nil
	}
	j.Owner, j.LeaseUntil = owner, until
	c := *j
	c.Keys, c.Pages = slices.Clone(j.Keys), slices.Clone(j.Pages)
	return &c, nil
}

func (f *fake) Cancel(ctx context.Context, tenant, space string, n int) error {
	f.mu.Lock()
	delete(f.jobs, bk(space, n))
	f.mu.Unlock()
	return f.DeleteCopies(ctx, tenant, space, n)
}

func (f *fake) PutCopies(ctx context.Context, _ string, copies []*requirement.Requirement) error {
	if f.blockPut {
		<-ctx.Done()
		return fmt.Errorf("batch write: %w", ctx.Err())
	}
	if f.failPut != nil {
		return f.failPut
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range copies {
		f.copies[bk(c.SpaceKey, c.Baseline)] = append(f.copies[bk(c.SpaceKey, c.Baseline)], c)
	}
	return nil
}

func (f *fake) DeleteCopies(_ context.Context, _, space string, n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, bk(space, n))
	delete(f.copies, bk(space, n))
	if f.jobs[bk(space, n)] == nil {
		delete(f.marks, bk(space, n))
	}
	return nil
}

func (f *fake) Commit(_ context.Context, job *baseline.Job, retitle bool) error {
	if f.failCommit != nil && (retitle || !errors.Is(f.failCommit, apperr.ErrNotFound)) {
		return f.failCommit
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, pages := &job.Baseline, job.Pages
	if j := f.jobs[bk(b.SpaceKey, b.Number)]; j == nil || j.Owner != job.Owner {
		return apperr.Conflictf("no freeze job")
	}
	delete(f.marks, bk(b.SpaceKey, b.Number))
	delete(f.jobs, bk(b.SpaceKey, b.Number))
	c := *b
	f.records[bk(b.SpaceKey, b.Number)] = &c
	f.summary[bk(b.SpaceKey, b.Number)] = pages
	if retitle {
		f.retitled = append(f.retitled, b.CEO+"="+b.Name)
	}
	return nil
}

func (f *fake) List(_ context.Context, _, space string) ([]*baseline.Baseline, error) {
	var out []*baseline.Baseline
	for _, b := range f.records {
		if b.SpaceKey == space {
			out = append(out, b)
		}
	}
	return out, nil
}

func (f *fake) Get(_ context.Context, _, space string, n int) (*baseline.Baseline, error) {
	if b := f.records[bk(space, n)]; b != nil {
		return b, nil
	}
	return nil, apperr.NotFoundf("baseline %d not found", n)
}

func (f *fake) SetLabel(ctx context.Context, tenant, space string, n int, label string) (*baseline.Baseline, error) {
	b, err := f.Get(ctx, tenant, space, n)
	if err != nil {
		return nil, err
	}
	b.Label = label
	return b, nil
}

func (f *fake) Delete(ctx context.Context, tenant, space string, n int) error {
	if _, err := f.Get(ctx, tenant, space, n); err != nil {
		return err
	}
	delete(f.records, bk(space, n))
	return f.DeleteCopies(ctx, tenant, space, n)
}

func (f *fake) Pages(ctx context.Context, tenant, space string, n int) ([]baseline.PageCount, error) {
	if _, err := f.Get(ctx, tenant, space, n); err != nil {
		return nil, err
	}
	return slices.Clone(f.summary[bk(space, n)]), nil
}

// row is an ACTIVE requirement of page; deps are "KEY" (same space),
// "SPACE/KEY", with relationship "refines".
func row(space, key, page string, deps ...string) *requirement.Requirement {
	r := &requirement.Requirement{SpaceKey: space, Key: key, Status: requirement.Active, Text: "text of " + key,
		HTMLExcerpt: "<p>" + key + "</p>", HTMLNeedsUpdating: true, Origin: requirement.PageRef{PageID: page, Title: "Page " + page},
		Properties: []requirement.Property{{Key: "Priority", Value: "High"}},
		Issues:     []requirement.IssueLink{{ServiceID: "jira-1", IssueKey: "PROJ-1", Relationship: "implements"}}}
	for _, d := range deps {
		s, k, ok := strings.Cut(d, "/")
		if !ok {
			s, k = space, d
		}
		r.Dependencies = append(r.Dependencies, requirement.Dependency{SpaceKey: s, Key: k, Relationship: "refines"})
	}
	return r
}

// link fills reverse dependencies from the rows' dependencies.
func link(rows []*requirement.Requirement) []*requirement.Requirement {
	for _, r := range rows {
		for _, d := range r.Dependencies {
			for _, t := range rows {
				if t.SpaceKey == d.SpaceKey && strings.EqualFold(t.Key, d.Key) {
					t.ReverseDependencies = append(t.ReverseDependencies, requirement.Dependency{SpaceKey: r.SpaceKey, Key: r.Key, Relationship: d.Relationship})
				}
			}
		}
	}
	return rows
}

// seeded is a fake with pages 10 (children 11, 12; 12 has child 13) and
// 20 in DEMO, page 30 in OTHER, and rows on them.
func seeded() *fake {
	f := newFake()
	f.pages = map[string]*baseline.Page{
		"10": {ID: "10", SpaceKey: "DEMO", Title: "Specs", Keys: []string{"A-1", "A-2"}},
		"11": {ID: "11", SpaceKey: "DEMO", Title: "Child", ParentID: "10", Keys: []string{"B-1"}},
		"12": {ID: "12", SpaceKey: "DEMO", Title: "Child 2", ParentID: "10", Keys: []string{"B-2"}},
		"13": {ID: "13", SpaceKey: "DEMO", Title: "Grandchild", ParentID: "12", Keys: []string{"C-1"}},
		"20": {ID: "20", SpaceKey: "DEMO", Title: "Baseline page"},
		"30": {ID: "30", SpaceKey: "OTHER", Title: "Elsewhere", ParentID: "10", Keys: []string{"X-1"}},
	}
	deleted := row("DEMO", "A-3", "10")
	deleted.Status = requirement.Deleted
	f.rows = link([]*requirement.Requirement{
		row("DEMO", "A-1", "10", "A-2", "B-1", "OTHER/X-1"),
		row("DEMO", "A-2", "10", "C-1"),
		deleted,
		row("DEMO", "B-1", "11"),
		row("DEMO", "B-2", "12", "A-1"),
		row("DEMO", "C-1", "13"),
		row("OTHER", "X-1", "30"),
	})
	return f
}

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
		{"deleted never", "status = 'DELETED'", nil},
		{"full text", "'text of b'", []string{"B-1", "B-2"}},
		{"to", "to = 'A-2'", []string{"A-1"}},
		{"child closure", "child = 'A-1'", []string{"A-2", "B-1", "C-1"}},
		{"parent closure", "parent = 'C-1'", []string{"A-1", "A-2", "B-2"}},
		{"parent with relationship", "parent@refines = 'B-1' AND NOT key = 'B-2'", []string{"A-1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := seeded()
			s := baseline.NewService(f, f)
			s.Now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
			b, err := s.Create(t.Context(), "t1", "alice", "DEMO", baseline.CreateInput{Name: "Release 1", CEO: "20", QueryString: c.query})
			if err != nil {
				t.Fatal(err)
			}
			if b.Number != 1 || b.Count != len(c.want) || b.CEO != "20" || b.Instant || b.CreatedBy != "alice" || b.Name != "Release 1" ||
				!b.CreatedAt.Equal(s.Now()) || b.SpaceKey != "DEMO" {
				t.Errorf("baseline %+v", b)
			}
			if got := keysOf(f.copies["DEMO#1"]); !slices.Equal(got, c.want) {
				t.Errorf("copies %v, want %v", got, c.want)
			}
			if f.records["DEMO#1"] == nil || len(f.marks) != 0 || !slices.Equal(f.retitled, []string{"20=Release 1"}) {
				t.Errorf("record %v, retitled %v", f.records["DEMO#1"], f.retitled)
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
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := seeded()
			f.pages["10"].Keys = append(f.pages["10"].Keys, "A-3") // DELETED rows are not frozen
			b, err := baseline.NewService(f, f).CreateInstant(t.Context(), "t1", "bob", "DEMO",
				baseline.InstantInput{Name: "Snapshot", FromCEO: c.from, WithChildren: c.children})
			if err != nil {
				t.Fatal(err)
			}
			if !b.Instant || b.CEO != c.from || b.Count != len(c.want) || len(f.retitled) != 0 {
				t.Errorf("baseline %+v, retitled %v", b, f.retitled)
			}
			if got := keysOf(f.copies["DEMO#1"]); !slices.Equal(got, c.want) {
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
			err := c.call(baseline.NewService(f, f))
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

// TestFailedFreeze checks that a freeze failing after its number was
// allocated removes its copies, writes no record and burns the number.
func TestFailedFreeze(t *testing.T) {
	t.Parallel()
	boom := errors.New("dynamodb is down")
	cases := []struct {
		name  string
		setup func(*fake)
		want  error
	}{
		{"copies fail", func(f *fake) { f.failPut = boom }, boom},
		{"record fails", func(f *fake) { f.failCommit = boom }, boom},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := seeded()
			c.setup(f)
			s := baseline.NewService(f, f)
			_, err := s.Create(t.Context(), "t1", "u", "DEMO", baseline.CreateInput{Name: "n", CEO: "20"})
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v, want %v", err, c.want)
			}
			if !slices.Equal(f.deleted, []string{"DEMO#1"}) || len(f.copies) != 0 || len(f.records) != 0 || len(f.marks) != 0 {
				t.Fatalf("deleted %v, copies %v, records %v, marks %v", f.deleted, f.copies, f.records, f.marks)
			}
			f.failPut, f.failCommit = nil, nil
			b, err := s.Create(t.Context(), "t1", "u", "DEMO", baseline.CreateInput{Name: "n", CEO: "20"})
			if err != nil || b.Number != 2 {
				t.Fatalf("next freeze: %+v, %v", b, err)
			}
		})
	}
}

// TestPageDeletedMeanwhile checks that a baseline page deleted during the
// freeze is no failure: the baseline is committed without a new title.
func TestPageDeletedMeanwhile(t *testing.T) {
	t.Parallel()
	f := seeded()
	f.failCommit = apperr.NotFoundf("ceo: page 20 not found")
	b, err := baseline.NewService(f, f).Create(t.Context(), "t1", "u", "DEMO", baseline.CreateInput{Name: "n", CEO: "20"})
	if err != nil || b.Status != baseline.StatusComplete || f.records["DEMO#1"] == nil || len(f.retitled) != 0 {
		t.Fatalf("%+v, %v; records %v, retitled %v", b, err, f.records, f.retitled)
	}
}

// TestDeadline checks that a freeze still writing when the request's
// deadline (less the reserves) comes answers FREEZING with its progress
// saved and its lease released, and that the worker then completes it.
func TestDeadline(t *testing.T) {
	t.Parallel()
	f := seeded()
	f.blockPut = true
	s := baseline.NewService(f, f)
	s.CleanupReserve = 50 * time.Millisecond
	s.JobReserve = 150 * time.Millisecond
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	b, err := s.Create(ctx, "t1", "u", "DEMO", baseline.CreateInput{Name: "n", CEO: "20"})
	if err != nil || b.Status != baseline.StatusFreezing || b.Count != 0 || b.Total == 0 {
		t.Fatalf("%+v, %v; want FREEZING", b, err)
	}
	if d := time.Since(start); d > 190*time.Millisecond {
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
	s := baseline.NewService(f, f)
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
	s := baseline.NewService(f, f)
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
	f := seeded()
	s := baseline.NewService(f, f)
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
	_, err := baseline.NewService(f, f).CreateInstant(t.Context(), "t1", "u", "DEMO", baseline.InstantInput{Name: "n", FromCEO: "20", WithChildren: true})
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
	s := baseline.NewService(f, f)
	_, err := s.Create(t.Context(), "t1", "u", "BIG", baseline.CreateInput{Name: "n", CEO: "40"})
	if !errors.Is(err, apperr.ErrTooLarge) || len(f.counter) != 0 {
		t.Fatalf("error %v, counter %v", err, f.counter)
	}
	b, err := s.Create(t.Context(), "t1", "u", "BIG", baseline.CreateInput{Name: "n", CEO: "40", QueryString: "key ~ 'K-00000%'"})
	if err != nil || b.Count != 10 {
		t.Fatalf("narrowed: %+v %v", b, err)
	}
}
