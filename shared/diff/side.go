package diff

import (
	"context"
	"fmt"
	"strings"

	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
)

// readAhead is how many pages a side reads ahead of the merge: the two
// sides' Queries and the comparison overlap, and memory stays a few pages.
const readAhead = 2

// side reads one side of one segment of a diff in key order, a few pages
// ahead of its consumer, in its own goroutine.
type side struct {
	pages chan page
	buf   []*requirement.Requirement
	last  string // folded key of the last row returned
	read  int    // rows read by this side's Queries (stubs included)
	err   error
	done  bool
}

type page struct {
	rows []*requirement.Requirement
	err  error
}

// sideRange is the key-order read of a side: the space's current rows, or
// the copies of baseline n.
func sideRange(space string, n int) search.Range {
	if n == Current {
		return search.Range{Space: space}
	}
	return search.Range{Space: space, Archived: true, Baseline: n}
}

// side starts reading r (a side's range, cut to one segment): head are
// rows already read, returned first; then, when read is set, the rows of
// r from after on. ctx's end stops the reading.
func (s *Service) side(ctx context.Context, tenant string, r search.Range, n int, head []*requirement.Requirement, read bool, after search.Token) *side {
	sd := &side{pages: make(chan page, readAhead), buf: head}
	if !read {
		close(sd.pages)
		return sd
	}
	go func() {
		defer close(sd.pages)
		for {
			rows, next, err := s.store.Rows(ctx, tenant, r, after, s.PageSize)
			if err != nil {
				err = fmt.Errorf("read %s of space %s in key order: %w", sideLabel(n), r.Space, err)
			}
			select {
			case sd.pages <- page{rows: rows, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil || next == "" {
				return
			}
			after = next
		}
	}()
	return sd
}

func sideLabel(n int) string {
	if n == Current {
		return "the current rows"
	}
	return fmt.Sprintf("baseline %d", n)
}

// next returns the next row (stubs included), nil at the end. Rows must
// come in strictly ascending folded key order: anything else is an error
// rather than a wrong diff.
func (sd *side) next() (*requirement.Requirement, error) {
	for len(sd.buf) == 0 {
		if sd.err != nil || sd.done {
			return nil, sd.err
		}
		p, ok := <-sd.pages
		if !ok {
			sd.done = true
			return nil, nil
		}
		if p.err != nil {
			sd.err = p.err
			return nil, p.err
		}
		sd.buf = p.rows
		sd.read += len(p.rows)
	}
	r := sd.buf[0]
	sd.buf[0] = nil
	sd.buf = sd.buf[1:]
	k := requirement.FoldKey(r.Key)
	if sd.last != "" && strings.Compare(k, sd.last) <= 0 {
		sd.err = fmt.Errorf("rows out of key order: %s after %s", k, sd.last)
		return nil, sd.err
	}
	sd.last = k
	return r, nil
}
