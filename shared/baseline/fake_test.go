package baseline_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// fake is an in-memory Store and Source for the tests of the service's
// rules (selection limits, failures, deadlines, the worker); what a freeze
// stores is tested on the real store (dynamo_test.go). Its fail* hooks
// inject errors. The Store methods only those tests call (List, Get,
// SetLabel, Delete, Pages) are left to the nil embedded Store.
type fake struct {
	baseline.Store
	mu       sync.Mutex
	spaces   map[string]bool
	pages    map[string]*baseline.Page
	rows     []*requirement.Requirement // current rows, in key order
	counter  map[string]int
	copies   map[string][]*requirement.Requirement // "SPACE#n"
	records  map[string]*baseline.Baseline
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
		records: map[string]*baseline.Baseline{}, marks: map[string]bool{},
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

func (f *fake) PagesTitled(_ context.Context, _, title string) ([]requirement.PageRef, error) {
	var out []requirement.PageRef
	for _, p := range f.pages {
		if strings.EqualFold(p.Title, title) {
			out = append(out, requirement.PageRef{PageID: p.ID, Title: p.Title})
		}
	}
	return out, nil
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

func (f *fake) BeginNext(ctx context.Context, job *baseline.Job) error {
	f.mu.Lock()
	f.counter[job.SpaceKey]++
	job.Number = f.counter[job.SpaceKey]
	f.mu.Unlock()
	return f.Begin(ctx, job)
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
	if f.failCommit != nil {
		return f.failCommit
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b := &job.Baseline
	if j := f.jobs[bk(b.SpaceKey, b.Number)]; j == nil || j.Owner != job.Owner {
		return apperr.Conflictf("no freeze job")
	}
	delete(f.marks, bk(b.SpaceKey, b.Number))
	delete(f.jobs, bk(b.SpaceKey, b.Number))
	c := *b
	f.records[bk(b.SpaceKey, b.Number)] = &c
	if retitle {
		f.retitled = append(f.retitled, b.CEO+"="+b.Name)
	}
	return nil
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
