package keyrange

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSplitLike checks that keys spread over digits are cut into ranges
// of about equal size (Split, interpolating whole bytes, puts most of them
// in few ranges), with bounds made of the keys' bytes only.
func TestSplitLike(t *testing.T) {
	t.Parallel()
	var keys []string
	for i := range 100000 {
		keys = append(keys, fmt.Sprintf("REQ-%06d", i))
	}
	bounds := SplitLike(keys[500], keys[len(keys)-1], 64, keys[:500])
	if len(bounds) < 60 || len(bounds) > 65 {
		t.Fatalf("%d bounds, want about 65: %q", len(bounds), bounds)
	}
	if !slices.IsSorted(bounds) || bounds[0] != keys[500] || bounds[len(bounds)-1] != keys[len(keys)-1] {
		t.Fatalf("bounds not ascending from lo to hi: %q", bounds)
	}
	for i, b := range bounds[1 : len(bounds)-1] {
		if strings.IndexFunc(b, func(r rune) bool { return r < '-' || r > 'Z' }) >= 0 {
			t.Fatalf("bound %d %q holds a byte no key holds", i, b)
		}
		lo, _ := slices.BinarySearch(keys, bounds[i])
		hi, _ := slices.BinarySearch(keys, bounds[i+1])
		if n := hi - lo; n < 500 || n > 2500 { // within a factor of 3 of the mean
			t.Errorf("range %d [%q, %q) holds %d keys, want about %d", i, bounds[i], bounds[i+1], n, 99500/64)
		}
	}
	if got := Estimate(keys[0], keys[499], keys[len(keys)-1], 500, keys[:500]); got < 80000 || got > 130000 {
		t.Errorf("Estimate = %d, want about 100000", got)
	}
	if got := SplitLike("A", "A", 4, nil); !slices.Equal(got, []string{"A", "A"}) {
		t.Errorf("SplitLike(A, A) = %q", got)
	}
}

// TestReadOrdered checks that the items come in segment order whatever
// order the segments are read in, that at most InFlight segments run (and,
// Held, hold items) at once, and that a segment's error or Close stops
// every reader.
func TestReadOrdered(t *testing.T) {
	t.Parallel()
	const n, per = 20, 7
	for _, held := range []bool{false, true} {
		var running, most atomic.Int32
		o := ReadOrdered(context.Background(), n, OrderedOptions{InFlight: 3, Buffer: 2, Held: held},
			func(ctx context.Context, i int, send func(int) error) error {
				defer running.Add(-1)
				if r := running.Add(1); r > most.Load() {
					most.Store(r)
				}
				time.Sleep(time.Duration((n-i)%4) * time.Millisecond) // later segments finish first
				for j := range per {
					if err := send(i*per + j); err != nil {
						return err
					}
				}
				return nil
			})
		var got []int
		for {
			v, ok, err := o.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			got = append(got, v)
		}
		o.Close()
		want := make([]int, n*per)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(got, want) {
			t.Fatalf("held %v: got %v", held, got)
		}
		if most.Load() > 3 {
			t.Errorf("held %v: %d segments read at once, want at most 3", held, most.Load())
		}
	}

	// Close while every reader runs: none is left running.
	var running atomic.Int32
	o := ReadOrdered(context.Background(), n, OrderedOptions{InFlight: 4, Buffer: 1, Held: true},
		func(ctx context.Context, i int, send func(int) error) error {
			running.Add(1)
			defer running.Add(-1)
			for j := 0; ; j++ { // endless: only the context stops it
				if err := send(i*1000 + j); err != nil {
					return err
				}
			}
		})
	var got []int
	var err error
	for {
		var v int
		var ok bool
		if v, ok, err = o.Next(); err != nil || !ok || v >= 1000 {
			break // segment 0 never ends: take a few of segment 1
		}
		got = append(got, v)
	}
	if err != nil || len(got) != 1000 {
		t.Fatalf("took %d items of segment 0, err %v", len(got), err)
	}
	o.Close()
	if r := running.Load(); r != 0 {
		t.Fatalf("%d readers still running after Close", r)
	}
	// A failing segment: its error comes after the items before it.
	boom := errors.New("boom")
	o2 := ReadOrdered(context.Background(), 4, OrderedOptions{InFlight: 4, Buffer: 1, Held: true},
		func(ctx context.Context, i int, send func(int) error) error {
			if i == 2 {
				return boom
			}
			return send(i)
		})
	defer o2.Close()
	var seen []int
	for {
		v, ok, err := o2.Next()
		if err != nil {
			if !errors.Is(err, boom) || !slices.Equal(seen, []int{0, 1}) {
				t.Fatalf("got %v then %v, want [0 1] then boom", seen, err)
			}
			break
		}
		if !ok {
			t.Fatalf("ended without segment 2's error, after %v", seen)
		}
		seen = append(seen, v)
	}
}
