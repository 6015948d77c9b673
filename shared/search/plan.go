package search

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// planner chooses how to read the candidates of one search. Everything it
// derives from the query is a necessary condition of a match (query.Drivers
// and the top-level AND chain), so any plan reads a superset of the matches
// in scope, and Match decides.
type planner struct {
	store Store
	req   Request
	// pages reads what page predicates name, for Match and the page plans.
	pages *pageResolver
	// spaces is the scope intersected with the query's space predicates,
	// sorted; nil means every space of the tenant.
	spaces []string
	// current and archived say which rows can match: current rows
	// (ACTIVE, DELETED, MOVED) and archived copies (ARCHIVED).
	current, archived bool
	// activeOnly: only current ACTIVE rows can match, the rows the search
	// indexes, page key lists and reverse dependencies cover.
	activeOnly bool
	// empty: nothing can match (e.g. baseline = 3 without includeArchived).
	empty   bool
	drivers []query.Access
	// early: the order is the key order, so reading in key order may stop
	// at offset+limit matches; desc when REQKEY is descending.
	early, desc bool
	// sorted: in key order, candidates arrive in the answer's order (see
	// inAnswerOrder), so each can be counted as soon as it is read, with
	// no look-ahead to complete its key's group.
	sorted bool
}

// Statuses, folded as query.Fold does.
var (
	statusActive   = query.Fold(string(requirement.Active))
	statusArchived = query.Fold(string(requirement.Archived))
	allStatuses    = []string{statusActive, query.Fold(string(requirement.Deleted)), query.Fold(string(requirement.Moved)), statusArchived}
)

func newPlanner(store Store, req Request, scope []string) *planner {
	p := &planner{store: store, req: req, drivers: query.Drivers(req.Query), pages: newPageResolver(store, req.Tenant)}
	p.classes()
	p.narrowSpaces(scope)
	// query.Order compares REQKEY by the folded key first, which is the
	// order of every key-order index: reading in that order may stop early.
	if len(req.Order) > 0 && req.Order[0].Column == query.ColumnKey {
		p.early, p.desc = true, req.Order[0].Desc
	}
	p.sorted = p.early && p.inAnswerOrder()
	return p
}

// inAnswerOrder reports whether the index order (compareIDs: folded key,
// space key, current version then newest baseline; reversed under REQKEY
// DESC) is the answer's order for every candidate the plan can read, so
// the rows of one folded key need not be gathered and sorted:
//   - one space and current rows only: one candidate per folded key;
//   - current rows only and no column after REQKEY but BASELINE (all 0):
//     REQKEY compares the folded key then the space key in its direction;
//   - archived copies too, under REQKEY ASC, BASELINE DESC (the default):
//     the index's own order, (space, folded key, baseline) being a row's
//     identity.
//
// Anything else (other columns after REQKEY, or archived copies whose
// baselines the index reverses under DESC) sorts each key's group.
func (p *planner) inAnswerOrder() bool {
	rest := p.req.Order[1:]
	if !p.archived {
		if len(p.spaces) == 1 {
			return true
		}
		return !slices.ContainsFunc(rest, func(by query.OrderBy) bool { return by.Column != query.ColumnBaseline })
	}
	return !p.desc && len(rest) == 1 && rest[0] == query.OrderBy{Column: query.ColumnBaseline, Desc: true}
}

// classes works out which statuses can match: the request's
// (includeArchived), the query's status and baseline predicates.
func (p *planner) classes() {
	allowed := slices.Clone(allStatuses)
	if !p.req.IncludeArchived {
		allowed = []string{statusActive}
	}
	keep := func(ok func(string) bool) {
		allowed = slices.DeleteFunc(allowed, func(s string) bool { return !ok(s) })
	}
	for _, d := range p.drivers {
		switch d.Kind {
		case query.AccessStatus:
			keep(func(s string) bool { return slices.Contains(d.Values, s) })
		case query.AccessBaseline:
			keep(func(s string) bool { return s == statusArchived })
		}
	}
	for _, e := range andChain(p.req.Query) {
		if n, ok := e.(*query.IsNull); ok && n.Field.Kind == query.FieldBaseline {
			keep(func(s string) bool { return (s == statusArchived) == n.Not })
		}
	}
	p.archived = slices.Contains(allowed, statusArchived)
	p.current = len(allowed) > 0 && (len(allowed) > 1 || !p.archived)
	p.activeOnly = len(allowed) == 1 && allowed[0] == statusActive
	p.empty = len(allowed) == 0
}

// narrowSpaces intersects the scope with the query's space predicates.
func (p *planner) narrowSpaces(scope []string) {
	spaces := scope
	for _, d := range p.drivers {
		if d.Kind != query.AccessSpace {
			continue
		}
		vals := slices.DeleteFunc(slices.Clone(d.Values), func(s string) bool { return !requirement.ValidSpaceKey(s) })
		if spaces == nil {
			spaces = vals
		} else {
			spaces = slices.DeleteFunc(slices.Clone(spaces), func(s string) bool { return !slices.Contains(vals, s) })
		}
		if len(spaces) == 0 {
			p.empty = true
		}
	}
	if spaces != nil {
		spaces = slices.Clone(spaces)
		slices.Sort(spaces)
		spaces = slices.Compact(spaces)
	}
	p.spaces = spaces
	if spaces != nil && len(spaces) == 0 {
		p.empty = true
	}
}

// andChain lists the members of e's top-level AND chain (e itself when it
// is not an AND).
func andChain(e query.Expr) []query.Expr {
	if n, ok := e.(*query.And); ok {
		return append(andChain(n.Left), andChain(n.Right)...)
	}
	if e == nil {
		return nil
	}
	return []query.Expr{e}
}

// inScope reports whether a row of space may be returned.
func (p *planner) inScope(space string) bool {
	return p.spaces == nil || slices.Contains(p.spaces, space)
}

// admits is the filter every row passes besides the query: a real row (not
// a stub), in scope, and ACTIVE unless includeArchived. The brute-force
// evaluator of the tests applies exactly this.
func (p *planner) admits(r *requirement.Requirement) bool {
	return r.Status != "" && p.inScope(r.SpaceKey) && (p.req.IncludeArchived || r.Status == requirement.Active)
}

// wanted reports whether a candidate id can be a match, before its row is
// read: in scope and of a class that can match.
func (p *planner) wanted(id requirement.ID) bool {
	if !p.inScope(id.SpaceKey) {
		return false
	}
	if id.Baseline == 0 {
		return p.current
	}
	return p.archived
}

// Plan ranks: lower is more selective (query.Drivers' rule of thumb).
const (
	rankKey = iota + 1
	rankIssue
	rankTo
	rankFrom
	rankPage
	rankPageCited
	rankPrefix
	rankProperty
	rankSuspect
	rankWord
	rankBaseline
	rankOpenRange
	rankSpaces
	rankScan
)

// option is one usable way to read the candidates.
type option struct {
	rank  int
	label string
	// build returns the sources of the candidates, each in index order;
	// it may read (page key lists, the rows a dependency names).
	build func(ctx context.Context) ([]source, error)
}

// plan is the chosen option, ready to run.
type plan struct {
	p     *planner
	opt   option
	empty bool
}

func (pl *plan) describe() string {
	if pl.empty {
		return "empty: nothing can match, nothing read"
	}
	s := pl.opt.label
	if pl.p.early {
		s += ", key order"
	} else {
		s += ", sorted in memory"
	}
	return s
}

// options lists the usable plans, the most selective first; the scan of
// the scope is always last.
func (p *planner) options() []option {
	var opts []option
	for _, d := range p.drivers {
		if o, ok := p.option(d, p.spaces); ok {
			opts = append(opts, o)
		}
	}
	opts = append(opts, p.scan(p.spaces))
	slices.SortStableFunc(opts, func(a, b option) int { return a.rank - b.rank })
	return opts
}

// choose picks the best plan, or the plan of index force.
func (p *planner) choose(ctx context.Context, force int) (*plan, error) {
	if p.empty {
		return &plan{p: p, empty: true}, nil
	}
	opts := p.options()
	i := 0
	if force >= 0 {
		if force >= len(opts) {
			return nil, fmt.Errorf("plan %d of %d", force, len(opts))
		}
		i = force
	}
	return &plan{p: p, opt: opts[i]}, nil
}

// source builds the pipeline of the plan: its sources merged in index
// order without duplicates, candidates out of scope dropped before their
// rows are read, rows read in batches. With seg (Each), a plan that reads
// one key-order range that can be cut (segmentable) reads it in parallel
// segments (segment.go); seg.close stops them.
func (pl *plan) source(ctx context.Context, seg *segmenting) (source, error) {
	srcs, err := pl.opt.build(ctx)
	if err != nil {
		return nil, err
	}
	if seg != nil && len(srcs) == 1 {
		if rs, ok := srcs[0].(*rangeSource); ok && segmentable(rs.r) {
			rs.seg = seg
		}
	}
	var s source = newMerge(srcs, pl.p.desc)
	s = &filterSource{src: s, keep: pl.p.wanted}
	return &fetchSource{src: s, store: pl.p.store, tenant: pl.p.req.Tenant}, nil
}

// option returns the plan driven by access d within spaces, if usable.
func (p *planner) option(d query.Access, spaces []string) (option, bool) {
	switch d.Kind {
	case query.AccessKey:
		return p.keyOption(d.Values, spaces), true
	case query.AccessKeyPrefix, query.AccessKeyRange:
		return p.keyRangeOption(d, spaces), true
	case query.AccessProperty, query.AccessExternal, query.AccessIssue, query.AccessSuspect:
		if !p.activeOnly {
			return option{}, false // the indexes hold current ACTIVE rows only
		}
		return p.indexOption(d), true
	case query.AccessWord:
		if !p.activeOnly {
			return option{}, false // the word index holds current ACTIVE rows only
		}
		return p.wordOption(d.Values[0], spaces), true
	case query.AccessPage, query.AccessPageCited:
		if !p.activeOnly {
			return option{}, false // a page's key list names its ACTIVE rows only
		}
		return p.pageOption(d.Values, d.Kind == query.AccessPageCited), true
	case query.AccessTo:
		if !p.activeOnly {
			return option{}, false // reverse dependencies come from ACTIVE rows only
		}
		return p.linkOption(d, spaces), true
	case query.AccessFrom:
		if p.archived {
			return option{}, false // archived copies keep links of their own
		}
		return p.linkOption(d, spaces), true
	case query.AccessBaseline:
		return p.baselineOption(d.Values, spaces), true
	case query.AccessSpace:
		// Already intersected into spaces; within a union branch it
		// narrows the branch.
		narrowed := d.Values
		if spaces != nil {
			narrowed = slices.DeleteFunc(slices.Clone(spaces), func(s string) bool { return !slices.Contains(d.Values, s) })
		}
		narrowed = slices.DeleteFunc(slices.Clone(narrowed), func(s string) bool { return !requirement.ValidSpaceKey(s) })
		slices.Sort(narrowed)
		return p.scan(slices.Compact(narrowed)), true
	case query.AccessUnion:
		return p.unionOption(d, spaces)
	}
	return option{}, false
}

// unionOption reads, for each OR branch, its best usable access, and
// merges them; it is usable only when every branch has one and all are
// more selective than a scan.
func (p *planner) unionOption(d query.Access, spaces []string) (option, bool) {
	var branches []option
	rank := 0
	for _, b := range d.Branches {
		var best option
		found := false
		for _, a := range b {
			if o, ok := p.option(a, spaces); ok && o.rank < rankSpaces && (!found || o.rank < best.rank) {
				best, found = o, true
			}
		}
		if !found {
			return option{}, false
		}
		branches = append(branches, best)
		rank = max(rank, best.rank)
	}
	labels := make([]string, len(branches))
	for i, b := range branches {
		labels[i] = b.label
	}
	return option{rank: rank, label: "union(" + strings.Join(labels, "; ") + ")",
		build: func(ctx context.Context) ([]source, error) {
			var all []source
			for _, b := range branches {
				srcs, err := b.build(ctx)
				if err != nil {
					return nil, err
				}
				all = append(all, srcs...)
			}
			return all, nil
		}}, true
}

// scan reads the scope in key order: each space's partition (or the
// tenant's key-order index) and, when archived copies can match, the
// tenant's archived key-order index.
func (p *planner) scan(spaces []string) option {
	label, rank := "scan of the tenant", rankScan
	if spaces != nil {
		label, rank = "scan of space "+strings.Join(spaces, ", "), rankSpaces
	}
	if p.archived {
		label += " with archived copies"
	}
	return option{rank: rank, label: label, build: func(context.Context) ([]source, error) {
		return p.ranges(spaces, Range{}), nil
	}}
}

// ranges returns the key-order reads of the rows whose folded key is in
// keys (its Prefix, Exact, From and Before; all of them when zero), within
// spaces: current rows per space (or tenant-wide), archived copies through
// the tenant's archived index (per space when exact, filtered to the space
// when there is one).
func (p *planner) ranges(spaces []string, keys Range) []source {
	exact := keys.Exact
	var out []source
	add := func(r Range) {
		r.Prefix, r.Exact, r.From, r.Before, r.Desc = keys.Prefix, keys.Exact, keys.From, keys.Before, p.desc
		out = append(out, &rangeSource{store: p.store, tenant: p.req.Tenant, r: r})
	}
	if p.current {
		if spaces == nil {
			add(Range{})
		}
		for _, s := range spaces {
			add(Range{Space: s})
		}
	}
	if p.archived {
		switch {
		case spaces == nil:
			add(Range{Archived: true})
		case len(spaces) == 1 || exact:
			for _, s := range spaces {
				add(Range{Archived: true, Space: s})
			}
		default:
			add(Range{Archived: true})
		}
	}
	return out
}

// validKeyPrefix reports whether some requirement key can start with s
// (keys are ASCII letters, digits, '_', '-', '.'; at most 255 bytes).
func validKeyPrefix(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c >= 'a' && c <= 'z') {
			return false
		}
	}
	return true
}

// keyOption reads exact keys: GetMany of (space, key) for the current rows
// when the spaces are known, one Query of the tenant's key-order index per
// key otherwise, and one Query of the archived index per key (and space)
// for archived copies; the Queries run in parallel.
func (p *planner) keyOption(values []string, spaces []string) option {
	keys := slices.DeleteFunc(slices.Clone(values), func(k string) bool { return !requirement.ValidKey(k) })
	how := "GetItem/GetMany"
	if spaces == nil {
		how = "Query of the key-order index"
	}
	return option{rank: rankKey, label: "key IN (" + joinQuoted(keys) + ") by " + how,
		build: func(ctx context.Context) ([]source, error) {
			var ids []entry
			var ranges []Range
			for _, k := range keys {
				if p.current && spaces == nil {
					ranges = append(ranges, Range{Prefix: k, Exact: true})
				}
				for _, s := range spaces {
					if p.current {
						ids = append(ids, entry{id: requirement.ID{SpaceKey: s, Key: k}})
					}
					if p.archived {
						ranges = append(ranges, Range{Archived: true, Space: s, Prefix: k, Exact: true})
					}
				}
				if p.archived && spaces == nil {
					ranges = append(ranges, Range{Archived: true, Prefix: k, Exact: true})
				}
			}
			rows, err := readRanges(ctx, p.store, p.req.Tenant, ranges)
			if err != nil {
				return nil, err
			}
			for _, r := range rows {
				ids = append(ids, entry{id: r.ID(), row: r})
			}
			return []source{newList(ids, p.desc)}, nil
		}}
}

// keyRangeOption reads a key range (key comparisons and prefixes,
// intersected by query.Drivers) in key order: one Query per space, or of
// the tenant's key-order index, bounded by the range (BETWEEN, never
// begins_with). An empty range, or a prefix no key can start with, reads
// nothing. A two-sided range is as selective as a prefix; a one-sided one
// may cover most of the scope, so an index of any kind goes first.
func (p *planner) keyRangeOption(d query.Access, spaces []string) option {
	from, before, _ := d.KeyRange()
	rank, label := rankPrefix, "key range ["+from+", "+before+")"
	switch {
	case d.Kind == query.AccessKeyPrefix:
		label = "key prefix '" + d.Values[0] + "'"
	case from == "" || before == "":
		rank = rankOpenRange
	}
	return option{rank: rank, label: label,
		build: func(context.Context) ([]source, error) {
			if d.Kind == query.AccessKeyPrefix && !validKeyPrefix(d.Values[0]) || d.Empty() {
				return nil, nil
			}
			return p.ranges(spaces, Range{From: from, Before: before}), nil
		}}
}

// indexOption reads property (page or external) or issue index partitions
// in key order.
func (p *planner) indexOption(d query.Access) option {
	kind, rank, label, name := IndexProperty, rankProperty, "property["+d.Name+"]", d.Name
	switch d.Kind {
	case query.AccessExternal:
		kind, label = IndexExternal, "external["+d.Name+"]"
	case query.AccessSuspect:
		kind, rank, label, name = IndexSuspect, rankSuspect, "suspect", ""
		return option{rank: rank, label: label + " via index",
			build: func(context.Context) ([]source, error) {
				return []source{&indexSource{store: p.store, tenant: p.req.Tenant, desc: p.desc,
					ix: IndexRef{Kind: kind, Name: name, Space: p.oneSpace()}}}, nil
			}}
	case query.AccessIssue:
		// The issue index has no relationship: Match checks it.
		kind, rank, label, name = IndexIssue, rankIssue, "issue", ""
		if d.Name != "" {
			label += "@" + d.Name
		}
	}
	return option{rank: rank, label: label + " IN (" + joinQuoted(d.Values) + ") via index",
		build: func(context.Context) ([]source, error) {
			// One space reads that space's items only; several read the
			// tenant's (other spaces' items dropped unread, by wanted).
			space := p.oneSpace()
			out := make([]source, 0, len(d.Values))
			for _, v := range d.Values {
				out = append(out, &indexSource{store: p.store, tenant: p.req.Tenant, desc: p.desc,
					ix: IndexRef{Kind: kind, Name: name, Value: v, Space: space}})
			}
			return out, nil
		}}
}

// wordOption reads the word index partition of word (of the scope's one
// space, or of the tenant), in key order: the requirements whose key or
// text holds the word, which Match then checks. The index holds the rows of
// the spaces registered since it exists; when one of the spaces in scope is
// older (Store.WordIndexed, one Query of the space registry) the scope is
// scanned instead, as before the index. The registry is read while the
// index's first page is (wordSource).
func (p *planner) wordOption(word string, spaces []string) option {
	return option{rank: rankWord, label: "word '" + word + "' via index",
		build: func(ctx context.Context) ([]source, error) {
			space := ""
			if len(spaces) == 1 {
				space = spaces[0]
			}
			w := &wordSource{
				indexed: make(chan wordIndexed, 1),
				index: &indexSource{store: p.store, tenant: p.req.Tenant, desc: p.desc,
					ix: IndexRef{Kind: IndexWord, Value: word, Space: space}},
				scan: func() source { return newMerge(p.ranges(spaces, Range{}), p.desc) },
			}
			go func() {
				ok, err := p.store.WordIndexed(ctx, p.req.Tenant, spaces)
				w.indexed <- wordIndexed{ok, err}
			}()
			return []source{w}, nil
		}}
}

// wordSource is the word index partition of a scope, or the scan of the
// scope when the index does not cover it (Store.WordIndexed, read from
// when the source is built). Asked for a page of want candidates, it reads
// the index's first page while the registry's answer comes, so the two
// reads overlap; when the answer is no, that page is dropped (at most want
// index items read for nothing, in a scope holding a space older than the
// index, which is then scanned whole or to the page's end) and the scope
// is scanned. Asked with no size (want 0), it waits for the answer before
// reading the index.
type wordSource struct {
	indexed chan wordIndexed
	index   *indexSource
	scan    func() source
	src     source // the source chosen, once the answer came
}

// wordIndexed is the answer of Store.WordIndexed.
type wordIndexed struct {
	ok  bool
	err error
}

// choose reads the registry's answer (and, when want > 0, the index's
// first page at the same time) and picks the source.
func (w *wordSource) choose(ctx context.Context, want int) error {
	if w.src != nil {
		return nil
	}
	var indexErr error
	if want > 0 {
		_, indexErr = w.index.fill(ctx, want)
	}
	var a wordIndexed
	select {
	case a = <-w.indexed:
	case <-ctx.Done():
		return ctx.Err()
	}
	switch {
	case a.err != nil:
		return fmt.Errorf("read space registry: %w", a.err)
	case !a.ok:
		w.src = w.scan()
	case indexErr != nil:
		return indexErr
	default:
		w.src = w.index
	}
	return nil
}

func (w *wordSource) next(ctx context.Context, want int) (entry, bool, error) {
	if err := w.choose(ctx, want); err != nil {
		return entry{}, false, err
	}
	return w.src.next(ctx, want)
}

func (w *wordSource) peek(ctx context.Context, want int) (requirement.ID, bool, error) {
	if err := w.choose(ctx, want); err != nil {
		return requirement.ID{}, false, err
	}
	return w.src.peek(ctx, want)
}

// oneSpace is the scope's space when it has exactly one, else "": one space
// reads that space's index items only; several read the tenant's (other
// spaces' items dropped unread, by wanted).
func (p *planner) oneSpace() string {
	if len(p.spaces) == 1 {
		return p.spaces[0]
	}
	return ""
}

// pageOption reads the pages the values name (an id: one GetItem; a title:
// one Query of the title index, then one GetItem per page) and their key
// lists; with cited (`page ~`) also the rows those lists name (one
// BatchGetItem per 100) and the requirements they depend on.
func (p *planner) pageOption(values []string, cited bool) option {
	rank, label := rankPage, "page IN ("+joinQuoted(values)+") by the named pages' key lists"
	if cited {
		rank, label = rankPageCited, "page ~ ("+joinQuoted(values)+") by the named pages' key lists and links"
	}
	return option{rank: rank, label: label,
		build: func(ctx context.Context) ([]source, error) {
			ids, err := p.pages.candidates(ctx, values, cited)
			if err != nil {
				return nil, err
			}
			return []source{newList(ids, p.desc)}, nil
		}}
}

// linkOption reads the rows a to/from predicate names and follows their
// reverse dependencies (to) or dependencies (from).
func (p *planner) linkOption(d query.Access, spaces []string) option {
	rank, field := rankTo, "to"
	if d.Kind == query.AccessFrom {
		rank, field = rankFrom, "from"
	}
	if d.Name != "" {
		field += "@" + d.Name
	}
	return option{rank: rank, label: field + " IN (" + joinQuoted(d.Values) + ") by the named requirements' links",
		build: func(ctx context.Context) ([]source, error) {
			rows, err := rowsAt(ctx, p.store, p.req.Tenant, d.Refs)
			if err != nil {
				return nil, err
			}
			var ids []entry
			for _, r := range rows {
				links := r.ReverseDependencies
				if d.Kind == query.AccessFrom {
					links = r.Dependencies
				}
				for _, l := range links {
					if d.Name != "" && requirement.NormalizeRelationship(l.Relationship) != d.Name {
						continue
					}
					space := l.SpaceKey
					if space == "" {
						space = r.SpaceKey
					}
					ids = append(ids, entry{id: requirement.NewID(space, l.Key, 0)})
				}
			}
			return []source{newList(ids, p.desc)}, nil
		}}
}

// rowsAt returns the current rows (stubs included) that refs name: a GetMany
// for refs with a space, one Query of the key-order index per ref without
// (in parallel).
func rowsAt(ctx context.Context, store Store, tenant string, refs []query.Ref) ([]*requirement.Requirement, error) {
	var ids []requirement.ID
	var ranges []Range
	for _, ref := range refs {
		switch {
		case !requirement.ValidKey(ref.Key):
		case ref.SpaceKey == "":
			ranges = append(ranges, Range{Prefix: ref.Key, Exact: true})
		case requirement.ValidSpaceKey(ref.SpaceKey):
			ids = append(ids, requirement.ID{SpaceKey: ref.SpaceKey, Key: ref.Key})
		}
	}
	out, err := readRanges(ctx, store, tenant, ranges)
	if err != nil {
		return nil, err
	}
	if len(ids) > 0 {
		rows, err := store.Get(ctx, tenant, ids)
		if err != nil {
			return nil, fmt.Errorf("read linked requirements: %w", err)
		}
		out = append(out, rows...)
	}
	return out, nil
}

// parallelReads bounds the Queries one search runs at once.
const parallelReads = 8

// readRanges reads whole ranges, parallelReads at a time.
func readRanges(ctx context.Context, store Store, tenant string, ranges []Range) ([]*requirement.Requirement, error) {
	results := make([][]*requirement.Requirement, len(ranges))
	err := parallel(ctx, len(ranges), func(ctx context.Context, i int) error {
		var err error
		results[i], err = readAll(ctx, store, tenant, ranges[i])
		return err
	})
	if err != nil {
		return nil, err
	}
	return slices.Concat(results...), nil
}

// parallel runs fn(0) … fn(n-1), parallelReads at a time, and returns
// their errors joined; the first error cancels the others' context.
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	errs := make([]error, n)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	sem := make(chan struct{}, parallelReads)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if errs[i] = fn(ctx, i); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// readAll reads a whole range.
func readAll(ctx context.Context, store Store, tenant string, r Range) ([]*requirement.Requirement, error) {
	var out []*requirement.Requirement
	var after Token
	for {
		rows, next, err := store.Rows(ctx, tenant, r, after, 0)
		if err != nil {
			return nil, fmt.Errorf("read requirements: %w", err)
		}
		out = append(out, rows...)
		if next == "" {
			return out, nil
		}
		after = next
	}
}

// baselineOption reads the partitions of baselines, one Query per space and
// baseline; without a space in scope it first lists the tenant's spaces.
func (p *planner) baselineOption(values []string, spaces []string) option {
	return option{rank: rankBaseline, label: "baseline IN (" + strings.Join(values, ", ") + ") by baseline partitions",
		build: func(ctx context.Context) ([]source, error) {
			if !p.archived {
				return nil, nil
			}
			in := spaces
			if in == nil {
				var err error
				if in, err = p.store.Spaces(ctx, p.req.Tenant); err != nil {
					return nil, fmt.Errorf("list spaces: %w", err)
				}
			}
			var out []source
			for _, v := range values {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 || n > maxBaseline {
					continue
				}
				for _, s := range in {
					out = append(out, &rangeSource{store: p.store, tenant: p.req.Tenant,
						r: Range{Space: s, Archived: true, Baseline: n, Desc: p.desc}})
				}
			}
			return out, nil
		}}
}

// maxBaseline is the largest baseline number the key design holds.
const maxBaseline = 99999999
