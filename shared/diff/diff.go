// Package diff compares two states of a space, field by field (GET
// /rest/reqs/1/diff/{spaceKey}, docs/change-analysis.md): two baselines, or a
// baseline and the current state. Both sides are read in key order (a
// baseline's copies from its own partition, the current rows from the
// space's partition) and merge-joined, so a diff of N requirements reads
// each row once and never sorts. Sides longer than a page are cut into
// key ranges read and merged in parallel, their changes emitted in key
// order (segment.go), so memory stays a few pages and a bounded number
// of changes per segment in flight whatever N is. docs/change-analysis.md
// describes the rules; the package has no AWS types.
package diff

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
)

// Current names the current state of a space as a side of a diff; a
// positive side is a baseline number.
const Current = 0

// MaxBaseline is the largest baseline number (the key design's).
const MaxBaseline = 99999999

// Kind is what happened to a requirement between the two sides.
type Kind string

// The kinds of change a diff lists; unchanged requirements are only
// counted.
const (
	Added    Kind = "ADDED"
	Removed  Kind = "REMOVED"
	Modified Kind = "MODIFIED"
)

// Change is one requirement that differs between the sides. An ADDED or
// REMOVED requirement lists every field it has (from or to an absent
// value).
type Change struct {
	SpaceKey string
	Key      string
	Kind     Kind
	Fields   []Field
}

// Summary counts the requirements of the whole comparison.
type Summary struct {
	Added, Removed, Modified, Unchanged int
}

// Store is what a diff reads (wikitable.SearchStore implements it).
type Store interface {
	// Rows returns one page of the rows of r in key order (search.Store).
	// The diff reads Range{Space} (current rows, stubs included) and
	// Range{Space, Baseline} (a baseline's copies). Errors: internal only.
	Rows(ctx context.Context, tenant string, r search.Range, after search.Token, limit int) ([]*requirement.Requirement, search.Token, error)
	// Baselines returns the committed baseline numbers of a space.
	// Errors: internal only.
	Baselines(ctx context.Context, tenant, space string) (map[int]bool, error)
}

// Matcher builds the test of a query (search.Service implements it).
type Matcher interface {
	// Matcher returns whether a row matches e, the closures and pages e
	// needs read once. Errors: invalid (closures too broad), internal.
	Matcher(ctx context.Context, tenant string, e query.Expr) (func(*requirement.Requirement) bool, error)
}

// Service runs diffs.
type Service struct {
	store   Store
	matcher Matcher
	// PageSize is the Limit of each Query that reads a side.
	PageSize int
	// Segments is how many key ranges a side longer than one page is cut
	// into (segment.go); 1 reads each side as one stream.
	Segments int
	// InFlight is how many segments are read and merged at once.
	InFlight int
	// Buffer is how many changes a segment that is not yet being emitted
	// holds before it waits for its turn.
	Buffer int
}

// Deps are what a Service is built from.
type Deps struct {
	Store   Store
	Matcher Matcher
}

// New returns a Service reading from d.Store.
func New(d Deps) *Service {
	return &Service{store: d.Store, matcher: d.Matcher, PageSize: 500, Segments: 16, InFlight: 8, Buffer: 512}
}

// Request is one diff, its parameters parsed.
type Request struct {
	Tenant string
	Space  string
	// From and To are the sides: Current or a baseline number.
	From, To int
	// Query is the parsed q (nil: every requirement of the space).
	Query query.Expr
	// Offset and Limit page the changes; Limit 0 means search.DefaultLimit,
	// above search.MaxLimit it is clamped.
	Offset, Limit int
}

// Result is the summary of a whole comparison and one page of its
// changes.
type Result struct {
	From, To      int
	Summary       Summary
	Changes       []Change
	Offset, Limit int
	// HasMore reports whether changes follow this page.
	HasMore bool
	// Read counts the rows read on each side (stubs included), for logs
	// and benchmarks.
	ReadFrom, ReadTo int
	// Segments is how many key ranges the sides were read in.
	Segments int
}

// ParseSide reads a side parameter: "current" (any case) or a baseline
// number from 1 to MaxBaseline. Errors: invalid, naming the parameter.
func ParseSide(param, v string) (int, error) {
	if strings.EqualFold(v, "current") {
		return Current, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxBaseline || strconv.Itoa(n) != v {
		if v == "" {
			return 0, apperr.InvalidNamed(param, "%s is required: a baseline number or current", param)
		}
		return 0, apperr.InvalidNamed(param, "%s must be a baseline number from 1 to %d or current, got %q", param, MaxBaseline, clip(v))
	}
	return n, nil
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32] + "…"
	}
	return s
}

// SideName is how a side is written: its number, or "current".
func SideName(side int) string {
	if side == Current {
		return "current"
	}
	return strconv.Itoa(side)
}

// Diff compares the sides of req and returns the summary and the page
// [Offset, Offset+Limit) of the changes in key order. Errors: invalid
// (space key, from = to, offset), not found (a baseline that is not
// committed in the space), internal.
func (s *Service) Diff(ctx context.Context, req Request) (*Result, error) {
	req, err := s.check(ctx, req)
	if err != nil {
		return nil, err
	}
	res := &Result{From: req.From, To: req.To, Offset: req.Offset, Limit: req.Limit, Changes: []Change{}}
	n := 0
	err = s.walk(ctx, req, res, func(c Change) error {
		if n >= req.Offset && len(res.Changes) < req.Limit {
			res.Changes = append(res.Changes, c)
		}
		n++
		return nil
	})
	if err != nil {
		return nil, err
	}
	res.HasMore = n > req.Offset+req.Limit
	return res, nil
}

// Each compares the sides of req and calls emit with every change in key
// order (Offset and Limit are ignored): the export of a diff. It returns
// the summary. emit's error stops the walk and is returned. Errors: as
// Diff, and emit's.
func (s *Service) Each(ctx context.Context, req Request, emit func(Change) error) (*Result, error) {
	req.Offset, req.Limit = 0, 0
	req, err := s.check(ctx, req)
	if err != nil {
		return nil, err
	}
	res := &Result{From: req.From, To: req.To}
	if err := s.walk(ctx, req, res, emit); err != nil {
		return nil, err
	}
	return res, nil
}

// check validates req, completes its paging and makes sure its baselines
// are committed.
func (s *Service) check(ctx context.Context, req Request) (Request, error) {
	if !requirement.ValidSpaceKey(req.Space) {
		return req, apperr.InvalidNamed("spaceKey", "invalid spaceKey %q: letters, digits and '_' only", clip(req.Space))
	}
	if req.From == req.To {
		return req, apperr.InvalidNamed("to", "from and to are both %s: a diff compares two different states", SideName(req.From))
	}
	if req.Offset < 0 {
		return req, apperr.InvalidNamed("offset", "offset must be at least 0, got %d", req.Offset)
	}
	switch {
	case req.Limit < 0:
		return req, apperr.InvalidNamed("limit", "limit must be at least 1, got %d", req.Limit)
	case req.Limit == 0:
		req.Limit = search.DefaultLimit
	case req.Limit > search.MaxLimit:
		req.Limit = search.MaxLimit
	}
	nums, err := s.store.Baselines(ctx, req.Tenant, req.Space)
	if err != nil {
		return req, fmt.Errorf("read the baselines of %s: %w", req.Space, err)
	}
	for _, side := range []int{req.From, req.To} {
		if side != Current && !nums[side] {
			return req, apperr.NotFoundf("baseline %d not found in space %s", side, req.Space)
		}
	}
	return req, nil
}

// compareRows orders two heads by folded key; a nil head (its side ended)
// comes last.
func compareRows(a, b *requirement.Requirement) int {
	switch {
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	return strings.Compare(requirement.FoldKey(a.Key), requirement.FoldKey(b.Key))
}

// pair classifies one requirement from its rows on the two sides (nil:
// none) and counts it in sum or emits it.
//
// A side holds a requirement when it has a real row of it (not a stub).
// A current row that is DELETED or MOVED is compared with the other
// side's row (its status changed), but alone it is in neither state and
// is left out: it had stopped being a requirement before the baseline.
func (s *Service) pair(req Request, sum *Summary, x, y *requirement.Requirement, match func(*requirement.Requirement) bool, emit func(Change) error) error {
	if x != nil && x.Status == "" {
		x = nil
	}
	if y != nil && y.Status == "" {
		y = nil
	}
	live := func(r *requirement.Requirement) bool {
		return r != nil && (r.Status == requirement.Active || r.Status == requirement.Archived)
	}
	if !live(x) && !live(y) {
		return nil
	}
	if !selected(x, match) && !selected(y, match) {
		return nil
	}
	var kind Kind
	switch {
	case x == nil:
		kind = Added
		sum.Added++
	case y == nil:
		kind = Removed
		sum.Removed++
	}
	fields := Compare(x, y)
	if kind == "" {
		if len(fields) == 0 {
			sum.Unchanged++
			return nil
		}
		kind = Modified
		sum.Modified++
	}
	r := y
	if r == nil {
		r = x
	}
	return emit(Change{SpaceKey: req.Space, Key: r.Key, Kind: kind, Fields: fields})
}

// selected reports whether r is on its side and matches the query there,
// with the status it shows in a diff (statusOf).
func selected(r *requirement.Requirement, match func(*requirement.Requirement) bool) bool {
	if r == nil {
		return false
	}
	if r.Status == requirement.Archived {
		c := *r
		c.Status = statusOf(r)
		r = &c
	}
	return match(r)
}
