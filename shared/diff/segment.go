package diff

// The segmented merge-join. The first page of each side is read (both at
// once); a diff whose sides both end there is merged as it is. Otherwise
// the key range after the rows already read, up to the last key of the
// sides that go on (one Query of one row each, read backwards), is cut
// into Segments key ranges (keyrange.Split, as the baseline freeze cuts a
// space), and each range is read on both sides and merge-joined on its
// own, InFlight ranges at a time. The changes are emitted in key order:
// those of the first unfinished range as they come, those of the ranges
// after it held up to Buffer per range, whose merge then waits for its
// turn. Every row is read once, but a row whose key is exactly a cut,
// read by both ranges' Queries and kept by one.

import (
	"context"
	"fmt"
	"sync"

	"github.com/reqtrace/reqtrace/shared/keyrange"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
)

// segment is one key range of a diff, From <= folded key < Before ("":
// open), and how each side (from, to) reads it.
type segment struct {
	from, before string
	sides        [2]segmentSide
}

// segmentSide is one side of a segment: rows already read, returned
// first, then, when read is set, the range's rows after after.
type segmentSide struct {
	head  []*requirement.Requirement
	read  bool
	after search.Token
}

// walk merge-joins the two sides in key order, counts every requirement
// in res.Summary and emits each change.
func (s *Service) walk(ctx context.Context, req Request, res *Result, emit func(Change) error) error {
	match := func(*requirement.Requirement) bool { return true }
	if req.Query != nil {
		var err error
		if match, err = s.matcher.Matcher(ctx, req.Tenant, req.Query); err != nil {
			return err
		}
	}
	segs, err := s.plan(ctx, req, res)
	if err != nil {
		return err
	}
	res.Segments = len(segs)
	if len(segs) == 1 {
		var read [2]int
		err := s.merge(ctx, req, segs[0], match, &res.Summary, &read, emit)
		res.ReadFrom += read[0]
		res.ReadTo += read[1]
		return err
	}
	return s.parallel(ctx, req, res, segs, match, emit)
}

// plan reads the first page of both sides and cuts what follows into
// segments.
func (s *Service) plan(ctx context.Context, req Request, res *Result) ([]segment, error) {
	sides := [2]int{req.From, req.To}
	type first struct {
		rows []*requirement.Requirement
		next search.Token
		last string // the last key of the side (when it goes on)
		err  error
	}
	var firsts [2]first
	var wg sync.WaitGroup
	for i, n := range sides {
		wg.Go(func() {
			f := &firsts[i]
			f.rows, f.next, f.err = s.store.Rows(ctx, req.Tenant, sideRange(req.Space, n), "", s.PageSize)
		})
	}
	wg.Wait()
	var seg0 segment
	more := false
	for i, f := range firsts {
		if f.err != nil {
			return nil, fmt.Errorf("read %s of space %s in key order: %w", sideLabel(sides[i]), req.Space, f.err)
		}
		seg0.sides[i] = segmentSide{head: f.rows, read: f.next != "", after: f.next}
		more = more || f.next != ""
	}
	res.ReadFrom, res.ReadTo = len(firsts[0].rows), len(firsts[1].rows)
	if !more || s.Segments <= 1 {
		return []segment{seg0}, nil
	}

	// The rest is cut between the last key read (on either side, so that
	// the rows in hand all fall in the first segment) and the last key of
	// the sides that go on.
	lo := ""
	for _, f := range firsts {
		if len(f.rows) > 0 {
			lo = max(lo, requirement.FoldKey(f.rows[len(f.rows)-1].Key))
		}
	}
	for i, n := range sides {
		if firsts[i].next == "" {
			continue
		}
		wg.Go(func() {
			f := &firsts[i]
			r := sideRange(req.Space, n)
			r.Desc = true
			var rows []*requirement.Requirement
			if rows, _, f.err = s.store.Rows(ctx, req.Tenant, r, "", 1); len(rows) > 0 {
				f.last = requirement.FoldKey(rows[0].Key)
			}
		})
	}
	wg.Wait()
	hi := lo
	for i, f := range firsts {
		if f.err != nil {
			return nil, fmt.Errorf("read the last key of %s of space %s: %w", sideLabel(sides[i]), req.Space, f.err)
		}
		if f.last != "" {
			hi = max(hi, f.last)
			if i == 0 {
				res.ReadFrom++
			} else {
				res.ReadTo++
			}
		}
	}
	bounds := keyrange.Split(lo, hi, s.Segments)
	cuts := bounds[1 : len(bounds)-1]
	segs := []segment{seg0}
	for i, c := range cuts {
		segs[i].before = c
		sg := segment{from: c}
		for j, f := range firsts {
			sg.sides[j].read = f.next != ""
		}
		segs = append(segs, sg)
	}
	return segs, nil
}

// merge merge-joins one segment of the two sides in key order, counts
// every requirement in sum and emits each change; read gets the rows each
// side's Queries returned.
func (s *Service) merge(ctx context.Context, req Request, sg segment, match func(*requirement.Requirement) bool, sum *Summary, read *[2]int, emit func(Change) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var sd [2]*side
	for i, n := range [2]int{req.From, req.To} {
		r := sideRange(req.Space, n)
		r.From, r.Before = sg.from, sg.before
		sd[i] = s.side(ctx, req.Tenant, r, n, sg.sides[i].head, sg.sides[i].read, sg.sides[i].after)
	}
	from, to := sd[0], sd[1]
	defer func() { read[0], read[1] = from.read, to.read }()
	a, err := from.next()
	if err != nil {
		return err
	}
	b, err := to.next()
	if err != nil {
		return err
	}
	for a != nil || b != nil {
		var x, y *requirement.Requirement
		switch c := compareRows(a, b); {
		case c < 0:
			x = a
		case c > 0:
			y = b
		default:
			x, y = a, b
		}
		if err := s.pair(req, sum, x, y, match, emit); err != nil {
			return err
		}
		if x != nil {
			if a, err = from.next(); err != nil {
				return err
			}
		}
		if y != nil {
			if b, err = to.next(); err != nil {
				return err
			}
		}
	}
	return nil
}

// parallel merges segs InFlight at a time, started in key order, and
// emits their changes in key order (keyrange.ReadOrdered). The first
// unfinished segment is always among those started and is drained as it
// goes, so the others wait for it at worst, never for each other; a
// segment that has finished frees its slot and holds up to Buffer
// changes.
func (s *Service) parallel(ctx context.Context, req Request, res *Result, segs []segment, match func(*requirement.Requirement) bool, emit func(Change) error) error {
	sums := make([]Summary, len(segs))
	reads := make([][2]int, len(segs))
	changes := keyrange.ReadOrdered(ctx, len(segs), keyrange.OrderedOptions{InFlight: s.InFlight, Buffer: s.Buffer},
		func(ctx context.Context, i int, send func(Change) error) error {
			return s.merge(ctx, req, segs[i], match, &sums[i], &reads[i], send)
		})
	err := func() error {
		defer changes.Close()
		for {
			c, ok, err := changes.Next()
			if err != nil || !ok {
				return err
			}
			if err := emit(c); err != nil {
				return err
			}
		}
	}()
	// Every merge has returned (Close waits for them): their counts are
	// final.
	for i := range segs {
		res.ReadFrom += reads[i][0]
		res.ReadTo += reads[i][1]
		res.Summary.Added += sums[i].Added
		res.Summary.Removed += sums[i].Removed
		res.Summary.Modified += sums[i].Modified
		res.Summary.Unchanged += sums[i].Unchanged
	}
	return err
}
