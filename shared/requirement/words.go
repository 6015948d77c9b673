package requirement

import (
	"strings"
	"unicode"
)

// Words returns the distinct words of s, in order of first appearance: the
// maximal runs of Unicode letters and digits (unicode.IsLetter,
// unicode.IsDigit) of s folded as the query language folds it
// (strings.ToUpper, query.Fold); every other character separates words.
// "The log-in of user 12" gives THE, LOG, IN, OF, USER, 12. The word index
// of the search holds the words of each ACTIVE requirement's key and text,
// so a word of a search pattern that is whole (separated from the rest of
// the pattern, or at an anchored end) is one of them exactly.
func Words(s string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToUpper(s), func(r rune) bool { return !IsWordRune(r) }) {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

// IsWordRune reports whether r belongs to a word (Words): a letter or a
// digit.
func IsWordRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
