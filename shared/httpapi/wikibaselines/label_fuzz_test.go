package wikibaselines

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// FuzzJSONStringLiteral checks the rule of a text/plain label: a body is
// decoded exactly when, surrounding white space aside, it is one valid
// JSON string literal (valid as the request decoder reads JSON), and then
// to what a JSON decoder reads.
func FuzzJSONStringLiteral(f *testing.F) {
	for _, s := range []string{`"v1.0"`, "\"v1.0\"\n", `v1.0`, `""`, `"`, `"a" "b"`, `"a" and "b"`, `"C:\path"`,
		`"\u00e9"`, `"\ud800"`, `null`, `"x`, ` "x" `, `"a\nb"`, "\"a\x00b\"", `'x'`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, ok := jsonStringLiteral(text)
		trimmed := strings.TrimSpace(text)
		// Valid as every request body must be: jsontext refuses what the
		// strict decoder refuses (an escaped lone surrogate such as
		// "\ud800", which encoding/json would turn into U+FFFD).
		isLiteral := strings.HasPrefix(trimmed, `"`) && jsontext.Value(trimmed).IsValid()
		if ok != isLiteral {
			t.Fatalf("%q: decoded %v, want %v", text, ok, isLiteral)
		}
		if !ok {
			return
		}
		var want string
		if err := json.NewDecoder(strings.NewReader(trimmed)).Decode(&want); err != nil || got != want {
			t.Fatalf("%q: %q, want %q (%v)", text, got, want, err)
		}
	})
}
