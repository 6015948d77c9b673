package keyrange

import (
	"context"
	"sync"
)

// Ordered reads the segments of a cut range in parallel and hands their
// items over in segment order: the items of segment 0, then those of
// segment 1, and so on. Segments are started in order, InFlight at a
// time; the first segment not yet taken is always among those started
// and is taken as it is read, so the others wait for it at worst, never
// for each other (no deadlock). Each segment holds at most Buffer items
// ready (and the one it is sending) before it waits for its turn.
//
// The reader of a segment stops when its context ends: when the caller's
// context does, or at Close. A segment's error is returned by Next once
// the items of the segments before it are taken (those segments are read
// to their end, or until Close).
type Ordered[T any] struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	runs   []*segmentRun[T]
	slots  chan struct{}
	// held: a segment keeps its slot until its last item is taken, so at
	// most InFlight segments hold items at once (rather than until it has
	// read its last item, after which it holds up to Buffer items without
	// a slot).
	held bool
	cur  int
	err  error
}

// segmentRun is one segment being read: its items in order (closed when
// its reader returns), then, once done is closed, the reader's error.
type segmentRun[T any] struct {
	items chan T
	done  chan struct{}
	err   error
}

// OrderedOptions bound an Ordered read.
type OrderedOptions struct {
	// InFlight is how many segments are read at once (at least 1).
	InFlight int
	// Buffer is how many items a segment not yet being taken holds
	// before its reader waits (0: none, every send waits for the taker).
	Buffer int
	// Held keeps a segment's slot until its last item is taken, so that
	// at most InFlight segments hold items at once; without it the slot
	// is freed when the segment's reader returns, and a finished segment
	// keeps up to Buffer items while the next one starts.
	Held bool
}

// ReadOrdered starts reading n segments: read(ctx, i, send) reads segment
// i and calls send with each of its items in order; send returns an error
// (the context's) when the read is being stopped, which read returns.
// Take the items with Next; Close stops and waits for every reader, and
// must be called.
func ReadOrdered[T any](ctx context.Context, n int, opt OrderedOptions, read func(ctx context.Context, i int, send func(T) error) error) *Ordered[T] {
	ctx, cancel := context.WithCancel(ctx)
	o := &Ordered[T]{cancel: cancel, runs: make([]*segmentRun[T], n), slots: make(chan struct{}, max(opt.InFlight, 1)), held: opt.Held}
	for i := range o.runs {
		o.runs[i] = &segmentRun[T]{items: make(chan T, max(opt.Buffer, 0)), done: make(chan struct{})}
	}
	o.wg.Go(func() {
		for i, r := range o.runs {
			select {
			case o.slots <- struct{}{}:
			case <-ctx.Done():
				for _, r := range o.runs[i:] {
					r.err = ctx.Err()
					close(r.items)
					close(r.done)
				}
				return
			}
			o.wg.Go(func() {
				if !o.held {
					defer func() { <-o.slots }()
				}
				defer close(r.done)
				defer close(r.items)
				r.err = read(ctx, i, func(v T) error {
					select {
					case r.items <- v:
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				})
			})
		}
	})
	return o
}

// Next returns the next item in segment order, false after the last one.
// A segment's error is returned once its items before it are taken, and
// again by every later call.
func (o *Ordered[T]) Next() (T, bool, error) {
	var zero T
	for o.err == nil && o.cur < len(o.runs) {
		r := o.runs[o.cur]
		if v, ok := <-r.items; ok {
			return v, true, nil
		}
		<-r.done
		if r.err != nil {
			o.err = r.err
			break
		}
		o.cur++
		if o.held {
			<-o.slots
		}
	}
	return zero, false, o.err
}

// Close stops the readers still running and waits for them all. With
// Held, the slots of segments not taken are never freed, so the starter
// sees the context's end at its next start at the latest.
func (o *Ordered[T]) Close() {
	o.cancel()
	o.wg.Wait()
}
