// Package keyrange cuts a range of sort keys into key ranges of about equal
// width, so that one ordered read can be split into segments read in
// parallel (the baseline freeze, the diff). It knows nothing of the keys'
// meaning: it works on the bytes of strings, in the order DynamoDB sorts
// string keys (UTF-8 bytes), which is Go's string order.
package keyrange

import (
	"strings"
	"unicode/utf8"
)

// digits is how many bytes after the common prefix are interpolated.
const digits = 3

// Split returns lo, up to k-1 keys strictly between lo and hi, and hi, in
// strictly ascending order: the bounds of at most k key ranges of about
// equal width. The keys in between are interpolated on the three bytes
// after the common prefix of lo and hi, as base-128 digits, so they are
// ASCII (valid DynamoDB strings) and sort like the keys. Keys spread
// evenly over that width give ranges of about equal size; bounds that
// would not fall strictly between their neighbours are left out, so
// Split(lo, lo, k) is [lo, lo] and a narrow range yields fewer ranges.
func Split(lo, hi string, k int) []string {
	p := 0
	for p < len(lo) && p < len(hi) && lo[p] == hi[p] {
		p++
	}
	num := func(s string) int {
		v := 0
		for i := range digits {
			c := 0
			if p+i < len(s) {
				c = int(s[p+i] & 0x7f)
			}
			v = v*128 + c
		}
		return v
	}
	a, b := num(lo), num(hi)
	out := []string{lo}
	for i := 1; i < k; i++ {
		v := a + (b-a)*i/k
		buf := make([]byte, digits)
		for j := digits - 1; j >= 0; j-- {
			buf[j] = byte(v % 128)
			v /= 128
		}
		key := strings.TrimRight(lo[:p]+string(buf), "\x00")
		if key > out[len(out)-1] && key < hi {
			out = append(out, key)
		}
	}
	return append(out, hi)
}

// PrefixEnd returns the least string greater than every string that starts
// with p, in UTF-8 byte order (which is code point order), so that the
// strings starting with p are exactly those s with p <= s < PrefixEnd(p):
// p with its last code point incremented (skipping the surrogates, which
// UTF-8 cannot hold), after dropping trailing U+10FFFF. The result is valid
// UTF-8 whenever p is, so it can bound a DynamoDB key condition (p plus a
// byte 0xFF would not be). A p that is not valid UTF-8 gets its last byte
// below 0xFF incremented. It returns "" when no such string exists (p empty
// or only U+10FFFF): the range has no upper end.
func PrefixEnd(p string) string {
	if !utf8.ValidString(p) {
		b := []byte(p)
		for len(b) > 0 && b[len(b)-1] == 0xff {
			b = b[:len(b)-1]
		}
		if len(b) == 0 {
			return ""
		}
		b[len(b)-1]++
		return string(b)
	}
	r := []rune(p)
	for len(r) > 0 && r[len(r)-1] == utf8.MaxRune {
		r = r[:len(r)-1]
	}
	if len(r) == 0 {
		return ""
	}
	switch last := r[len(r)-1]; last {
	case 0xD7FF:
		r[len(r)-1] = 0xE000
	default:
		r[len(r)-1] = last + 1
	}
	return string(r)
}
