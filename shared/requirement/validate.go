package requirement

import (
	"strings"
)

// HasControl reports whether s holds a control character: U+0000 to U+001F
// or U+007F. Names, keys, titles, labels, relationships and tokens never
// hold one (a 400 naming the field); page bodies are checked with
// HasControlExceptWhitespace.
func HasControl(s string) bool {
	return strings.ContainsFunc(s, isControl)
}

// HasControlExceptWhitespace is HasControl allowing tab, LF and CR: the rule
// for page bodies (multi-line text, as XML 1.0 allows).
func HasControlExceptWhitespace(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool {
		return isControl(r) && r != '\t' && r != '\n' && r != '\r'
	})
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// ValidLinkID reports whether id can name an integration (serviceId) or an
// application link (applinkId): 1 to 64 letters, digits, '.', '_' or '-',
// and neither "." nor "..". Such ids become parts of storage keys, URL
// paths and queue message groups, so they never hold '/', '#', ':' or
// spaces, and never name a path's current or parent directory.
func ValidLinkID(id string) bool {
	return validChars(id, 64, "._-") && id != "." && id != ".."
}
