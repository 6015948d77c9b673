package search

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/reqtrace/reqtrace/shared/keyrange"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// entry is one candidate: its id and, once read, its row.
type entry struct {
	id  requirement.ID
	row *requirement.Requirement
}

// source yields candidates in index order (compareIDs, reversed when
// descending). Sources read lazily, one page at a time, when their caller
// asks for a candidate they do not hold.
type source interface {
	// next returns the next candidate, false at the end. want is how many
	// candidates the caller expects to take from now on, this one
	// included: the size of a page to read if one is needed; 0 means all
	// of them (read as much as one call returns).
	next(ctx context.Context, want int) (entry, bool, error)
	// peek returns, without consuming anything or reading a row, an id
	// no greater (in the source's order) than that of the candidate next
	// would return, and false when there is no candidate left. It reads a
	// page of ids (sized by want, as next) only when it holds none; it
	// may return the id of a candidate next will drop (filtered out, no
	// row), which is still a bound: the candidates come in key order, so
	// a peeked key different from the last one shows that group complete.
	peek(ctx context.Context, want int) (requirement.ID, bool, error)
}

// compareIDs is the index order: folded key, space key, then the current
// version before archived copies, newest baseline first. It is the order
// of every key-order index of the Store (Range), so sources merge.
func compareIDs(a, b requirement.ID) int {
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

// Page sizes: a read takes what its caller wants, at most maxPage items
// (and, with no want, as much as one call returns: DynamoDB's 1 MB); rows
// are read fetchBatch at a time when everything is wanted.
const (
	maxPage    = 1000
	fetchBatch = 1000
)

// pageSize is the Limit of a read for want candidates (0: no limit).
func pageSize(want int) int {
	if want <= 0 {
		return 0
	}
	return min(want, maxPage)
}

// scale estimates how many candidates to take from upstream to get want
// that pass a filter which, so far, let kept of seen through: want at
// least, more in proportion as the filter drops candidates, twice what was
// seen when it let none through; at most maxPage unless want is more.
func scale(want, seen, kept int) int {
	if want <= 0 || seen == 0 {
		return want
	}
	est := 2 * seen
	if kept > 0 {
		est = (want*seen + kept - 1) / kept
	}
	return max(want, min(est, maxPage))
}

// rangeSource reads a Range page by page. With seg set (Each, a range
// that is segmentable) it reads its first page of seg's page size and
// then, when the range goes on, the rest in parallel segments (segs,
// segment.go).
type rangeSource struct {
	store  Store
	tenant string
	r      Range
	after  Token
	buf    []entry
	done   bool
	seg    *segmenting
	segs   *keyrange.Ordered[[]*requirement.Requirement]
}

func (s *rangeSource) next(ctx context.Context, want int) (entry, bool, error) {
	if ok, err := s.fill(ctx, want); !ok || err != nil {
		return entry{}, false, err
	}
	e := s.buf[0]
	s.buf = s.buf[1:]
	return e, true, nil
}

func (s *rangeSource) peek(ctx context.Context, want int) (requirement.ID, bool, error) {
	if ok, err := s.fill(ctx, want); !ok || err != nil {
		return requirement.ID{}, false, err
	}
	return s.buf[0].id, true, nil
}

// fill reads pages until the buffer holds a candidate; false at the end.
func (s *rangeSource) fill(ctx context.Context, want int) (bool, error) {
	for len(s.buf) == 0 {
		if s.done {
			return false, nil
		}
		if s.segs != nil {
			rows, ok, err := s.segs.Next()
			if err != nil {
				return false, err
			}
			s.add(rows)
			s.done = !ok
			continue
		}
		limit := pageSize(want)
		if s.seg != nil {
			limit = s.seg.pageSize
		}
		rows, next, err := s.store.Rows(ctx, s.tenant, s.r, s.after, limit)
		if err != nil {
			return false, fmt.Errorf("read requirements in key order: %w", err)
		}
		s.add(rows)
		s.after, s.done = next, next == ""
		if g := s.seg; g != nil {
			s.seg = nil // cut once, after the first page
			if !s.done {
				if err := s.segment(ctx, g, rows); err != nil {
					return false, err
				}
			}
		}
	}
	return true, nil
}

func (s *rangeSource) add(rows []*requirement.Requirement) {
	for _, r := range rows {
		s.buf = append(s.buf, entry{id: r.ID(), row: r})
	}
}

// indexSource reads an index partition page by page; its entries carry no
// row.
type indexSource struct {
	store  Store
	tenant string
	ix     IndexRef
	desc   bool
	after  Token
	buf    []entry
	done   bool
}

func (s *indexSource) next(ctx context.Context, want int) (entry, bool, error) {
	if ok, err := s.fill(ctx, want); !ok || err != nil {
		return entry{}, false, err
	}
	e := s.buf[0]
	s.buf = s.buf[1:]
	return e, true, nil
}

func (s *indexSource) peek(ctx context.Context, want int) (requirement.ID, bool, error) {
	if ok, err := s.fill(ctx, want); !ok || err != nil {
		return requirement.ID{}, false, err
	}
	return s.buf[0].id, true, nil
}

// fill reads pages until the buffer holds a candidate; false at the end.
func (s *indexSource) fill(ctx context.Context, want int) (bool, error) {
	for len(s.buf) == 0 {
		if s.done {
			return false, nil
		}
		ids, next, err := s.store.Index(ctx, s.tenant, s.ix, s.desc, s.after, pageSize(want))
		if err != nil {
			return false, fmt.Errorf("read search index: %w", err)
		}
		for _, id := range ids {
			id = id.Current().Fold()
			s.buf = append(s.buf, entry{id: id})
		}
		s.after, s.done = next, next == ""
	}
	return true, nil
}

// listSource yields a list known in advance, sorted, without duplicates.
type listSource struct{ entries []entry }

func newList(entries []entry, desc bool) *listSource {
	slices.SortFunc(entries, func(a, b entry) int { return compareEntries(a, b, desc) })
	return &listSource{entries: slices.CompactFunc(entries, func(a, b entry) bool { return a.id == b.id })}
}

func (s *listSource) next(context.Context, int) (entry, bool, error) {
	if len(s.entries) == 0 {
		return entry{}, false, nil
	}
	e := s.entries[0]
	s.entries = s.entries[1:]
	return e, true, nil
}

func (s *listSource) peek(context.Context, int) (requirement.ID, bool, error) {
	if len(s.entries) == 0 {
		return requirement.ID{}, false, nil
	}
	return s.entries[0].id, true, nil
}

// mergeSource merges sources in index order and drops duplicates (equal
// ids are adjacent), keeping a copy that carries its row when one does. A
// source's next head is read only when a candidate is asked for, so the
// merge never reads a page nobody needs.
type mergeSource struct {
	srcs  []source
	heads []*entry
	stale []bool // the head must be read before comparing
	ended []bool
	desc  bool
	last  *requirement.ID
}

func newMerge(srcs []source, desc bool) source {
	if len(srcs) == 1 {
		return srcs[0]
	}
	stale := make([]bool, len(srcs))
	for i := range stale {
		stale[i] = true
	}
	return &mergeSource{srcs: srcs, heads: make([]*entry, len(srcs)), stale: stale, ended: make([]bool, len(srcs)), desc: desc}
}

func (m *mergeSource) next(ctx context.Context, want int) (entry, bool, error) {
	best, err := m.head(ctx, want)
	if best < 0 || err != nil {
		return entry{}, false, err
	}
	e := *m.heads[best]
	m.stale[best] = true
	m.last = &e.id
	return e, true, nil
}

// peek returns the smallest head: the sources' heads are ids already read
// (rows, when a source carries them, come with its page: no extra read).
func (m *mergeSource) peek(ctx context.Context, want int) (requirement.ID, bool, error) {
	best, err := m.head(ctx, want)
	if best < 0 || err != nil {
		return requirement.ID{}, false, err
	}
	return m.heads[best].id, true, nil
}

// head reads the heads it lacks and returns the index of the source whose
// head comes next (-1 at the end), dropping heads equal to the last
// candidate returned.
func (m *mergeSource) head(ctx context.Context, want int) (int, error) {
	for {
		best := -1
		for i := range m.srcs {
			if m.stale[i] {
				e, ok, err := m.srcs[i].next(ctx, want)
				if err != nil {
					return -1, err
				}
				m.stale[i], m.ended[i], m.heads[i] = false, !ok, &e
			}
			if m.ended[i] {
				continue
			}
			if best < 0 {
				best = i
				continue
			}
			h := m.heads[i]
			c := compareEntries(*h, *m.heads[best], m.desc)
			if c < 0 || c == 0 && h.row != nil && m.heads[best].row == nil {
				best = i
			}
		}
		if best < 0 {
			return -1, nil
		}
		if m.last != nil && *m.last == m.heads[best].id {
			m.stale[best] = true
			continue
		}
		return best, nil
	}
}

// filterSource drops candidates that cannot match before their rows are
// read, asking upstream for more in proportion as it drops.
type filterSource struct {
	src        source
	keep       func(requirement.ID) bool
	seen, kept int
}

func (f *filterSource) next(ctx context.Context, want int) (entry, bool, error) {
	for {
		e, ok, err := f.src.next(ctx, scale(want, f.seen, f.kept))
		if !ok || err != nil {
			return e, ok, err
		}
		f.seen++
		if f.keep(e.id) {
			f.kept++
			return e, true, nil
		}
	}
}

// peek returns the upstream head, kept or not: a candidate the filter will
// drop is still a bound on the next one it keeps (see source.peek), and
// looking past it could read a page nobody needs.
func (f *filterSource) peek(ctx context.Context, want int) (requirement.ID, bool, error) {
	return f.src.peek(ctx, scale(want, f.seen, f.kept))
}

// fetchSource reads the rows of candidates that carry none, in batches
// (one Store.Get each) of what its caller wants to take, and drops the
// candidates that do not exist. It takes candidates from src in batches
// of what its caller asks for when its buffer is empty, by next or peek
// (whose want counts the look-ahead), but reads a row only when next
// needs it: a candidate only peeked at costs no row.
type fetchSource struct {
	src    source
	store  Store
	tenant string
	buf    []entry // taken from src, in order
	ready  int     // buf[:ready] carry their rows
	done   bool
}

func (f *fetchSource) next(ctx context.Context, want int) (entry, bool, error) {
	for f.ready == 0 {
		if len(f.buf) == 0 {
			if f.done {
				return entry{}, false, nil
			}
			if err := f.take(ctx, want); err != nil {
				return entry{}, false, err
			}
			continue
		}
		if err := f.read(ctx, want); err != nil {
			return entry{}, false, err
		}
	}
	e := f.buf[0]
	f.buf = f.buf[1:]
	f.ready--
	return e, true, nil
}

// peek returns the next candidate's id, taking a batch from src when the
// buffer is empty, without reading its row: the row is read only if the
// candidate is taken, so a caller that peeks to see a group complete
// reads no row it does not return. The id may be one whose row does not
// exist (next drops it): still a bound, as source.peek allows.
func (f *fetchSource) peek(ctx context.Context, want int) (requirement.ID, bool, error) {
	for len(f.buf) == 0 {
		if f.done {
			return requirement.ID{}, false, nil
		}
		if err := f.take(ctx, want); err != nil {
			return requirement.ID{}, false, err
		}
	}
	return f.buf[0].id, true, nil
}

// take fills the empty buffer with the next want candidates of src (all
// of them, fetchBatch at a time, when want is 0).
func (f *fetchSource) take(ctx context.Context, want int) error {
	n := want
	if n <= 0 {
		n = fetchBatch
	}
	for len(f.buf) < n {
		e, ok, err := f.src.next(ctx, n-len(f.buf))
		if err != nil {
			return err
		}
		if !ok {
			f.done = true
			break
		}
		f.buf = append(f.buf, e)
	}
	return nil
}

// read reads, in one Store.Get, the missing rows of the first want
// buffered candidates (every buffered one when want is 0), drops those
// that do not exist and marks the others ready.
func (f *fetchSource) read(ctx context.Context, want int) error {
	n := len(f.buf)
	if want > 0 {
		n = min(n, want)
	}
	var missing []requirement.ID
	for _, e := range f.buf[:n] {
		if e.row == nil {
			missing = append(missing, e.id)
		}
	}
	if len(missing) > 0 {
		rows, err := f.store.Get(ctx, f.tenant, missing)
		if err != nil {
			return fmt.Errorf("read candidate requirements: %w", err)
		}
		found := make(map[requirement.ID]*requirement.Requirement, len(rows))
		for _, r := range rows {
			found[r.ID()] = r
		}
		for i := range f.buf[:n] {
			if f.buf[i].row == nil {
				f.buf[i].row = found[f.buf[i].id]
			}
		}
	}
	kept := f.buf[:0]
	for _, e := range f.buf[:n] {
		if e.row != nil {
			kept = append(kept, e)
		}
	}
	f.ready = len(kept)
	f.buf = append(kept, f.buf[n:]...)
	return nil
}
