package query

import "strings"

// isNumber reports whether s is -?digits(.digits)?, the NUMBER syntax.
// Comparisons treat such texts as numbers, whichever way they were written.
func isNumber(s string) bool {
	s = strings.TrimPrefix(s, "-")
	whole, frac, dot := strings.Cut(s, ".")
	return allDigits(whole) && (!dot || allDigits(frac))
}

func allDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isDigit(s[i]) {
			return false
		}
	}
	return true
}

// compareNumbers compares two texts for which isNumber holds, exactly (no
// floating point: page ids and baselines may be long).
func compareNumbers(a, b string) int {
	negA, wholeA, fracA := splitNumber(a)
	negB, wholeB, fracB := splitNumber(b)
	if negA != negB {
		if negA {
			return -1
		}
		return 1
	}
	c := compareMagnitudes(wholeA, fracA, wholeB, fracB)
	if negA {
		return -c
	}
	return c
}

// splitNumber returns the sign and the digits of a number without leading
// zeros of the whole part or trailing zeros of the fraction; zero is never
// negative.
func splitNumber(s string) (neg bool, whole, frac string) {
	neg = strings.HasPrefix(s, "-")
	whole, frac, _ = strings.Cut(strings.TrimPrefix(s, "-"), ".")
	whole = strings.TrimLeft(whole, "0")
	frac = strings.TrimRight(frac, "0")
	return neg && (whole != "" || frac != ""), whole, frac
}

func compareMagnitudes(wholeA, fracA, wholeB, fracB string) int {
	if len(wholeA) != len(wholeB) {
		return sign(len(wholeA) - len(wholeB))
	}
	if c := strings.Compare(wholeA, wholeB); c != 0 {
		return c
	}
	return strings.Compare(fracA, fracB) // no trailing zeros: byte order is numeric order
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// compareValues is the order of `<`, `<=`, `>`, `>=`: numeric when both
// sides are numbers, byte-wise otherwise (so ISO dates compare correctly).
func compareValues(a, b string) int {
	if isNumber(a) && isNumber(b) {
		return compareNumbers(a, b)
	}
	return strings.Compare(a, b)
}

// orderValues is a total order for sorting: numbers first, in numeric order
// (ties broken byte-wise), then other texts byte-wise. compareValues is not
// transitive across numbers and texts, so sorting cannot use it.
func orderValues(a, b string) int {
	numA, numB := isNumber(a), isNumber(b)
	switch {
	case numA && numB:
		if c := compareNumbers(a, b); c != 0 {
			return c
		}
	case numA:
		return -1
	case numB:
		return 1
	}
	return strings.Compare(a, b)
}

// like reports whether s matches the `~` pattern p, case-insensitively:
// '%' matches any run of characters (also none), '\' makes the next byte
// literal, every other character (including '_') matches itself.
func like(s, p string) bool {
	return matchSegments(Fold(s), likeSegments(p))
}

// likeSegments splits p at its unescaped '%' into folded literal segments:
// n wildcards give n+1 segments.
func likeSegments(p string) []string {
	var segs []string
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			i++
			b.WriteByte(p[i])
		case c == '%':
			segs = append(segs, Fold(b.String()))
			b.Reset()
		default:
			b.WriteByte(c)
		}
	}
	return append(segs, Fold(b.String()))
}

// matchSegments matches s against literal segments separated by wildcards:
// the first is a prefix, the last a suffix of what remains, the others are
// found left to right (leftmost is always a safe choice when the only
// wildcard is '%').
func matchSegments(s string, segs []string) bool {
	if len(segs) == 1 {
		return s == segs[0]
	}
	if !strings.HasPrefix(s, segs[0]) {
		return false
	}
	s = s[len(segs[0]):]
	last := len(segs) - 1
	for _, seg := range segs[1:last] {
		i := strings.Index(s, seg)
		if i < 0 {
			return false
		}
		s = s[i+len(seg):]
	}
	return strings.HasSuffix(s, segs[last])
}

// likePrefix returns the literal text of p when its only wildcard is one
// trailing '%' (prefix true), or when it has none (prefix false); ok is false
// for any other pattern. The text is folded.
func likePrefix(p string) (text string, prefix, ok bool) {
	segs := likeSegments(p)
	switch {
	case len(segs) == 1:
		return segs[0], false, true
	case len(segs) == 2 && segs[0] != "" && segs[1] == "":
		return segs[0], true, true
	}
	return "", false, false
}

// likeLiteral returns the text a `~` pattern without wildcards stands for,
// its escapes resolved as like resolves them ('\' makes the next byte
// literal; a trailing '\' is itself); ok is false when p holds an
// unescaped '%'. Unlike likePrefix it keeps the case.
func likeLiteral(p string) (text string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			i++
			b.WriteByte(p[i])
		case c == '%':
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}
