package httpapitest

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// StrictJSONCase is a request body the strict decoder (httpapi.Unmarshal)
// must refuse with a 400 whose message holds Message and, when Field is not
// empty, whose errors names Field.
type StrictJSONCase struct {
	Name, Body, Message, Field string
}

// StrictJSONCases derives from valid, a body a route accepts, the bodies
// that break the input rules of issue 15 at its member name: name twice;
// name and the same name but for case (its first letter upper-cased); that
// other case alone (an unknown field: names are case-sensitive); and
// trailing data after the value. The members are added to the object that
// holds the first "name": of valid (so no other object may open between
// that object's '{' and the member); value is a JSON value name may take.
func StrictJSONCases(valid, name, value string) []StrictJSONCase {
	r, size := utf8.DecodeRuneInString(name)
	other := string(unicode.ToUpper(r)) + name[size:]
	quoted := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	open := strings.LastIndex(valid[:strings.Index(valid, quoted(name)+":")], "{") + 1
	insert := func(members string) string { return valid[:open] + members + "," + valid[open:] }
	return []StrictJSONCase{
		{"duplicate name", insert(quoted(name) + ":" + value), "duplicate name " + quoted(name), name},
		{"duplicate name but for case", insert(quoted(name) + ":" + value + "," + quoted(other) + ":" + value),
			"duplicate name " + quoted(other), other},
		{"name in another case", strings.Replace(valid, quoted(name)+":", quoted(other)+":", 1),
			"unknown field " + quoted(other), other},
		{"trailing value", valid + " {}", "unexpected data after the JSON value", ""},
		{"trailing garbage", valid + "x", "unexpected data after the JSON value", ""},
	}
}

// CheckStrictJSON fails t unless the answer (status and raw JSON error
// body) is the refusal c describes.
func CheckStrictJSON(t testing.TB, c StrictJSONCase, status int, body []byte) {
	t.Helper()
	var eb struct {
		Message string            `json:"message"`
		Errors  map[string]string `json:"errors"`
	}
	if err := json.Unmarshal(body, &eb); err != nil || status != 400 || !strings.Contains(eb.Message, c.Message) {
		t.Errorf("%s: %s → %d %s, want 400 with %q", c.Name, c.Body, status, body, c.Message)
		return
	}
	if _, named := eb.Errors[c.Field]; c.Field != "" && !named {
		t.Errorf("%s: %s → errors %v, want %q named", c.Name, c.Body, eb.Errors, c.Field)
	}
}
