package keyrange

import (
	"fmt"
	"slices"
	"testing"
	"unicode/utf8"
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

func TestPrefixEnd(t *testing.T) {
	t.Parallel()
	tests := []struct{ p, want string }{
		{"", ""},
		{"REQ-05", "REQ-06"},
		{"A_", "A`"},
		{"a\x7f", "a\u0080"},
		{"é", "ê"},
		{"x\uD7FF", "x\uE000"},
		{"x\uFFFF", "x\U00010000"},
		{"x\U0010FFFF", "y"},
		{"\U0010FFFF\U0010FFFF", ""},
		{"a\xff", "b"},
	}
	for _, tt := range tests {
		if got := PrefixEnd(tt.p); got != tt.want {
			t.Errorf("PrefixEnd(%q) = %q, want %q", tt.p, got, tt.want)
		}
	}
	// Every string with the prefix sorts below the end, and the end is
	// valid UTF-8 when the prefix is.
	for _, p := range []string{"REQ-05", "é", "x\uD7FF", "日本", "a\U0010FFFF"} {
		end := PrefixEnd(p)
		if !utf8.ValidString(end) {
			t.Errorf("PrefixEnd(%q) = %q: not UTF-8", p, end)
		}
		for _, s := range []string{p, p + "\U0010FFFF\U0010FFFF", p + "\uffff", p + "z"} {
			if !(p <= s && s < end) {
				t.Errorf("%q not in [%q, %q)", s, p, end)
			}
		}
		if end <= p {
			t.Errorf("PrefixEnd(%q) = %q not above it", p, end)
		}
	}
}
