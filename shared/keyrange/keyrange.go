// Package keyrange cuts a range of sort keys into key ranges of about equal
// width, so that one ordered read can be split into segments read in
// parallel (the baseline freeze, the diff, the export of a search), and
// reads such segments in parallel handing their items over in order
// (ReadOrdered). It knows nothing of the keys' meaning: it works on the
// bytes of strings, in the order DynamoDB sorts string keys (UTF-8 bytes),
// which is Go's string order.
package keyrange

import (
	"math"
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

// sampledDigits is how many bytes after the common prefix SplitLike and
// Estimate interpolate.
const sampledDigits = 4

// scale numbers the keys that share a prefix of p bytes by their
// sampledDigits bytes after it, each a digit whose base spans the bytes
// seen at that position in a sample of keys (0 for no byte: the key has
// ended), so keys spread over a few byte values (digits, letters) are
// numbered densely. The numbering keeps the keys' order (it may tie).
type scale struct {
	p         int
	low, base [sampledDigits]int
}

func newScale(p string, sample []string) scale {
	sc := scale{p: len(p)}
	for i := range sampledDigits {
		lo, hi := 256, -1
		for _, s := range sample {
			if sc.p+i < len(s) {
				lo, hi = min(lo, int(s[sc.p+i])), max(hi, int(s[sc.p+i]))
			}
		}
		if hi < 0 {
			lo, hi = 0, 0
		}
		sc.low[i], sc.base[i] = lo, hi-lo+2
	}
	return sc
}

// num is the number of s (which starts with the scale's prefix). Bytes
// outside a position's span are clamped to it, which keeps the order.
func (sc scale) num(s string) int64 {
	var v int64
	for i := range sampledDigits {
		d := 0
		if sc.p+i < len(s) {
			d = min(max(int(s[sc.p+i])-sc.low[i]+1, 1), sc.base[i]-1)
		}
		v = v*int64(sc.base[i]) + int64(d)
	}
	return v
}

// key is the least key of number at most v: the prefix, then the digits
// up to the first 0 (an ended key).
func (sc scale) key(prefix string, v int64) string {
	var d [sampledDigits]int
	for i := sampledDigits - 1; i >= 0; i-- {
		d[i] = int(v % int64(sc.base[i]))
		v /= int64(sc.base[i])
	}
	b := []byte(prefix)
	for i := range sampledDigits {
		if d[i] == 0 {
			break
		}
		b = append(b, byte(sc.low[i]+d[i]-1))
	}
	return string(b)
}

func commonPrefix(a, b string) string {
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		p++
	}
	return a[:p]
}

// SplitLike is Split for keys of which a sample is known (keys read
// already, in any order): the bounds between lo and hi are interpolated
// on the four bytes after the common prefix of lo and hi, each within the
// bytes lo, hi and the sample hold at that position, so that keys spread
// over few byte values (REQ-000123: digits) are cut into ranges of about
// equal size, and every bound is made of bytes the keys hold (free of the
// bytes below them, which sort differently in indexes whose sort keys
// continue the key). Bounds that would not fall strictly between their
// neighbours are left out.
func SplitLike(lo, hi string, k int, sample []string) []string {
	prefix := commonPrefix(lo, hi)
	sc := newScale(prefix, append([]string{lo, hi}, sample...))
	a, b := sc.num(lo), sc.num(hi)
	out := []string{lo}
	for i := 1; i < k; i++ {
		key := sc.key(prefix, a+(b-a)*int64(i)/int64(k))
		if key > out[len(out)-1] && key < hi {
			out = append(out, key)
		}
	}
	return append(out, hi)
}

// Estimate returns about how many keys lie from first to hi, given that n
// keys lie from first to last (first <= last <= hi) and sample is some of
// them: n scaled by the width of [first, hi] over that of [first, last],
// numbered as SplitLike does. It returns math.MaxInt when [first, last]
// is too narrow to measure.
func Estimate(first, last, hi string, n int, sample []string) int {
	prefix := commonPrefix(first, hi)
	sc := newScale(prefix, append([]string{first, last, hi}, sample...))
	f, l, h := sc.num(first), sc.num(last), sc.num(hi)
	if l <= f {
		return math.MaxInt
	}
	return int(min(float64(n)*float64(h-f)/float64(l-f), math.MaxInt/2))
}
