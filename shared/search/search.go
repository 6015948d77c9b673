// Package search runs requirement searches (GET
// /rest/reqs/1/requirement2/{spaceKey}): it resolves the scope of a search,
// plans it, reads the candidates through the Store it consumes and filters
// them with the query language's evaluator (shared/query).
//
// The planner drives each search from the most selective predicate that an
// index serves (an exact key, a key range of comparisons and prefixes, a
// property value, an issue, a page by id or title, a dependency, a whole
// word of a text pattern, a baseline, a space) and evaluates the
// whole query in memory on what it reads. With no such predicate it reads the scope in key
// order. When the requested order is the key order (REQKEY first, as the
// default REQKEY ASC, BASELINE DESC) it stops as soon as it has offset+limit
// matches; for any other order it reads every candidate and keeps the best
// offset+limit in a bounded heap. docs/search.md describes the plans and
// their costs. The package has no AWS types and never scans a table.
package search

import (
	"context"
	"fmt"
	"strings"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Paging limits (docs/architecture.md, "Requests").
const (
	// DefaultLimit is the page size when the request names none.
	DefaultLimit = 50
	// MaxLimit is the largest page; larger limits are clamped to it.
	MaxLimit = 500
)

// Bounds of the parent and child closures: a query whose closures go deeper
// or reach more requirements is refused as too broad (400) rather than
// answered with a truncated, wrong result.
const (
	// MaxClosureDepth is the number of links a closure may follow from its
	// requirement.
	MaxClosureDepth = 20
	// MaxClosureNodes is the number of requirements all the closures of
	// one query may hold together.
	MaxClosureNodes = 10000
)

// Range is one read of requirement rows in key order (query.Fold of the
// key, then space key, then the current version before archived copies,
// newest baseline first): the "index order" every source of a plan follows.
type Range struct {
	// Space limits the read to one space; "" reads every space of the
	// tenant (the tenant-wide key-order index).
	Space string
	// Archived reads archived copies (baselines) instead of current rows.
	Archived bool
	// Baseline, when > 0, reads the copies of that baseline of Space only
	// (its own partition); Archived is then implied.
	Baseline int
	// Prefix keeps the rows whose folded key starts with it ("" for all);
	// with Exact, the rows whose folded key equals it.
	Prefix string
	Exact  bool
	// Desc reads in descending order.
	Desc bool
	// From and Before, when set, keep the rows whose folded key k is
	// From <= k < Before (either may be "": that end is open), together
	// with Prefix (not with Exact): the key range of a key comparison, or
	// a segment of a partition read in parallel (the diff). They are
	// compared with folded keys as they are (not folded again). Bounds
	// holding bytes below '-' (below every byte of a key) are not ordered
	// like the keys in the tenant-wide indexes, whose sort keys continue
	// the key with '#': query.Access.KeyRange gives bounds free of them.
	From, Before string
}

// IndexKind names a search index.
type IndexKind int

// The search indexes. They hold the current ACTIVE rows only.
const (
	// IndexProperty: the rows with a property named Name (folded) of value
	// Value (case-insensitively, so a superset of the exact matches).
	IndexProperty IndexKind = iota + 1
	// IndexIssue: the rows linked to issue Value (case-insensitively).
	IndexIssue
	// IndexExternal: IndexProperty for external properties.
	IndexExternal
	// IndexSuspect: the rows with a suspect dependency or issue link (a
	// superset: rows cleared meanwhile may stay until their next write).
	IndexSuspect
	// IndexWord: the rows whose key or text holds the word Value
	// (requirement.Words; case-insensitively, so a superset). Only the
	// spaces Store.WordIndexed vouches for have every row in it.
	IndexWord
)

// IndexRef names one partition of a search index: its items of every
// space, or of Space only.
type IndexRef struct {
	Kind  IndexKind
	Name  string
	Value string
	// Space, when set, restricts the partition to that space's items.
	Space string
}

// Token is an opaque position in a Range or an index partition, returned
// by the Store with one page and given back to read the next; "" is the
// start (and, returned, the end). Tokens never leave the service.
type Token string

// Store is what searches read. Every method reads the tenant's items only.
type Store interface {
	// Rows returns one page of the rows of r, in the order of Range,
	// starting after `after`, reading at most limit items (0: as many as
	// one call returns); next is "" after the last page. Stubs (rows with
	// an empty Status: reverse dependencies of a requirement nobody
	// defines) are included. Errors: internal only.
	Rows(ctx context.Context, tenant string, r Range, after Token, limit int) (rows []*requirement.Requirement, next Token, err error)
	// Index returns one page of the ids in an index partition (of every
	// space, or of ix.Space only), in the order of Range (current rows:
	// key, then space), paged like Rows.
	// Errors: internal only.
	Index(ctx context.Context, tenant string, ix IndexRef, desc bool, after Token, limit int) (ids []requirement.ID, next Token, err error)
	// Get returns the rows among ids that exist, stubs included, in no
	// particular order. Errors: internal only.
	Get(ctx context.Context, tenant string, ids []requirement.ID) ([]*requirement.Requirement, error)
	// PageKeys returns the space of a page and the keys of the
	// requirements it defines and owns (their current rows are ACTIVE with
	// the page as origin). Errors: apperr.ErrNotFound for an unknown page.
	PageKeys(ctx context.Context, tenant, pageID string) (space string, keys []string, err error)
	// PagesTitled returns the pages whose title may equal title ignoring
	// case, with their titles: a superset of those query.SameTitle
	// accepts, which the caller keeps. Errors: internal only.
	PagesTitled(ctx context.Context, tenant, title string) ([]requirement.PageRef, error)
	// Baselines returns the committed baseline numbers of a space (those
	// whose record exists): archived copies of any other number are
	// invisible (docs/baselines.md, visibility rule). Errors: internal.
	Baselines(ctx context.Context, tenant, space string) (map[int]bool, error)
	// WordIndexed reports whether the word index (IndexWord) holds every
	// ACTIVE row of spaces (nil: of the tenant). Errors: internal only.
	WordIndexed(ctx context.Context, tenant string, spaces []string) (bool, error)
	// Spaces lists the spaces in which the tenant has stored pages.
	// Errors: internal only.
	Spaces(ctx context.Context, tenant string) ([]string, error)
}

// Settings reads the tenant's admin settings the scope rule depends on.
type Settings interface {
	// IsolateSpaces reports whether searches are limited to the space of
	// their path when they name no spaceKey (false when never set).
	// Errors: internal only.
	IsolateSpaces(ctx context.Context, tenant string) (bool, error)
}

// Service runs searches.
type Service struct {
	store    Store
	settings Settings
	// PageSize is the Limit of each Query of a key-order range that Each
	// reads in segments (segment.go), its first page included.
	PageSize int
	// Segments is the most key ranges Each cuts such a range into; 1 (or
	// less) reads it as one stream, in pages of up to 1 MB, as Search does.
	Segments int
	// InFlight is how many segments are read at once.
	InFlight int
	// MaxRead is the most rows and index items one Search may read
	// (DefaultMaxRead; 0: no bound); a search that needs more is refused
	// as too broad (budget.go). Each, which reads every match on purpose,
	// has no such bound.
	MaxRead int
}

// Deps are what a Service is built from.
type Deps struct {
	Store    Store
	Settings Settings
}

// New returns a Service reading from d.Store and d.Settings.
func New(d Deps) *Service {
	return &Service{store: d.Store, settings: d.Settings, PageSize: defaultPageSize, Segments: 128, InFlight: 8, MaxRead: DefaultMaxRead}
}

// Request is one search, its parameters already parsed.
type Request struct {
	Tenant string
	// PathSpace is the {spaceKey} of the path; it matters only under the
	// scope rule (isolateSpaces on and no Space).
	PathSpace string
	// Space is the spaceKey query parameter ("" when absent): the scope.
	Space string
	// Query is the parsed q (nil matches everything).
	Query query.Expr
	// Order is the parsed order; empty means query.DefaultOrder.
	Order query.Order
	// Offset is the number of matches to skip (≥ 0).
	Offset int
	// Limit is the page size: 0 means DefaultLimit, above MaxLimit is
	// clamped to MaxLimit.
	Limit int
	// IncludeArchived also returns DELETED, MOVED and ARCHIVED rows; when
	// false only ACTIVE requirements are returned.
	IncludeArchived bool
}

// Result is one page of matches.
type Result struct {
	Requirements []*requirement.Requirement
	// Offset and Limit are the ones applied (Limit after clamping).
	Offset, Limit int
	// HasMore reports whether the next page (offset+limit on) has at least
	// one result. The search finds it by collecting one match more than
	// the page (offset+limit+1), which it then leaves out: no second read.
	HasMore bool
	// Plan describes how the search was run, for logs and tests, e.g.
	// "property[PRIORITY] IN ('High') via index, key order, stopped early".
	Plan string
}

// Search runs one search. Errors: invalid (bad offset, invalid space key,
// closures too broad), internal.
func (s *Service) Search(ctx context.Context, req Request) (*Result, error) {
	req, err := paging(req)
	if err != nil {
		return nil, err
	}
	if req.Space == "" {
		if _, known := s.knownIsolate(req.Tenant); !known {
			return s.searchReadingSettings(ctx, req)
		}
	}
	scope, err := s.scope(ctx, req)
	if err != nil {
		return nil, err
	}
	return s.run(ctx, req, scope, -1)
}

// searchReadingSettings runs a search without a spaceKey parameter whose
// tenant's isolateSpaces setting is not known yet (not cached): it reads
// the setting and, at the same time, runs the search tenant-wide, which is
// the scope when the setting is off (the default), so the setting's read
// is not on the way of the search's own. When the setting is on, the
// tenant-wide run is cancelled, waited for and dropped (whatever it read or
// failed with), and the search runs in the path's space as Search does.
func (s *Service) searchReadingSettings(ctx context.Context, req Request) (*Result, error) {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		res *Result
		err error
	}
	tenantWide := make(chan answer, 1)
	go func() {
		res, err := s.run(runCtx, req, nil, -1)
		tenantWide <- answer{res, err}
	}()
	isolate, err := s.settings.IsolateSpaces(ctx, req.Tenant)
	if err == nil && !isolate {
		a := <-tenantWide
		return a.res, a.err
	}
	cancel()
	<-tenantWide // no read of it outlives the search
	if err != nil {
		return nil, fmt.Errorf("read search settings: %w", err)
	}
	scope, err := pathScope(req)
	if err != nil {
		return nil, err
	}
	return s.run(ctx, req, scope, -1)
}

// knownIsolate returns the tenant's isolateSpaces setting when the
// Settings know it without reading (a fresh SettingsCache entry).
func (s *Service) knownIsolate(tenant string) (isolate, ok bool) {
	if c, isCache := s.settings.(*SettingsCache); isCache {
		return c.Cache.Get(tenant)
	}
	return false, false
}

// prepare checks and completes the paging parameters and resolves the
// scope.
func (s *Service) prepare(ctx context.Context, req Request) (Request, []string, error) {
	req, err := paging(req)
	if err != nil {
		return req, nil, err
	}
	scope, err := s.scope(ctx, req)
	return req, scope, err
}

// paging checks and completes the paging parameters and the order.
func paging(req Request) (Request, error) {
	if req.Offset < 0 {
		return req, apperr.InvalidNamed("offset", "offset must be at least 0, got %d", req.Offset)
	}
	switch {
	case req.Limit < 0:
		return req, apperr.InvalidNamed("limit", "limit must be at least 1, got %d", req.Limit)
	case req.Limit == 0:
		req.Limit = DefaultLimit
	case req.Limit > MaxLimit:
		req.Limit = MaxLimit
	}
	if len(req.Order) == 0 {
		req.Order = query.DefaultOrder()
	}
	return req, nil
}

// scope applies the scope rule (spec §4.1): the spaceKey parameter when
// given; else, when the tenant isolates spaces, the space of the path;
// else every space (nil).
func (s *Service) scope(ctx context.Context, req Request) ([]string, error) {
	if req.Space != "" {
		if !requirement.ValidSpaceKey(req.Space) {
			return nil, apperr.InvalidNamed("spaceKey", "invalid spaceKey %s: letters, digits and '_' only", showValue(req.Space))
		}
		return []string{req.Space}, nil
	}
	isolate, err := s.settings.IsolateSpaces(ctx, req.Tenant)
	if err != nil {
		return nil, fmt.Errorf("read search settings: %w", err)
	}
	if !isolate {
		return nil, nil
	}
	return pathScope(req)
}

// pathScope is the scope of a tenant that isolates spaces: the path's
// space.
func pathScope(req Request) ([]string, error) {
	if !requirement.ValidSpaceKey(req.PathSpace) {
		return nil, apperr.InvalidNamed("spaceKey", "invalid spaceKey %s in the path: letters, digits and '_' only", showValue(req.PathSpace))
	}
	return []string{req.PathSpace}, nil
}

// showValue quotes a client's value for an error message, cut short.
func showValue(s string) string {
	const max = 64
	if len(s) > max {
		cut := max
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return fmt.Sprintf("%q", s)
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// run plans and executes a search in scope; force >= 0 picks the plan of
// that index among the candidates (tests compare every plan), -1 the best.
func (s *Service) run(ctx context.Context, req Request, scope []string, force int) (*Result, error) {
	store := s.store
	if s.MaxRead > 0 {
		store = &readBudget{Store: s.store, max: int64(s.MaxRead)}
	}
	p := newPlanner(store, req, scope)
	pl, err := p.choose(ctx, force)
	if err != nil {
		return nil, err
	}
	res := &Result{Offset: req.Offset, Limit: req.Limit, Requirements: []*requirement.Requirement{}}
	if pl.empty {
		res.Plan = pl.describe()
		return res, nil
	}
	keep, vis, err := s.filter(ctx, req, p)
	if err != nil {
		return nil, err
	}
	// One match past the page says whether a next page has results.
	rows, early, err := collect(ctx, pl, keep, req.Order, req.Offset, req.Limit+1)
	if err == nil {
		err = vis.err
	}
	if err != nil {
		return nil, err
	}
	if len(rows) > req.Limit {
		rows, res.HasMore = rows[:req.Limit], true
	}
	res.Requirements = rows
	res.Plan = pl.describe()
	if early {
		res.Plan += ", stopped early"
	}
	return res, nil
}

// filter returns the test every candidate of a plan passes to be a
// match: admitted by the planner, visible (its baseline committed) and
// matching the query, whose page names and closures it reads first. The
// visibility's error is set when reading committed baselines failed.
func (s *Service) filter(ctx context.Context, req Request, p *planner) (func(*requirement.Requirement) bool, *visibility, error) {
	env, err := querySets(ctx, p.store, req.Tenant, req.Query, p.pages)
	if err != nil {
		return nil, nil, err
	}
	vis := &visibility{store: p.store, tenant: req.Tenant}
	keep := func(r *requirement.Requirement) bool {
		return p.admits(r) && vis.visible(ctx, r) && query.Match(req.Query, r, env)
	}
	return keep, vis, nil
}

// querySets reads what the predicates of e need besides the row: the
// parent and child closures and the pages that page predicates name.
func querySets(ctx context.Context, store Store, tenant string, e query.Expr, pages *pageResolver) (query.Sets, error) {
	cs, err := closures(ctx, store, tenant, e)
	if err != nil {
		return query.Sets{}, err
	}
	names, err := pages.names(ctx, query.PageLookups(e))
	if err != nil {
		return query.Sets{}, err
	}
	return query.Sets{Closures: cs, Pages: names}, nil
}

// Matcher returns the test of whether a row matches e, as a search
// evaluates it: the parent and child closures and the pages that e's
// page predicates name are read once, here (the current rows and pages of
// the tenant). Callers that read rows themselves (the diff) use it.
// Errors: invalid (closures too broad), internal.
func (s *Service) Matcher(ctx context.Context, tenant string, e query.Expr) (func(*requirement.Requirement) bool, error) {
	env, err := querySets(ctx, s.store, tenant, e, newPageResolver(s.store, tenant))
	if err != nil {
		return nil, err
	}
	return func(r *requirement.Requirement) bool { return query.Match(e, r, env) }, nil
}

// Each runs req over every match, calling emit with each in the answer's
// order (req.Offset and req.Limit are ignored): the export of a search
// (format=csv) and the coverage matrix. A plan that reads one key-order
// range reads it in parallel key-range segments (segment.go), holding at
// most InFlight segments of a few pages each, any other plan one read page
// at a time; and, either way, one key's rows. Only orders that
// start with REQKEY stream (the default does); any other order would need
// every match at once, and is refused. emit's error stops the walk (and
// every segment's reads, before Each returns) and is returned. Errors:
// invalid (as Search, and the order), internal, emit's.
func (s *Service) Each(ctx context.Context, req Request, emit func(*requirement.Requirement) error) error {
	req.Offset, req.Limit = 0, 0
	req, scope, err := s.prepare(ctx, req)
	if err != nil {
		return err
	}
	p := newPlanner(s.store, req, scope)
	if !p.early {
		return apperr.InvalidNamed("order", "an export lists the matches in key order: order must start with REQKEY (sort the download instead)")
	}
	pl, err := p.choose(ctx, -1)
	if err != nil || pl.empty {
		return err
	}
	keep, vis, err := s.filter(ctx, req, p)
	if err != nil {
		return err
	}
	seg := s.segmenting()
	defer seg.close()
	src, err := pl.source(ctx, seg)
	if err != nil {
		return err
	}
	if err := eachInOrder(ctx, src, keep, req.Order, p.sorted, emit); err != nil {
		return err
	}
	return vis.err
}

// joinQuoted renders values for plan descriptions.
func joinQuoted(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = fmt.Sprintf("'%s'", strings.ReplaceAll(v, "'", `\'`))
	}
	return strings.Join(q, ", ")
}

// visibility applies the baselines' visibility rule to archived copies: a
// copy is visible only when its baseline is committed. The committed
// numbers of a space are read once per request, when the first copy of
// that space is met.
type visibility struct {
	store  Store
	tenant string
	spaces map[string]map[int]bool
	err    error
}

func (v *visibility) visible(ctx context.Context, r *requirement.Requirement) bool {
	if r.Baseline == 0 {
		return true
	}
	if v.err != nil {
		return false
	}
	nums, ok := v.spaces[r.SpaceKey]
	if !ok {
		var err error
		if nums, err = v.store.Baselines(ctx, v.tenant, r.SpaceKey); err != nil {
			v.err = fmt.Errorf("read the baselines of %s: %w", r.SpaceKey, err)
			return false
		}
		if v.spaces == nil {
			v.spaces = map[string]map[int]bool{}
		}
		v.spaces[r.SpaceKey] = nums
	}
	return nums[r.Baseline]
}
