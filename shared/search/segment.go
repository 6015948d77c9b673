package search

// Segmented reads (Each): a key-order read of a whole Range, the scan of a
// space an export or a coverage matrix walks, is read in parallel key-range
// segments rather than one page after the other. The first page is read as
// usual; when the range goes on, its last key is read (one Query of one
// row, descending), the rows after the first page are estimated from how
// wide a key range that page covered, and the range between the last key
// read and the last key is cut (keyrange.SplitLike) into segments of about
// segmentPages pages, at most Service.Segments. The segments are read
// InFlight at a time, started in key order (keyrange.ReadOrdered), and
// their rows handed over in key order, so the candidates come exactly as a
// sequential read gives them. A segment holds at most segmentBuffer pages
// ready, plus the one it is handing over, and keeps its slot until its last
// page is taken: at most InFlight segments hold rows at once. Every row is
// read once, but the last one (read again by the last segment) and a row
// whose key is exactly a cut (read by both segments' Queries, kept by one).

import (
	"context"
	"fmt"

	"github.com/reqtrace/reqtrace/shared/keyrange"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

const (
	// segmentPages is the size a segment is cut to, in pages: a segment
	// that fits its buffer is read to its end without waiting for its
	// turn, so InFlight segments are read at once.
	segmentPages = 2
	// segmentBuffer is how many pages a segment not yet being taken holds.
	segmentBuffer = 2
	// defaultPageSize is Service.PageSize when it is not set.
	defaultPageSize = 500
)

// segmenting is how one Each reads its key-order range in segments, and
// the readers it started, which close stops and waits for.
type segmenting struct {
	pageSize, segments, inFlight int
	readers                      []func()
}

// segmenting returns how Each cuts its reads, nil when it does not
// (Segments at most 1: every range is read as one stream, as Search
// reads it).
func (s *Service) segmenting() *segmenting {
	if s.Segments <= 1 {
		return nil
	}
	pageSize := s.PageSize
	if pageSize <= 0 {
		pageSize = defaultPageSize
	}
	return &segmenting{pageSize: pageSize, segments: s.Segments, inFlight: s.InFlight}
}

// close stops the segment readers still running and waits for them.
func (g *segmenting) close() {
	if g == nil {
		return
	}
	for _, c := range g.readers {
		c()
	}
}

// segmentable reports whether a range can be read in segments: ascending
// (a descending export stays sequential), not one exact key, and read
// without a filter (archived copies of one space come from the tenant's
// archived index, filtered to the space: a page's last row does not show
// how far its Query went, so the first segment's start is not known).
func segmentable(r Range) bool {
	return !r.Exact && !r.Desc && !(r.Archived && r.Space != "" && r.Baseline == 0)
}

// segment maybe starts reading the rest of s's range in segments, after
// its first page (first, the rows of the page; s.after its end). It reads
// the range's last key; it leaves s sequential when the range is too
// short, or too narrow, to be cut.
func (s *rangeSource) segment(ctx context.Context, g *segmenting, first []*requirement.Requirement) error {
	if len(first) == 0 {
		return nil
	}
	r := s.r
	r.Desc = true
	last, _, err := s.store.Rows(ctx, s.tenant, r, "", 1)
	if err != nil {
		return fmt.Errorf("read the last key in key order: %w", err)
	}
	if len(last) == 0 {
		return nil
	}
	sample := make([]string, len(first))
	for i, row := range first {
		sample[i] = requirement.FoldKey(row.Key)
	}
	lo, hi := sample[len(sample)-1], requirement.FoldKey(last[0].Key)
	rest := keyrange.Estimate(sample[0], lo, hi, len(first), sample) - len(first)
	k := min(g.segments, rest/(segmentPages*g.pageSize)+1)
	if k <= 1 {
		return nil
	}
	bounds := keyrange.SplitLike(lo, hi, k, sample)
	var cuts []string
	for _, c := range bounds[1 : len(bounds)-1] {
		if validBound(c) {
			cuts = append(cuts, c)
		}
	}
	if len(cuts) == 0 {
		return nil
	}
	// Segment i keeps the range's own bounds and prefix, narrowed to
	// [cuts[i-1], cuts[i]): the cuts lie strictly between two keys of
	// the range.
	ranges := make([]Range, len(cuts)+1)
	for i := range ranges {
		ranges[i] = s.r
		if i > 0 {
			ranges[i].From = cuts[i-1]
		}
		if i < len(cuts) {
			ranges[i].Before = cuts[i]
		}
	}
	after := s.after
	s.segs = keyrange.ReadOrdered(ctx, len(ranges), keyrange.OrderedOptions{InFlight: g.inFlight, Buffer: segmentBuffer, Held: true},
		func(ctx context.Context, i int, send func([]*requirement.Requirement) error) error {
			var from Token
			if i == 0 {
				from = after // the first segment goes on after the first page
			}
			for {
				rows, next, err := s.store.Rows(ctx, s.tenant, ranges[i], from, g.pageSize)
				if err != nil {
					return fmt.Errorf("read requirements in key order: %w", err)
				}
				if len(rows) > 0 {
					if err := send(rows); err != nil {
						return err
					}
				}
				if next == "" {
					return nil
				}
				from = next
			}
		})
	g.readers = append(g.readers, s.segs.Close)
	return nil
}

// validBound reports whether a cut can bound a Range: made of bytes no
// lower than those of keys (see Range.From), as SplitLike's cuts between
// keys are.
func validBound(c string) bool {
	for i := 0; i < len(c); i++ {
		if c[i] < '-' {
			return false
		}
	}
	return c != ""
}
