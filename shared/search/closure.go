package search

import (
	"context"
	"fmt"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// closures computes the parent and child closures a query needs
// (query.Closures) by breadth-first search, one Store.Get per level (plus
// one Query per starting ref that names no space). It follows the links of
// the current rows: for parent, the reverse dependencies (which only ACTIVE
// requirements create); for child, the dependencies of ACTIVE rows (a
// DELETED or MOVED row keeps its dependencies for history, but they no
// longer count as references). A closure deeper than MaxClosureDepth, or
// closures holding more than MaxClosureNodes requirements together, are
// refused as too broad: a truncated closure would be a wrong answer.
func closures(ctx context.Context, store Store, tenant string, e query.Expr) (query.ClosureSet, error) {
	cs := query.Closures(e)
	if len(cs) == 0 {
		return nil, nil
	}
	w := &walker{store: store, tenant: tenant, rows: map[query.Ref][]*requirement.Requirement{}}
	set := query.ClosureSet{}
	for _, c := range cs {
		members, err := w.reach(ctx, c)
		if err != nil {
			return nil, err
		}
		set[c] = members
	}
	return set, nil
}

// walker caches the rows it read, keyed by ref, across the closures of a
// query.
type walker struct {
	store  Store
	tenant string
	rows   map[query.Ref][]*requirement.Requirement
	nodes  int
}

func (w *walker) reach(ctx context.Context, c query.Closure) (map[query.Ref]bool, error) {
	members := map[query.Ref]bool{}
	frontier := []query.Ref{c.Of}
	for depth := 1; len(frontier) > 0; depth++ {
		if err := w.load(ctx, frontier); err != nil {
			return nil, err
		}
		var next []query.Ref
		for _, ref := range frontier {
			for _, r := range w.rows[ref] {
				for _, n := range neighbours(c, r) {
					if !members[n] {
						members[n] = true
						next = append(next, n)
					}
				}
			}
		}
		if len(next) == 0 {
			break
		}
		if depth > MaxClosureDepth {
			return nil, apperr.Invalidf("query too broad: %s = '%s' follows links more than %d levels deep; narrow the query",
				fieldName(c), c.Of, MaxClosureDepth)
		}
		w.nodes += len(next)
		if w.nodes > MaxClosureNodes {
			return nil, apperr.Invalidf("query too broad: its parent and child predicates reach more than %d requirements; narrow the query",
				MaxClosureNodes)
		}
		frontier = next
	}
	return members, nil
}

func fieldName(c query.Closure) string {
	f := query.Field{Kind: c.Field, Name: c.Rel}
	return f.String()
}

// neighbours returns the refs one step from row r in c's direction.
func neighbours(c query.Closure, r *requirement.Requirement) []query.Ref {
	links := r.ReverseDependencies
	if c.Field == query.FieldChild {
		if r.Status != requirement.Active {
			return nil
		}
		links = r.Dependencies
	}
	var out []query.Ref
	for _, l := range links {
		if c.Rel != "" && requirement.NormalizeRelationship(l.Relationship) != c.Rel {
			continue
		}
		space := l.SpaceKey
		if space == "" {
			space = r.SpaceKey
		}
		out = append(out, query.NewRef(space, l.Key))
	}
	return out
}

// load reads the rows of the refs not read yet. A ref without a space
// gets the rows of its key in every space; each of those rows also answers
// for its own (space, key) ref.
func (w *walker) load(ctx context.Context, refs []query.Ref) error {
	todo := map[query.Ref]bool{}
	var list []query.Ref
	for _, ref := range refs {
		if _, ok := w.rows[ref]; !ok && !todo[ref] {
			todo[ref] = true
			list = append(list, ref)
		}
	}
	if len(list) == 0 {
		return nil
	}
	rows, err := rowsAt(ctx, w.store, w.tenant, list)
	if err != nil {
		return fmt.Errorf("follow links: %w", err)
	}
	for _, ref := range list {
		w.rows[ref] = nil
	}
	for _, r := range rows {
		ref := query.NewRef(r.SpaceKey, r.Key)
		if _, known := w.rows[ref]; todo[ref] || !known {
			w.rows[ref] = append(w.rows[ref], r)
		}
		if anySpace := (query.Ref{Key: ref.Key}); todo[anySpace] {
			w.rows[anySpace] = append(w.rows[anySpace], r)
		}
	}
	return nil
}
