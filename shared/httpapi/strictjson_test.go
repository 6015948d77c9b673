package httpapi

import (
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// pageRef decodes itself from a JSON string or integer, as
// wikibaselines' pageID does; "bad" is refused with an apperr error, and
// "boom" with a plain error (whose text must never reach a client).
type pageRef string

func (p *pageRef) UnmarshalJSON(data []byte) error {
	switch string(data) {
	case `"bad"`:
		return apperr.Invalidf("a page id must be a string or an integer")
	case `"boom"`:
		return errors.New("pageRef internals: boom")
	}
	*p = pageRef(strings.Trim(string(data), `"`))
	return nil
}

type strictItem struct {
	Key      string `json:"key"`
	Baseline *int   `json:"baselineNumber"`
}

// strictBody has a member of every shape request bodies use.
type strictBody struct {
	Name   string            `json:"name"`
	Count  int               `json:"count"`
	Tags   []string          `json:"tags"`
	Items  []strictItem      `json:"items"`
	Props  map[string]string `json:"props"`
	Raw    json.RawMessage   `json:"raw"`
	Page   pageRef           `json:"page"`
	Nested *struct {
		On bool `json:"on"`
	} `json:"nested"`
}

// TestUnmarshalRefusals checks each refusal of the strict decoder: a 400
// whose message says what and where, and whose errors names the member
// (never a Go type).
func TestUnmarshalRefusals(t *testing.T) {
	cases := []struct {
		name, body, msg string
		errors          map[string]string
	}{
		{"duplicate name", `{"name":"a","count":1,"name":"b"}`, `duplicate name "name"`,
			map[string]string{"name": "duplicate name"}},
		{"duplicate but for case", `{"name":"a","NAME":"b"}`, `duplicate name "NAME": equal but for case to "name"`,
			map[string]string{"NAME": `duplicate name: equal but for case to "name"`}},
		{"case variant alone", `{"Name":"a"}`, `unknown field "Name": the name is "name" (names are case-sensitive)`,
			map[string]string{"Name": `unknown field: the name is "name" (names are case-sensitive)`}},
		{"case variant nested", `{"items":[{"key":"a"},{"Key":"b"}]}`, `unknown field "Key" (at /items/1/Key): the name is "key"`,
			map[string]string{"Key": `unknown field: the name is "key" (names are case-sensitive)`}},
		{"unknown nested", `{"nested":{"off":true}}`, `unknown field "off" (at /nested/off)`,
			map[string]string{"off": "unknown field"}},
		{"map keys equal but for case", `{"props":{"Priority":"High","priority":"Low"}}`,
			`duplicate name "priority" (at /props/priority): equal but for case to "Priority"`,
			map[string]string{"priority": `duplicate name: equal but for case to "Priority"`}},
		{"map keys duplicate", `{"props":{"a":"1","a":"2"}}`, `duplicate name "a" (at /props/a)`,
			map[string]string{"a": "duplicate name"}},
		{"raw value keeps the rule", `{"raw":{"deep":[{"x":1,"X":2}]}}`, `duplicate name "X" (at /raw/deep/0/X)`,
			map[string]string{"X": `duplicate name: equal but for case to "x"`}},
		{"unknown member keeps the rule", `{"name":"a","extra":{"x":1,"X":2}}`, `duplicate name "X" (at /extra/X)`,
			map[string]string{"X": `duplicate name: equal but for case to "x"`}},
		{"Unicode case folding", `{"props":{"k":"1","\u212a":"2"}}`, "equal but for case", nil},
		{"Greek final sigma", `{"props":{"σ":"1","ς":"2"}}`, "equal but for case", nil},
		{"wrong type nested", `{"items":[{"key":"a","baselineNumber":"2"}]}`,
			"wrong JSON type for baselineNumber at /items/0/baselineNumber: got string, want an integer",
			map[string]string{"baselineNumber": "wrong JSON type: got string, want an integer"}},
		{"wrong type in an array", `{"tags":["a",2]}`, "wrong JSON type for the item at /tags/1: got number, want a string",
			map[string]string{"tags": "wrong JSON type: got number, want a string"}},
		{"wrong type in a map", `{"props":{"a":1}}`, "wrong JSON type for a at /props/a: got number, want a string", nil},
		{"wrong type for the body", `"x"`, "wrong JSON type for the body: got string, want an object", map[string]string{}},
		{"custom UnmarshalJSON refusal", `{"page":"bad"}`, "a page id must be a string or an integer",
			map[string]string{"page": "a page id must be a string or an integer"}},
		{"custom UnmarshalJSON failure", `{"page":"boom"}`, "invalid value for page",
			map[string]string{"page": "invalid value"}},
		{"trailing data", `{"name":"a"}{"name":"b"}`, "unexpected data after the JSON value at byte 12", map[string]string{}},
		{"empty", " \n", "malformed JSON: empty body", map[string]string{}},
		{"truncated", `{"items":[{"key":"a"`, "malformed JSON: unexpected end of body", map[string]string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var v strictBody
			err := Unmarshal([]byte(c.body), &v)
			e := apperr.As(err)
			if e == nil || !errors.Is(err, apperr.ErrInvalid) || !strings.Contains(e.Message, c.msg) {
				t.Fatalf("Unmarshal(%s) = %v, want a 400 containing %q", c.body, err, c.msg)
			}
			if c.errors != nil {
				got := map[string]string{}
				if e.Field != "" {
					got[e.Field] = e.Detail
				}
				if !maps.Equal(got, c.errors) {
					t.Errorf("errors = %v, want %v", got, c.errors)
				}
			}
			for _, leak := range []string{"Go ", "httpapi.", "struct", "int64", "pageRef", "internals"} {
				if strings.Contains(e.Message, leak) || strings.Contains(e.Detail, leak) {
					t.Errorf("message %q names %q", e.Message, leak)
				}
			}
		})
	}
}

// TestUnmarshalAccepts checks what the strict decoder keeps: exact names,
// custom UnmarshalJSON methods (github.com/go-json-experiment/json calls
// encoding/json's Unmarshaler), raw values as sent, distinct map keys.
func TestUnmarshalAccepts(t *testing.T) {
	body := `{"name":"n","count":2,"tags":["a"],"items":[{"key":"K","baselineNumber":null}],
		"props":{"Priority":"High","Risk":"Low"},"raw":{"a": [1, {"b":2}]},"page":123,"nested":{"on":true}}`
	var v strictBody
	if err := Unmarshal([]byte(body), &v); err != nil {
		t.Fatal(err)
	}
	if v.Name != "n" || v.Count != 2 || len(v.Tags) != 1 || len(v.Items) != 1 || v.Items[0].Key != "K" || v.Items[0].Baseline != nil ||
		len(v.Props) != 2 || string(v.Raw) != `{"a": [1, {"b":2}]}` || v.Page != "123" || v.Nested == nil || !v.Nested.On {
		t.Fatalf("decoded %+v", v)
	}
	var page pageRef
	if err := Unmarshal([]byte(`"p-1"`), &page); err != nil || page != "p-1" {
		t.Fatalf("custom type at the top: %q %v", page, err)
	}
}

// TestUnmarshalIgnoringUnknown checks the decoder of formats that may gain
// members: unknown members are skipped, but a declared member in another
// case and duplicate names are still refused.
func TestUnmarshalIgnoringUnknown(t *testing.T) {
	var v strictBody
	if err := UnmarshalIgnoringUnknown([]byte(`{"name":"a","colour":"red","items":[{"key":"k","since":5}],"nested":{"on":true,"x":{}}}`), &v); err != nil ||
		v.Name != "a" || v.Items[0].Key != "k" || !v.Nested.On {
		t.Fatalf("unknown members: %+v %v", v, err)
	}
	for body, msg := range map[string]string{
		`{"Name":"a"}`:                   `unknown field "Name": the name is "name"`,
		`{"items":[{"KEY":"k"}]}`:        `unknown field "KEY" (at /items/0/KEY): the name is "key"`,
		`{"colour":"a","Colour":"b"}`:    `duplicate name "Colour"`,
		`{"name":"a","name":"a"}`:        `duplicate name "name"`,
		`{"name":"a"} x`:                 "unexpected data",
		`{"count":"x","colour":"red"}`:   "wrong JSON type for count",
		`{"colour":{"a":1,"a":2}}`:       `duplicate name "a" (at /colour/a)`,
		`{"name":"a","page":"bad"}`:      "a page id must be",
		"{\"name\":\"\xff\"}":            "not valid UTF-8",
		`{"name":"a", "colour":"\ud800"`: "malformed JSON",
	} {
		var v strictBody
		err := UnmarshalIgnoringUnknown([]byte(body), &v)
		if !errors.Is(err, apperr.ErrInvalid) || !strings.Contains(apperr.As(err).Message, msg) {
			t.Errorf("UnmarshalIgnoringUnknown(%s) = %v, want a 400 containing %q", body, err, msg)
		}
	}
}

// TestFoldNameIsEqualFold checks, over every rune, that FoldName groups
// exactly the runes strings.EqualFold holds equal.
func TestFoldNameIsEqualFold(t *testing.T) {
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		s, folded := string(r), FoldName(string(r))
		if !strings.EqualFold(s, folded) {
			t.Fatalf("FoldName(%q) = %q: not equal but for case", s, folded)
		}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if FoldName(string(f)) != folded {
				t.Fatalf("FoldName(%q) = %q but FoldName(%q) = %q", s, folded, string(f), FoldName(string(f)))
			}
		}
	}
	for _, pair := range [][2]string{{"title", "TITLE"}, {"Title", "tItLe"}, {"k", "\u212a"}, {"straße", "STRAßE"}} {
		if FoldName(pair[0]) != FoldName(pair[1]) {
			t.Errorf("FoldName(%q) != FoldName(%q)", pair[0], pair[1])
		}
	}
	for _, pair := range [][2]string{{"i", "ı"}, {"straße", "STRASSE"}, {"a", "b"}, {"ab", "a"}} {
		if FoldName(pair[0]) == FoldName(pair[1]) {
			t.Errorf("FoldName(%q) == FoldName(%q)", pair[0], pair[1])
		}
	}
}
