package search

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// entry is one candidate: its id and, once read, its row.
type entry struct {
	id  ID
	row *requirement.Requirement
}

// source yields candidates in index order (compareIDs, reversed when
// descending). Sources read lazily, one page at a time.
type source interface {
	// next returns the next candidate, false at the end.
	next(ctx context.Context) (entry, bool, error)
}

// compareIDs is the index order: folded key, space key, then the current
// version before archived copies, newest baseline first. It is the order
// of every key-order index of the Store (Range), so sources merge.
func compareIDs(a, b ID) int {
	if c := strings.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	if c := strings.Compare(a.SpaceKey, b.SpaceKey); c != 0 {
		return c
	}
	switch {
	case a.Baseline == b.Baseline:
		return 0
	case a.Baseline == 0:
		return -1
	case b.Baseline == 0:
		return 1
	case a.Baseline > b.Baseline:
		return -1
	}
	return 1
}

func compareEntries(a, b entry, desc bool) int {
	c := compareIDs(a.id, b.id)
	if desc {
		return -c
	}
	return c
}

// Page sizes of the reads: the first is the plan's hint, each next one
// twice the last, up to maxPage; with no hint, as much as one call returns
// (DynamoDB's 1 MB), and fetchBatch rows per batch of gets.
const (
	maxPage    = 1000
	fetchBatch = 1000
)

// sizer gives the page sizes of one source.
type sizer struct{ n int }

func newSizer(hint int) sizer { return sizer{n: hint} }

// take returns the size of the next page (0: unbounded) and grows it.
func (s *sizer) take() int {
	n := s.n
	if s.n > 0 {
		s.n = min(2*s.n, maxPage)
	}
	return n
}

// rangeSource reads a Range page by page.
type rangeSource struct {
	store  Store
	tenant string
	r      Range
	size   sizer
	after  Token
	buf    []entry
	done   bool
}

func (s *rangeSource) next(ctx context.Context) (entry, bool, error) {
	for len(s.buf) == 0 {
		if s.done {
			return entry{}, false, nil
		}
		rows, next, err := s.store.Rows(ctx, s.tenant, s.r, s.after, s.size.take())
		if err != nil {
			return entry{}, false, fmt.Errorf("read requirements in key order: %w", err)
		}
		for _, r := range rows {
			s.buf = append(s.buf, entry{id: idOf(r), row: r})
		}
		s.after, s.done = next, next == ""
	}
	e := s.buf[0]
	s.buf = s.buf[1:]
	return e, true, nil
}

// indexSource reads an index partition page by page; its entries carry no
// row.
type indexSource struct {
	store  Store
	tenant string
	ix     IndexRef
	desc   bool
	size   sizer
	after  Token
	buf    []entry
	done   bool
}

func (s *indexSource) next(ctx context.Context) (entry, bool, error) {
	for len(s.buf) == 0 {
		if s.done {
			return entry{}, false, nil
		}
		ids, next, err := s.store.Index(ctx, s.tenant, s.ix, s.desc, s.after, s.size.take())
		if err != nil {
			return entry{}, false, fmt.Errorf("read search index: %w", err)
		}
		for _, id := range ids {
			id.Key, id.Baseline = query.Fold(id.Key), 0
			s.buf = append(s.buf, entry{id: id})
		}
		s.after, s.done = next, next == ""
	}
	e := s.buf[0]
	s.buf = s.buf[1:]
	return e, true, nil
}

// listSource yields a list known in advance, sorted, without duplicates.
type listSource struct{ entries []entry }

func newList(entries []entry, desc bool) *listSource {
	slices.SortFunc(entries, func(a, b entry) int { return compareEntries(a, b, desc) })
	return &listSource{entries: slices.CompactFunc(entries, func(a, b entry) bool { return a.id == b.id })}
}

func (s *listSource) next(context.Context) (entry, bool, error) {
	if len(s.entries) == 0 {
		return entry{}, false, nil
	}
	e := s.entries[0]
	s.entries = s.entries[1:]
	return e, true, nil
}

// mergeSource merges sources in index order and drops duplicates (equal
// ids are adjacent), keeping a copy that carries its row when one does.
type mergeSource struct {
	srcs  []source
	heads []*entry // nil once a source is exhausted
	desc  bool
	init  bool
	last  *ID
}

func newMerge(srcs []source, desc bool) source {
	if len(srcs) == 1 {
		return srcs[0]
	}
	return &mergeSource{srcs: srcs, heads: make([]*entry, len(srcs)), desc: desc}
}

func (m *mergeSource) fill(ctx context.Context, i int) error {
	e, ok, err := m.srcs[i].next(ctx)
	if err != nil {
		return err
	}
	m.heads[i] = nil
	if ok {
		m.heads[i] = &e
	}
	return nil
}

func (m *mergeSource) next(ctx context.Context) (entry, bool, error) {
	if !m.init {
		for i := range m.srcs {
			if err := m.fill(ctx, i); err != nil {
				return entry{}, false, err
			}
		}
		m.init = true
	}
	for {
		best := -1
		for i, h := range m.heads {
			if h == nil {
				continue
			}
			if best < 0 {
				best = i
				continue
			}
			c := compareEntries(*h, *m.heads[best], m.desc)
			if c < 0 || c == 0 && h.row != nil && m.heads[best].row == nil {
				best = i
			}
		}
		if best < 0 {
			return entry{}, false, nil
		}
		e := *m.heads[best]
		if err := m.fill(ctx, best); err != nil {
			return entry{}, false, err
		}
		if m.last != nil && *m.last == e.id {
			continue
		}
		m.last = &e.id
		return e, true, nil
	}
}

// filterSource drops candidates that cannot match before their rows are
// read.
type filterSource struct {
	src  source
	keep func(ID) bool
}

func (f *filterSource) next(ctx context.Context) (entry, bool, error) {
	for {
		e, ok, err := f.src.next(ctx)
		if !ok || err != nil || f.keep(e.id) {
			return e, ok, err
		}
	}
}

// fetchSource reads the rows of candidates that carry none, in batches
// (one Store.Get each), and drops the candidates that do not exist.
type fetchSource struct {
	src    source
	store  Store
	tenant string
	size   sizer
	buf    []entry
	done   bool
}

func (f *fetchSource) next(ctx context.Context) (entry, bool, error) {
	for len(f.buf) == 0 {
		if f.done {
			return entry{}, false, nil
		}
		if err := f.fill(ctx); err != nil {
			return entry{}, false, err
		}
	}
	e := f.buf[0]
	f.buf = f.buf[1:]
	return e, true, nil
}

// fill takes the next batch from src and reads the rows it lacks.
func (f *fetchSource) fill(ctx context.Context) error {
	n := f.size.take()
	if n == 0 {
		n = fetchBatch
	}
	batch := make([]entry, 0, n)
	var missing []ID
	for len(batch) < n {
		e, ok, err := f.src.next(ctx)
		if err != nil {
			return err
		}
		if !ok {
			f.done = true
			break
		}
		batch = append(batch, e)
		if e.row == nil {
			missing = append(missing, e.id)
		}
	}
	if len(missing) > 0 {
		rows, err := f.store.Get(ctx, f.tenant, missing)
		if err != nil {
			return fmt.Errorf("read candidate requirements: %w", err)
		}
		found := make(map[ID]*requirement.Requirement, len(rows))
		for _, r := range rows {
			found[idOf(r)] = r
		}
		for i := range batch {
			if batch[i].row == nil {
				batch[i].row = found[batch[i].id]
			}
		}
	}
	for _, e := range batch {
		if e.row != nil {
			f.buf = append(f.buf, e)
		}
	}
	return nil
}
