package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// fuzzRef decodes itself, as wikibaselines' pageID does: a JSON string or a
// JSON integer (kept as written); anything else is an apperr 400.
type fuzzRef string

func (p *fuzzRef) UnmarshalJSON(data []byte) error {
	v := jsontext.Value(data)
	switch v.Kind() {
	case 'n':
		return nil
	case '"':
		var s string
		if err := Unmarshal(data, &s); err != nil {
			return err
		}
		*p = fuzzRef(s)
		return nil
	case '0':
		if _, err := strconv.ParseInt(string(data), 10, 64); err == nil {
			*p = fuzzRef(data)
			return nil
		}
	}
	return apperr.Invalidf("a reference must be a string or an integer")
}

type fuzzNested struct {
	On bool `json:"on"`
}

// fuzzBody has a member of every shape request bodies use.
type fuzzBody struct {
	Name   string            `json:"name"`
	Count  int               `json:"count"`
	Tags   []string          `json:"tags"`
	Nested *fuzzNested       `json:"nested"`
	Props  map[string]string `json:"props"`
	Raw    json.RawMessage   `json:"raw"`
	Ref    fuzzRef           `json:"ref"`
}

// FuzzUnmarshal checks the strict decoder used by every route:
//   - it never panics, and classifies every failure as a client error
//     (400), so no body can produce a 500;
//   - a body it accepts is one well-formed UTF-8 JSON value in which no
//     object holds two names equal but for case (checked by a token walk of
//     its own, with strings.EqualFold);
//   - what it accepts decodes the same again, and encoding the value and
//     decoding that gives a value that encodes the same;
//   - UnmarshalIgnoringUnknown refuses only with 400s, keeps the names rule,
//     and decodes what Unmarshal accepts the same way.
//
// `go test` runs the seeds below.
func FuzzUnmarshal(f *testing.F) {
	for _, seed := range []string{
		`{"name":"a","count":1,"tags":["x"],"nested":{"on":true}}`,
		`{"name":`, `{"count":"1"}`, `{"nmae":1}`, `[]`, `null`, `{} {}`, "\xff", `{"count":1e400}`,
		`{"nested":{"on":"yes"}}`, `{"tags":[1,2]}`, `"\ud800"`,
		// Issue 15: names equal but for case, trailing data, every shape.
		`{"name":"a","name":"b"}`, `{"name":"a","Name":"b"}`, `{"NAME":"a"}`, `{"n\u0061me":"a","name":"b"}`,
		`{"props":{"k":"1","\u212a":"2"}}`, `{"props":{"Priority":"High","priority":"Low"}}`,
		`{"raw":{"a":1,"A":2}}`, `{"raw":[{"σ":1,"ς":2}]}`, `{"extra":{"x":1,"X":2}}`,
		`{"ref":"x","ref":1}`, `{"ref":12}`, `{"ref":1.5}`, `{"ref":"\u00e9"}`, `{"nested":{"On":true}}`,
		`{"name":"a"}{}`, `{"name":"a"} x`, "{\"name\":\"a\"}\n",
		`{"tags":["a"],"props":{"a":"b","B":"c"},"raw":[1,{"x":null}],"ref":"p","nested":{"on":false}}`,
		`{"tags":null,"props":null,"raw":null,"ref":null,"nested":null}`,
		`{"props":{"":"empty","a":"\u0000"}}`, `[[[[[[[[[[]]]]]]]]]]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var v fuzzBody
		err := Unmarshal(body, &v)
		var lenient fuzzBody
		lerr := UnmarshalIgnoringUnknown(body, &lenient)
		for _, e := range []error{err, lerr} {
			if e != nil && !errors.Is(e, apperr.ErrInvalid) {
				t.Fatalf("Unmarshal(%q) = %v: not a 400", body, e)
			}
		}
		if lerr == nil {
			checkAccepted(t, body)
		}
		if err != nil {
			return
		}
		checkAccepted(t, body)
		if lerr != nil || !reflect.DeepEqual(v, lenient) {
			t.Fatalf("UnmarshalIgnoringUnknown(%q) = %+v, %v; Unmarshal = %+v", body, lenient, lerr, v)
		}
		var again fuzzBody
		if err := Unmarshal(body, &again); err != nil || !reflect.DeepEqual(v, again) {
			t.Fatalf("decoding %q again: %+v, %v; first %+v", body, again, err, v)
		}
		enc := func(v fuzzBody) []byte {
			b, err := jsonv2.Marshal(v, jsonv2.Deterministic(true), jsonv2.FormatNilSliceAsNull(true), jsonv2.FormatNilMapAsNull(true))
			if err != nil {
				t.Fatalf("Marshal(%+v): %v", v, err)
			}
			return b
		}
		first := enc(v)
		var round fuzzBody
		if err := Unmarshal(first, &round); err != nil {
			t.Fatalf("%q decoded to %+v, encoded as %s, which does not decode: %v", body, v, first, err)
		}
		if second := enc(round); !bytes.Equal(first, second) {
			t.Fatalf("%q: encoded %s, decoded and encoded again %s", body, first, second)
		}
	})
}

// checkAccepted fails unless body is one well-formed UTF-8 JSON value in
// which no object holds two names equal but for case. It does not use the
// decoder's own walk (checkJSON, FoldName).
func checkAccepted(t *testing.T, body []byte) {
	t.Helper()
	if !utf8.Valid(body) || !json.Valid(body) {
		t.Fatalf("accepted %q: not one UTF-8 JSON value", body)
	}
	dec := jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(true))
	var names [][]string // the names read so far in each open object or array
	for {
		tok, err := dec.ReadToken()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatalf("accepted %q: %v", body, err)
		}
		switch tok.Kind() {
		case '{', '[':
			names = append(names, nil)
			continue
		case '}', ']':
			names = names[:len(names)-1]
			continue
		}
		depth := dec.StackDepth()
		if kind, n := dec.StackIndex(depth); tok.Kind() != '"' || kind != '{' || n%2 != 1 {
			continue // a value, not a name
		}
		name := tok.String()
		for _, prev := range names[len(names)-1] {
			if strings.EqualFold(prev, name) {
				t.Fatalf("accepted %q: names %q and %q in one object", body, prev, name)
			}
		}
		names[len(names)-1] = append(names[len(names)-1], name)
	}
}
