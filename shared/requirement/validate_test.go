package requirement

import (
	"regexp"
	"strings"
	"testing"
)

func TestHasControl(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in              string
		control, inBody bool
	}{
		{"", false, false},
		{"Login page", false, false},
		{"é ü 日本 \u0080", false, false}, // only C0 and DEL count
		{"a\x00b", true, true},
		{"a\x1fb", true, true},
		{"a\x7fb", true, true},
		{"a\tb", true, false},
		{"a\nb", true, false},
		{"a\r\nb", true, false},
		{"\x1b[31m", true, true},
	} {
		if got := HasControl(tc.in); got != tc.control {
			t.Errorf("HasControl(%q) = %v, want %v", tc.in, got, tc.control)
		}
		if got := HasControlExceptWhitespace(tc.in); got != tc.inBody {
			t.Errorf("HasControlExceptWhitespace(%q) = %v, want %v", tc.in, got, tc.inBody)
		}
	}
}

func TestValidLinkID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in string
		ok bool
	}{
		{"jira-1", true}, {"Wiki_2", true}, {"a.b", true}, {"...", true}, {".hidden", true},
		{"0f8c2a4e-6b1d-4c3a-9e2f-1a2b3c4d5e6f", true}, {strings.Repeat("a", 64), true},
		{"", false}, {".", false}, {"..", false}, {strings.Repeat("a", 65), false},
		{"a:b", false}, {"a/b", false}, {"a#b", false}, {"a b", false}, {"a\x00", false}, {"é", false}, {"a\n", false},
	} {
		if got := ValidLinkID(tc.in); got != tc.ok {
			t.Errorf("ValidLinkID(%q) = %v, want %v", tc.in, got, tc.ok)
		}
	}
}

// FuzzValidNames: the hand-written checks of keys, space keys and link ids
// accept exactly what their regular expressions accept.
func FuzzValidNames(f *testing.F) {
	for _, s := range []string{"", "REQ-1", "a.b_c-d", "SPACE_1", "é", "a b", ".", "..", "x/y", "#", strings.Repeat("a", 64),
		strings.Repeat("a", 65), strings.Repeat("K", 255), strings.Repeat("K", 256), "A\x00", "Z9"} {
		f.Add(s)
	}
	key := regexp.MustCompile(`^[A-Za-z0-9_.\-]{1,255}$`)
	space := regexp.MustCompile(`^[A-Za-z0-9_]{1,255}$`)
	link := regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := ValidKey(s), key.MatchString(s); got != want {
			t.Errorf("ValidKey(%q) = %v, want %v", s, got, want)
		}
		if got, want := ValidSpaceKey(s), space.MatchString(s); got != want {
			t.Errorf("ValidSpaceKey(%q) = %v, want %v", s, got, want)
		}
		if got, want := ValidLinkID(s), link.MatchString(s) && s != "." && s != ".."; got != want {
			t.Errorf("ValidLinkID(%q) = %v, want %v", s, got, want)
		}
	})
}
