package keyrange

import (
	"fmt"
	"slices"
	"testing"
)

// TestSplit checks that Split cuts a key range into ascending
// ASCII bounds that divide evenly distributed keys about evenly.
func TestSplit(t *testing.T) {
	t.Parallel()
	var keys []string
	for i := range 100000 {
		keys = append(keys, fmt.Sprintf("R#REQ-%07d", i))
	}
	cases := []struct {
		lo, hi string
		k      int
		want   int // ranges
	}{
		{keys[0], keys[len(keys)-1], 4, 4},
		{keys[0], keys[len(keys)-1], 1, 1},
		{"R#A", "R#ZZZZ", 8, 8},
		{"R#A", "R#A", 4, 1},
		{"R#A", "R#A0", 4, 4},
		{"R#A", "R#A\x00", 4, 1}, // nothing fits between
		{"R#A-1", "R#B-1", 4, 4},
	}
	for _, c := range cases {
		b := Split(c.lo, c.hi, c.k)
		if len(b)-1 != c.want || b[0] != c.lo || b[len(b)-1] != c.hi || !slices.IsSorted(b) {
			t.Errorf("Split(%q, %q, %d) = %q", c.lo, c.hi, c.k, b)
		}
		for _, s := range b {
			for _, r := range s {
				if r >= 0x80 {
					t.Errorf("bound %q is not ASCII", s)
				}
			}
		}
	}
	b := Split(keys[0], keys[len(keys)-1], 4)
	for i := 1; i < len(b); i++ {
		lo, _ := slices.BinarySearch(keys, b[i-1])
		hi, _ := slices.BinarySearch(keys, b[i])
		if n := hi - lo; n < 15000 || n > 35000 {
			t.Errorf("range %d [%q, %q) holds %d of 100000 keys", i, b[i-1], b[i], n)
		}
	}
}
