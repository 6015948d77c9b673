package search

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// pageResolver answers, for one search, what the values of its page
// predicates name (query.PageNames): the page of that id, and the current
// pages of that title (Store.PagesTitled, checked with query.SameTitle);
// for `page ~`, the requirements those pages cite (query.Cites over the
// rows their key lists name). It reads each title, page and page's rows
// once, and both Match (through the Env) and the page plans use what it
// read, so a page-driven search reads nothing twice.
type pageResolver struct {
	store  Store
	tenant string

	mu     sync.Mutex
	titled map[string][]string // value → ids of the pages titled so, by id
	pages  map[string]*pageRead
}

// pageRead is one page as the search read it; nil in pageResolver.pages
// when there is no such page.
type pageRead struct {
	space string
	keys  []string
	// rows are the current rows its key list names, once read (the
	// candidates of the page, and what it cites).
	rows []*requirement.Requirement
	read bool
}

func newPageResolver(store Store, tenant string) *pageResolver {
	return &pageResolver{store: store, tenant: tenant, titled: map[string][]string{}, pages: map[string]*pageRead{}}
}

// names returns the PageNames of every lookup, reading what it lacks: the
// titles of all values at once (one Query each, parallelReads at a time),
// then, for the values of `page ~`, the pages they name and their rows.
func (pr *pageResolver) names(ctx context.Context, lookups []query.PageLookup) (map[string]*query.PageNames, error) {
	if len(lookups) == 0 {
		return nil, nil
	}
	values := make([]string, len(lookups))
	for i, l := range lookups {
		values[i] = l.Value
	}
	if err := pr.readTitles(ctx, values); err != nil {
		return nil, err
	}
	out := make(map[string]*query.PageNames, len(lookups))
	var cited []string
	for _, l := range lookups {
		n := &query.PageNames{Titled: map[string]bool{}}
		for _, id := range pr.titledIDs(l.Value) {
			n.Titled[id] = true
		}
		if l.Cited {
			cited = append(cited, l.Value)
		}
		out[l.Value] = n
	}
	if err := pr.readRows(ctx, pr.namedIDs(cited...)); err != nil {
		return nil, err
	}
	for _, v := range cited {
		n := out[v]
		n.Cited = map[query.Ref]bool{}
		for _, id := range pr.namedIDs(v) {
			for _, ref := range pr.cites(id) {
				n.Cited[ref] = true
			}
		}
	}
	return out, nil
}

// mayBeTitle reports whether some page title can be v (titles are 1 to
// wiki.MaxTitle characters of valid UTF-8): other values need no read.
func mayBeTitle(v string) bool {
	return v != "" && utf8.ValidString(v) && utf8.RuneCountInString(v) <= wiki.MaxTitle
}

// readTitles reads the pages titled each value not read yet, in parallel.
func (pr *pageResolver) readTitles(ctx context.Context, values []string) error {
	var todo []string
	pr.mu.Lock()
	for _, v := range values {
		if _, ok := pr.titled[v]; !ok && mayBeTitle(v) && !slices.Contains(todo, v) {
			todo = append(todo, v)
		}
	}
	pr.mu.Unlock()
	return parallel(ctx, len(todo), func(ctx context.Context, i int) error {
		refs, err := pr.store.PagesTitled(ctx, pr.tenant, todo[i])
		if err != nil {
			return fmt.Errorf("read the pages titled %s: %w", showValue(todo[i]), err)
		}
		var ids []string
		for _, r := range refs {
			if query.SameTitle(r.Title, todo[i]) && !slices.Contains(ids, r.PageID) {
				ids = append(ids, r.PageID)
			}
		}
		slices.Sort(ids)
		pr.mu.Lock()
		pr.titled[todo[i]] = ids
		pr.mu.Unlock()
		return nil
	})
}

// titledIDs returns the ids of the pages titled v, as read.
func (pr *pageResolver) titledIDs(v string) []string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.titled[v]
}

// namedIDs returns, without duplicates, the ids of the pages values name:
// each value that can be a page id, and the pages titled so (read).
func (pr *pageResolver) namedIDs(values ...string) []string {
	var ids []string
	for _, v := range values {
		if wiki.ValidContentID(v) && !slices.Contains(ids, v) {
			ids = append(ids, v)
		}
		for _, id := range pr.titledIDs(v) {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// readPages reads the page items (space and key list, one GetItem each,
// parallelReads at a time) of the ids not read yet.
func (pr *pageResolver) readPages(ctx context.Context, ids []string) error {
	var todo []string
	pr.mu.Lock()
	for _, id := range ids {
		if _, ok := pr.pages[id]; !ok {
			todo = append(todo, id)
		}
	}
	pr.mu.Unlock()
	return parallel(ctx, len(todo), func(ctx context.Context, i int) error {
		space, keys, err := pr.store.PageKeys(ctx, pr.tenant, todo[i])
		var pg *pageRead
		switch {
		case errors.Is(err, apperr.ErrNotFound):
		case err != nil:
			return fmt.Errorf("read page %s: %w", todo[i], err)
		default:
			pg = &pageRead{space: space, keys: keys}
		}
		pr.mu.Lock()
		pr.pages[todo[i]] = pg
		pr.mu.Unlock()
		return nil
	})
}

// readRows reads the pages ids and the current rows their key lists name
// (one Store.Get for all of them).
func (pr *pageResolver) readRows(ctx context.Context, ids []string) error {
	if err := pr.readPages(ctx, ids); err != nil {
		return err
	}
	var want []requirement.ID
	var pgs []*pageRead
	for _, id := range ids {
		if pg := pr.pages[id]; pg != nil && !pg.read {
			pgs = append(pgs, pg)
			for _, k := range pg.keys {
				want = append(want, requirement.NewID(pg.space, k, 0))
			}
		}
	}
	if len(pgs) == 0 {
		return nil
	}
	var rows []*requirement.Requirement
	if len(want) > 0 {
		var err error
		if rows, err = pr.store.Get(ctx, pr.tenant, want); err != nil {
			return fmt.Errorf("read the requirements of pages: %w", err)
		}
	}
	byID := make(map[requirement.ID]*requirement.Requirement, len(rows))
	for _, r := range rows {
		byID[r.ID()] = r
	}
	for _, pg := range pgs {
		for _, k := range pg.keys {
			if r := byID[requirement.NewID(pg.space, k, 0)]; r != nil {
				pg.rows = append(pg.rows, r)
			}
		}
		pg.read = true
	}
	return nil
}

// cites returns what page id cites (query.Cites), from its rows as read.
func (pr *pageResolver) cites(id string) []query.Ref {
	if pg := pr.pages[id]; pg != nil {
		return query.Cites(id, pg.rows)
	}
	return nil
}

// candidates returns the candidates of `page IN (values)` (the rows the
// key lists of the pages they name list, with their rows when read) and,
// when cited is set, of `page ~` (also the requirements those pages cite).
func (pr *pageResolver) candidates(ctx context.Context, values []string, cited bool) ([]entry, error) {
	if err := pr.readTitles(ctx, values); err != nil {
		return nil, err
	}
	ids := pr.namedIDs(values...)
	read := pr.readPages
	if cited {
		read = pr.readRows
	}
	if err := read(ctx, ids); err != nil {
		return nil, err
	}
	byID := map[requirement.ID]entry{}
	add := func(e entry) {
		if have, ok := byID[e.id]; !ok || have.row == nil {
			byID[e.id] = e
		}
	}
	for _, id := range ids {
		pg := pr.pages[id]
		if pg == nil {
			continue
		}
		for _, k := range pg.keys {
			add(entry{id: requirement.NewID(pg.space, k, 0)})
		}
		for _, r := range pg.rows {
			add(entry{id: r.ID(), row: r})
		}
		if cited {
			for _, ref := range query.Cites(id, pg.rows) {
				add(entry{id: requirement.NewID(ref.SpaceKey, ref.Key, 0)})
			}
		}
	}
	out := make([]entry, 0, len(byID))
	for _, e := range byID {
		out = append(out, e)
	}
	return out, nil
}
