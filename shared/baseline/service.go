package baseline

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// MaxTreePages is the most pages create-instant walks with
// fromCeoWithChildren (each page costs one Query of its children).
const MaxTreePages = 5000

// Service creates, lists, relabels and deletes baselines.
type Service struct {
	store  Store
	source Source
	// Now returns the current time; tests may replace it.
	Now func() time.Time
	// CleanupReserve is the part of the request's deadline kept back from
	// writing copies so that a freeze that runs out of time can still
	// delete what it wrote (best effort) before the function is stopped.
	CleanupReserve time.Duration
	// JobReserve is the part of the deadline (the request's or the
	// worker's) kept back from freezing: the freeze stops starting slices
	// then and leaves the rest to the worker.
	JobReserve time.Duration
	// InlineBudget is how long a create freezes in the request when its
	// context has no deadline (tests, httptest); 0 hands everything to the
	// worker.
	InlineBudget time.Duration
	// SliceSize is how many requirements are written between two saves
	// of a job's progress (a multiple of 25; default 1000).
	SliceSize int
	// LeaseSlack is how long after its planned end a lease on a job
	// lasts: a holder that died frees the job that much later.
	LeaseSlack time.Duration
	// MaxAttempts is how many failed runs make a job FAILED.
	MaxAttempts int
}

// Deps are what a Service is built from.
type Deps struct {
	Store  Store
	Source Source
}

// New returns a Service over d.Store and d.Source.
func New(d Deps) *Service {
	return &Service{store: d.Store, source: d.Source, Now: time.Now, CleanupReserve: 3 * time.Second,
		JobReserve: 5 * time.Second, InlineBudget: 20 * time.Second, SliceSize: 1000, LeaseSlack: time.Minute, MaxAttempts: 3}
}

// CreateInput is the body of POST .../1/create.
type CreateInput struct {
	Name string
	// CEO is the id of the baseline page; required.
	CEO string
	// QueryString selects the ACTIVE requirements of the space to freeze
	// (docs/query-language.md); empty freezes all of them.
	QueryString string
}

// InstantInput is the body of POST .../1/create-instant.
type InstantInput struct {
	Name string
	// FromCEO is the page whose requirements are frozen; required.
	FromCEO string
	// WithChildren adds the requirements of every descendant page.
	WithChildren bool
}

// List returns the baselines of a space in number order: invalid space
// key, or not found when the space does not exist.
func (s *Service) List(ctx context.Context, tenant, space string) ([]*Baseline, error) {
	if err := checkSpace(space); err != nil {
		return nil, err
	}
	list, err := s.store.List(ctx, tenant, space)
	if err != nil {
		return nil, fmt.Errorf("list baselines of %s: %w", space, err)
	}
	if len(list) == 0 {
		if err := s.requireSpace(ctx, tenant, space); err != nil {
			return nil, err
		}
	}
	return list, nil
}

// Create freezes the ACTIVE requirements of the space that in.QueryString
// selects into a new baseline whose page is in.CEO, and sets that page's
// title to the name. Errors: invalid input (a query syntax error carries
// its position), not found (space or page), too large (more than
// MaxRequirements, or not written before the request deadline).
func (s *Service) Create(ctx context.Context, tenant, actor, space string, in CreateInput) (*Baseline, error) {
	if err := checkSpace(space); err != nil {
		return nil, err
	}
	if err := CheckName(in.Name); err != nil {
		return nil, err
	}
	if in.CEO == "" {
		return nil, apperr.Invalidf("ceo is required: give the id of the baseline page")
	}
	if err := wiki.CheckContentID("ceo", in.CEO); err != nil {
		return nil, err
	}
	expr, err := query.Parse(in.QueryString)
	if err != nil {
		if e := apperr.As(err); e != nil && e.Code == apperr.Invalid {
			return nil, apperr.Wrap(apperr.InvalidAt(e.Position, "queryString: %s", e.Message), err)
		}
		return nil, err
	}
	if err := s.requireSpace(ctx, tenant, space); err != nil {
		return nil, err
	}
	if _, err := s.spacePage(ctx, tenant, space, in.CEO, "ceo"); err != nil {
		return nil, err
	}
	selected, err := s.selectActive(ctx, tenant, space, expr)
	if err != nil {
		return nil, err
	}
	return s.freeze(ctx, tenant, actor, space, &Baseline{Name: in.Name, CEO: in.CEO}, selected)
}

// CreateInstant freezes the ACTIVE requirements defined on page
// in.FromCEO (and on its descendants with in.WithChildren) into a new
// baseline whose CEO is that page; no page title changes. Errors: invalid
// input, not found (space or page), too large.
func (s *Service) CreateInstant(ctx context.Context, tenant, actor, space string, in InstantInput) (*Baseline, error) {
	if err := checkSpace(space); err != nil {
		return nil, err
	}
	if err := CheckName(in.Name); err != nil {
		return nil, err
	}
	if in.FromCEO == "" {
		return nil, apperr.Invalidf("fromCeo is required: give the id of the page whose requirements are frozen")
	}
	if err := wiki.CheckContentID("fromCeo", in.FromCEO); err != nil {
		return nil, err
	}
	if err := s.requireSpace(ctx, tenant, space); err != nil {
		return nil, err
	}
	root, err := s.spacePage(ctx, tenant, space, in.FromCEO, "fromCeo")
	if err != nil {
		return nil, err
	}
	pages := []*Page{root}
	if in.WithChildren {
		if pages, err = s.tree(ctx, tenant, root); err != nil {
			return nil, err
		}
	}
	owners := map[string]bool{}
	var keys []string
	for _, p := range pages {
		if p.SpaceKey == space {
			owners[p.ID] = true
			keys = append(keys, p.Keys...)
		}
	}
	if len(keys) > MaxRequirements {
		return nil, tooMany()
	}
	rows, err := s.source.Requirements(ctx, tenant, space, keys)
	if err != nil {
		return nil, fmt.Errorf("read requirements of page %s: %w", root.ID, err)
	}
	selected := rows[:0]
	for _, r := range rows {
		if r.Status == requirement.Active && owners[r.Origin.PageID] {
			selected = append(selected, r)
		}
	}
	slices.SortFunc(selected, func(a, b *requirement.Requirement) int { return strings.Compare(query.Fold(a.Key), query.Fold(b.Key)) })
	return s.freeze(ctx, tenant, actor, space, &Baseline{Name: in.Name, CEO: root.ID, Instant: true}, selected)
}

// Delete deletes a baseline and its copies; a FREEZING or FAILED baseline
// is cancelled (its job and the copies written so far deleted): invalid
// input, not found.
func (s *Service) Delete(ctx context.Context, tenant, space string, n int) error {
	if err := checkRef(space, n); err != nil {
		return err
	}
	if err := s.store.Delete(ctx, tenant, space, n); err != nil {
		return fmt.Errorf("delete baseline %d of %s: %w", n, space, err)
	}
	return nil
}

// SetLabel changes the label of a baseline (surrounding white space is
// removed; "" clears it) and returns the baseline: invalid input, not
// found.
func (s *Service) SetLabel(ctx context.Context, tenant, space string, n int, label string) (*Baseline, error) {
	if err := checkRef(space, n); err != nil {
		return nil, err
	}
	label = strings.TrimSpace(label)
	if err := CheckLabel(label); err != nil {
		return nil, err
	}
	b, err := s.store.SetLabel(ctx, tenant, space, n, label)
	if err != nil {
		return nil, fmt.Errorf("label baseline %d of %s: %w", n, space, err)
	}
	return b, nil
}

// Pages lists the pages holding requirements of a baseline, by title:
// invalid input, not found.
func (s *Service) Pages(ctx context.Context, tenant, space string, n int) ([]PageCount, error) {
	if err := checkRef(space, n); err != nil {
		return nil, err
	}
	pages, err := s.store.Pages(ctx, tenant, space, n)
	if err != nil {
		return nil, fmt.Errorf("pages of baseline %d of %s: %w", n, space, err)
	}
	sortPages(pages)
	return pages, nil
}

func checkSpace(space string) error {
	if !requirement.ValidSpaceKey(space) {
		return apperr.InvalidNamed("spaceKey", "invalid spaceKey %q: use 1 to 255 letters, digits or _", clip(space))
	}
	return nil
}

func checkRef(space string, n int) error {
	if err := checkSpace(space); err != nil {
		return err
	}
	if n < 1 || n > MaxNumber {
		return apperr.InvalidNamed("baseline", "invalid baseline %d: use a baseline number between 1 and %d", n, MaxNumber)
	}
	return nil
}

func (s *Service) requireSpace(ctx context.Context, tenant, space string) error {
	ok, err := s.source.SpaceExists(ctx, tenant, space)
	if err != nil {
		return fmt.Errorf("check space %s: %w", space, err)
	}
	if !ok {
		return apperr.NotFoundf("space %s not found", space)
	}
	return nil
}

// spacePage reads page id, which must exist and belong to space; field
// names the request field for messages.
func (s *Service) spacePage(ctx context.Context, tenant, space, id, field string) (*Page, error) {
	p, err := s.source.Page(ctx, tenant, id)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, apperr.NotFoundf("%s: page %s not found", field, id) // says all the store's error does
	}
	if err != nil {
		return nil, fmt.Errorf("read page %s: %w", id, err)
	}
	if p.SpaceKey != space {
		return nil, apperr.InvalidNamed(field, "%s: page %s is in space %s, not in %s", field, id, p.SpaceKey, space)
	}
	return p, nil
}

// selectActive reads the current rows of the space and returns the ACTIVE
// ones that expr matches, in key order. The graph predicates (parent,
// child) are answered from the links of the space's ACTIVE rows, which are
// then all held at once (up to closureRows of them); the page predicates
// from the pages their values name (pageNames).
func (s *Service) selectActive(ctx context.Context, tenant, space string, expr query.Expr) ([]*requirement.Requirement, error) {
	names, err := s.pageNames(ctx, tenant, expr)
	if err != nil {
		return nil, err
	}
	env := query.Sets{Pages: names}
	cs := query.Closures(expr)
	var rows []*requirement.Requirement
	over := false
	err = s.source.SpaceRequirements(ctx, tenant, space, func(r *requirement.Requirement) bool {
		switch {
		case r.Status != requirement.Active:
		case len(cs) > 0:
			rows = append(rows, r)
			over = len(rows) > closureRows
		case query.Match(expr, r, env):
			rows = append(rows, r)
			over = len(rows) > MaxRequirements
		}
		return !over
	})
	if err != nil {
		return nil, fmt.Errorf("read requirements of %s: %w", space, err)
	}
	if over && len(cs) > 0 {
		return nil, apperr.TooLargef("space %s has more than %d ACTIVE requirements, too many for parent or child predicates in a baseline query", space, closureRows)
	}
	if len(cs) > 0 {
		env.Closures = closures(space, rows, cs)
		selected := rows[:0]
		for _, r := range rows {
			if query.Match(expr, r, env) {
				selected = append(selected, r)
			}
		}
		rows = selected
	}
	if len(rows) > MaxRequirements {
		return nil, tooMany()
	}
	return rows, nil
}

// pageNames reads what the values of expr's page predicates name, as the
// search does: the current pages of that title (one Query of the title
// index each) and, for `page ~`, what the pages they name (and the page of
// that id) cite, from the current rows their key lists name (one GetItem
// and one read of those rows per page). A page may be in another space.
func (s *Service) pageNames(ctx context.Context, tenant string, expr query.Expr) (map[string]*query.PageNames, error) {
	lookups := query.PageLookups(expr)
	if len(lookups) == 0 {
		return nil, nil
	}
	cites := map[string][]query.Ref{}
	citesOf := func(id string) ([]query.Ref, error) {
		if refs, ok := cites[id]; ok {
			return refs, nil
		}
		p, err := s.source.Page(ctx, tenant, id)
		if errors.Is(err, apperr.ErrNotFound) {
			cites[id] = nil
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read page %s: %w", id, err)
		}
		rows, err := s.source.Requirements(ctx, tenant, p.SpaceKey, p.Keys)
		if err != nil {
			return nil, fmt.Errorf("read the requirements of page %s: %w", id, err)
		}
		cites[id] = query.Cites(id, rows)
		return cites[id], nil
	}
	out := make(map[string]*query.PageNames, len(lookups))
	for _, l := range lookups {
		titled, err := s.source.PagesTitled(ctx, tenant, l.Value)
		if err != nil {
			return nil, fmt.Errorf("read the pages titled %q: %w", l.Value, err)
		}
		n := &query.PageNames{Titled: map[string]bool{}}
		var named []string
		if wiki.ValidContentID(l.Value) {
			named = append(named, l.Value)
		}
		for _, p := range titled {
			if query.SameTitle(p.Title, l.Value) {
				n.Titled[p.PageID] = true
				named = append(named, p.PageID)
			}
		}
		if l.Cited {
			n.Cited = map[query.Ref]bool{}
			for _, id := range named {
				refs, err := citesOf(id)
				if err != nil {
					return nil, err
				}
				for _, r := range refs {
					n.Cited[r] = true
				}
			}
		}
		out[l.Value] = n
	}
	return out, nil
}

// closureRows bounds the rows a query with parent or child predicates holds.
const closureRows = 2 * MaxRequirements

// closures computes the transitive sets the query needs over the links of
// rows (one space): a walk that leaves the space stops there.
func closures(space string, rows []*requirement.Requirement, cs []query.Closure) query.ClosureSet {
	byRef := make(map[query.Ref]*requirement.Requirement, len(rows))
	for _, r := range rows {
		byRef[query.NewRef(space, r.Key)] = r
	}
	set := query.ClosureSet{}
	for _, c := range cs {
		members, _ := query.Reach(c, func(ref query.Ref) ([]query.Ref, error) {
			if ref.SpaceKey == "" {
				ref.SpaceKey = space
			}
			r := byRef[ref]
			if r == nil {
				return nil, nil
			}
			links := r.Dependencies
			if c.Field == query.FieldParent {
				links = r.ReverseDependencies
			}
			var out []query.Ref
			for _, d := range links {
				if c.Rel == "" || requirement.NormalizeRelationship(d.Relationship) == c.Rel {
					out = append(out, query.NewRef(cmp.Or(d.SpaceKey, space), d.Key))
				}
			}
			return out, nil
		})
		set[c] = members
	}
	return set
}

// tree returns root and its descendants, breadth first, each page once.
func (s *Service) tree(ctx context.Context, tenant string, root *Page) ([]*Page, error) {
	all := []*Page{root}
	seen := map[string]bool{root.ID: true}
	level := []*Page{root}
	for len(level) > 0 {
		kids, err := s.children(ctx, tenant, level)
		if err != nil {
			return nil, err
		}
		level = level[:0:0]
		for _, k := range kids {
			if !seen[k.ID] {
				seen[k.ID] = true
				all = append(all, k)
				level = append(level, k)
			}
		}
		if len(all) > MaxTreePages {
			return nil, apperr.TooLargef("page %s has more than %d descendant pages; freeze a smaller part of the tree", root.ID, MaxTreePages)
		}
	}
	return all, nil
}

// children reads the children of pages, 8 pages at a time, in page order.
func (s *Service) children(ctx context.Context, tenant string, pages []*Page) ([]*Page, error) {
	out := make([][]*Page, len(pages))
	errs := make([]error, len(pages))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, p := range pages {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i], errs[i] = s.source.Children(ctx, tenant, p.ID)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("read child pages: %w", err)
	}
	return slices.Concat(out...), nil
}

// freeze allocates the number, writes the freeze job (the selected keys,
// progress 0, its lease held by this request) and writes copies slice by
// slice while the inline budget lasts (the request's deadline less
// JobReserve; InlineBudget without a deadline). When every copy is
// written it commits the baseline (Status COMPLETE); otherwise it saves
// the progress, releases the lease and returns the baseline FREEZING, for
// the background worker (RunJobs) to finish. A write that fails for any
// other reason than the deadline hands the job to the worker too, which
// retries it (and marks it FAILED after MaxAttempts runs): once numbered,
// a baseline is never dropped, so the numbers of a space stay dense.
func (s *Service) freeze(ctx context.Context, tenant, actor, space string, b *Baseline, selected []*requirement.Requirement) (*Baseline, error) {
	if len(selected) > MaxRequirements {
		return nil, tooMany()
	}
	now := s.Now().UTC()
	b.SpaceKey, b.CreatedAt, b.CreatedBy = space, now, actor
	b.Status, b.Total, b.Count = StatusFreezing, len(selected), 0
	end := s.inlineEnd(ctx, now)
	keys := make([]string, len(selected))
	for i, r := range selected {
		keys[i] = r.Key
	}
	job := &Job{Baseline: *b, Tenant: tenant, Keys: keys, Owner: s.owner(), LeaseUntil: end.Add(s.LeaseSlack)}
	if err := s.store.BeginNext(ctx, job); err != nil {
		return nil, fmt.Errorf("start a baseline of %s: %w", space, err)
	}
	n := job.Number
	in := keySet(keys)
	wctx, cancel := s.writeContext(ctx)
	defer cancel()
	stopped := false
	for job.Cursor < len(selected) {
		if !s.Now().Before(end) {
			stopped = true
			break
		}
		slice := selected[job.Cursor:min(job.Cursor+s.slice(), len(selected))]
		copies, pages := archiveIn(space, n, slice, in)
		err := s.store.PutCopies(wctx, tenant, copies)
		if err == nil {
			job.Cursor += len(slice)
			job.Count += len(copies)
			job.Pages = mergePages(job.Pages, pages)
			if job.Cursor < len(selected) {
				err = s.store.Progress(wctx, job)
			}
		}
		if err != nil {
			if jobTaken(err) {
				return nil, fmt.Errorf("freeze baseline %d of %s: %w", n, space, err)
			}
			if !timedOut(ctx, wctx, err) {
				s.handOver(ctx, job, err)
			}
			stopped = true
			break
		}
	}
	if !stopped {
		err := s.commit(wctx, job)
		if jobTaken(err) {
			return nil, fmt.Errorf("freeze baseline %d of %s: %w", n, space, err)
		}
		if err == nil {
			out := job.Baseline
			out.Status = StatusComplete
			return &out, nil
		}
		s.handOver(ctx, job, err)
	}
	// Hand the job over to the worker: save how far it got and release the
	// lease (if that fails, the lease expires by itself).
	cctx, ccancel := s.cleanupContext(ctx)
	defer ccancel()
	job.LeaseUntil = time.Time{}
	_ = s.store.Progress(cctx, job)
	out := job.Baseline
	return &out, nil
}

// jobTaken reports whether a job's write failed because the job is gone
// (a DELETE cancelled it) or another run leased it: nothing to hand over.
func jobTaken(err error) bool {
	return errors.Is(err, apperr.ErrNotFound) || errors.Is(err, apperr.ErrConflict)
}

// handOver logs why an inline freeze stops before the deadline: the job
// is left to the worker, which retries it.
func (s *Service) handOver(ctx context.Context, job *Job, err error) {
	slog.WarnContext(ctx, "baseline freeze failed in the request; the background worker retries it",
		"tenant", job.Tenant, "space", job.SpaceKey, "number", job.Number, "error", err.Error())
}

// commit commits job, setting the title of its page unless it is
// instant; a page deleted meanwhile is no failure: the baseline is
// committed without retitling it.
func (s *Service) commit(ctx context.Context, job *Job) error {
	sortPages(job.Pages)
	job.Status = StatusComplete
	retitle := !job.Instant
	err := s.store.Commit(ctx, job, retitle)
	if retitle && errors.Is(err, apperr.ErrNotFound) {
		err = s.store.Commit(ctx, job, false)
	}
	if err != nil {
		job.Status = StatusFreezing
	}
	return err
}

// timedOut reports whether err comes from the write context's deadline.
func timedOut(ctx, wctx context.Context, err error) bool {
	return apperr.As(err) == nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || wctx.Err() != nil || ctx.Err() != nil)
}

// inlineEnd is when a request stops writing copies itself: its deadline
// less JobReserve, or InlineBudget from now without a deadline.
func (s *Service) inlineEnd(ctx context.Context, now time.Time) time.Time {
	if d, ok := ctx.Deadline(); ok {
		return d.Add(-s.JobReserve)
	}
	return now.Add(s.InlineBudget)
}

func (s *Service) slice() int {
	if s.SliceSize < 25 {
		return 1000
	}
	return s.SliceSize / 25 * 25
}

func (s *Service) owner() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// keySet is the set of keys (folded) a baseline freezes.
func keySet(keys []string) map[string]bool {
	in := make(map[string]bool, len(keys))
	for _, k := range keys {
		in[query.Fold(k)] = true
	}
	return in
}

// mergePages adds the page counts of more to pages.
func mergePages(pages, more []PageCount) []PageCount {
	idx := make(map[string]int, len(pages))
	for i, p := range pages {
		idx[p.PageID] = i
	}
	for _, p := range more {
		if i, ok := idx[p.PageID]; ok {
			pages[i].Count += p.Count
			continue
		}
		idx[p.PageID] = len(pages)
		pages = append(pages, p)
	}
	return pages
}

// writeContext is ctx with CleanupReserve taken off its deadline, if any.
func (s *Service) writeContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(ctx, d.Add(-s.CleanupReserve))
	}
	return context.WithCancel(ctx)
}

// cleanupContext outlives a cancelled request: until the request's own
// deadline when it has one, else for a minute.
func (s *Service) cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok {
		return context.WithDeadline(context.WithoutCancel(ctx), d)
	}
	return context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
}

func tooMany() error {
	return apperr.TooLargef("the selection holds more than %d requirements, the most a baseline may hold: narrow it", MaxRequirements)
}

// Archive returns the archived copies of rows (the ACTIVE requirements of
// space chosen for baseline n) and the summary of their origin pages. A
// copy has status ARCHIVED and Baseline n, its excerpt as frozen (not
// flagged for update), and only the dependencies and reverse dependencies
// whose other end is one of rows; properties and issue links are kept.
func Archive(space string, n int, rows []*requirement.Requirement) ([]*requirement.Requirement, []PageCount) {
	in := make(map[string]bool, len(rows))
	for _, r := range rows {
		in[query.Fold(r.Key)] = true
	}
	return archiveIn(space, n, rows, in)
}

// archiveIn is Archive for a part (rows) of a baseline whose keys (folded)
// are in.
func archiveIn(space string, n int, rows []*requirement.Requirement, in map[string]bool) ([]*requirement.Requirement, []PageCount) {
	inside := func(deps []requirement.Dependency) []requirement.Dependency {
		var kept []requirement.Dependency
		for _, d := range deps {
			if (d.SpaceKey == "" || d.SpaceKey == space) && in[query.Fold(d.Key)] {
				kept = append(kept, d)
			}
		}
		return kept
	}
	copies := make([]*requirement.Requirement, 0, len(rows))
	byPage := map[string]*PageCount{}
	for _, r := range rows {
		c := &requirement.Requirement{
			SpaceKey: space, Key: r.Key, Baseline: n, Status: requirement.Archived,
			Text: r.Text, HTMLExcerpt: r.HTMLExcerpt, Origin: r.Origin,
			Properties:          slices.Clone(r.Properties),
			Dependencies:        inside(r.Dependencies),
			ReverseDependencies: inside(r.ReverseDependencies),
			Issues:              slices.Clone(r.Issues),
		}
		copies = append(copies, c)
		pc := byPage[r.Origin.PageID]
		if pc == nil {
			pc = &PageCount{PageID: r.Origin.PageID, Title: r.Origin.Title}
			byPage[r.Origin.PageID] = pc
		}
		pc.Count++
	}
	pages := make([]PageCount, 0, len(byPage))
	for _, pc := range byPage {
		pages = append(pages, *pc)
	}
	sortPages(pages)
	return copies, pages
}

// sortPages orders pages by title (case-insensitively), then by id.
func sortPages(pages []PageCount) {
	slices.SortFunc(pages, func(a, b PageCount) int {
		return cmp.Or(strings.Compare(strings.ToLower(a.Title), strings.ToLower(b.Title)), strings.Compare(a.PageID, b.PageID))
	})
}
