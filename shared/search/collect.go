package search

import (
	"container/heap"
	"context"
	"slices"

	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// collect runs a plan and returns the page [offset, offset+limit) of the
// rows keep accepts, in order; early reports that reading stopped before
// the candidates ran out.
//
// In key order (the plan's early flag) candidates arrive grouped by folded
// key; each group is sorted with order.Less (its other columns) and
// counted, and reading stops once offset+limit matches are counted. When
// the index order is the answer's (the plan's sorted flag) each candidate
// is counted as it is read, so reading stops at the page's last row. In any
// other order every candidate is read and the best offset+limit are kept
// in a bounded heap: memory O(offset+limit), reads O(candidates).
func collect(ctx context.Context, pl *plan, keep func(*requirement.Requirement) bool, order query.Order, offset, limit int) (rows []*requirement.Requirement, early bool, err error) {
	src, err := pl.source(ctx, nil)
	if err != nil {
		return nil, false, err
	}
	if pl.p.early {
		return collectInOrder(ctx, src, keep, order, offset, limit, pl.p.sorted)
	}
	return collectSorted(ctx, src, keep, order, offset, limit)
}

func collectInOrder(ctx context.Context, src source, keep func(*requirement.Requirement) bool, order query.Order, offset, limit int, sorted bool) ([]*requirement.Requirement, bool, error) {
	out := []*requirement.Requirement{}
	matched, seen, kept := 0, 0, 0
	var group []*requirement.Requirement
	groupKey := ""
	flush := func() {
		slices.SortFunc(group, func(a, b *requirement.Requirement) int { return cmpOrder(order, a, b) })
		for _, r := range group {
			if matched >= offset && len(out) < limit {
				out = append(out, r)
			}
			matched++
		}
		group = group[:0]
	}
	for {
		need := offset + limit - matched - len(group)
		if !sorted {
			// When a key's rows may need sorting among themselves, the
			// last key's group is complete only when a candidate with
			// another key follows: peek at the next id (its row is not
			// read), asking upstream for one more candidate than needed
			// so that the look-ahead comes with the same page.
			id, ok, err := src.peek(ctx, max(scale(need+1, seen, kept), 1))
			if err != nil {
				return nil, false, err
			}
			if !ok {
				flush()
				return out, false, nil
			}
			if id.Key != groupKey {
				flush()
				if matched >= offset+limit {
					return out, true, nil
				}
			}
		}
		e, ok, err := src.next(ctx, max(scale(need, seen, kept), 1))
		if err != nil {
			return nil, false, err
		}
		if !ok {
			flush()
			return out, false, nil
		}
		seen++
		if e.id.Key != groupKey {
			flush()
			if matched >= offset+limit {
				return out, true, nil
			}
			groupKey = e.id.Key
		}
		if keep(e.row) {
			kept++
			group = append(group, e.row)
		}
		if sorted && len(group) > 0 {
			flush()
			if matched >= offset+limit {
				return out, true, nil
			}
		}
	}
}

// eachInOrder is collectInOrder without a page: it emits every row keep
// accepts, in order, reading until the candidates run out. The rows of one
// folded key are sorted among themselves before they are emitted, unless
// the index order is the answer's (sorted).
func eachInOrder(ctx context.Context, src source, keep func(*requirement.Requirement) bool, order query.Order, sorted bool, emit func(*requirement.Requirement) error) error {
	var group []*requirement.Requirement
	groupKey := ""
	flush := func() error {
		if !sorted {
			slices.SortFunc(group, func(a, b *requirement.Requirement) int { return cmpOrder(order, a, b) })
		}
		for _, r := range group {
			if err := emit(r); err != nil {
				return err
			}
		}
		group = group[:0]
		return nil
	}
	for {
		e, ok, err := src.next(ctx, 0)
		if err != nil {
			return err
		}
		if !ok {
			return flush()
		}
		if e.id.Key != groupKey {
			if err := flush(); err != nil {
				return err
			}
			groupKey = e.id.Key
		}
		if keep(e.row) {
			group = append(group, e.row)
		}
	}
}

func cmpOrder(o query.Order, a, b *requirement.Requirement) int {
	switch {
	case o.Less(a, b):
		return -1
	case o.Less(b, a):
		return 1
	}
	return 0
}

func collectSorted(ctx context.Context, src source, keep func(*requirement.Requirement) bool, order query.Order, offset, limit int) ([]*requirement.Requirement, bool, error) {
	h := &worstFirst{order: order, max: offset + limit}
	for {
		e, ok, err := src.next(ctx, 0)
		if err != nil {
			return nil, false, err
		}
		if !ok {
			break
		}
		if keep(e.row) {
			h.offer(e.row)
		}
	}
	best := h.rows
	slices.SortFunc(best, func(a, b *requirement.Requirement) int { return cmpOrder(order, a, b) })
	if offset >= len(best) {
		return []*requirement.Requirement{}, false, nil
	}
	return best[offset:], false, nil
}

// worstFirst is a heap of at most max rows whose root is the last in
// order: it keeps the first max rows of a stream.
type worstFirst struct {
	order query.Order
	max   int
	rows  []*requirement.Requirement
}

func (h *worstFirst) offer(r *requirement.Requirement) {
	switch {
	case h.max <= 0:
	case len(h.rows) < h.max:
		heap.Push(h, r)
	case h.order.Less(r, h.rows[0]):
		h.rows[0] = r
		heap.Fix(h, 0)
	}
}

// Len implements heap.Interface.
func (h *worstFirst) Len() int { return len(h.rows) }

// Less implements heap.Interface: the root is the row that sorts last.
func (h *worstFirst) Less(i, j int) bool { return h.order.Less(h.rows[j], h.rows[i]) }

// Swap implements heap.Interface.
func (h *worstFirst) Swap(i, j int) { h.rows[i], h.rows[j] = h.rows[j], h.rows[i] }

// Push implements heap.Interface.
func (h *worstFirst) Push(x any) { h.rows = append(h.rows, x.(*requirement.Requirement)) }

// Pop implements heap.Interface.
func (h *worstFirst) Pop() any {
	r := h.rows[len(h.rows)-1]
	h.rows = h.rows[:len(h.rows)-1]
	return r
}
