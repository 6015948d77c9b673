package httpapi

import (
	"bytes"
	"encoding"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// jsonSpace is JSON's white space (bytes.TrimSpace would also trim
// characters JSON refuses, such as \v).
const jsonSpace = " \t\r\n"

// checkJSON is the syntactic half of Unmarshal, run before any value is
// decoded: body must be exactly one JSON value; no object in it, wherever
// it is and whatever it is decoded into (a struct, a map, a raw value), may
// hold two names equal but for case (FoldName), exact duplicates included;
// and a member that t declares under another case ("Title" for "title") is
// refused with the declared name, since names are matched exactly.
func checkJSON(body []byte, t reflect.Type) error {
	if len(bytes.Trim(body, jsonSpace)) == 0 {
		return apperr.Invalidf("malformed JSON: empty body")
	}
	dec := jsontext.NewDecoder(bytes.NewBuffer(body), jsontext.AllowDuplicateNames(true)) // reads body in place
	if err := checkValue(dec, t); err != nil {
		return err
	}
	end := dec.InputOffset()
	if _, err := dec.ReadToken(); !errors.Is(err, io.EOF) {
		rest := body[end:]
		at := end + int64(len(rest)-len(bytes.TrimLeft(rest, jsonSpace)))
		return apperr.Invalidf("malformed JSON: unexpected data after the JSON value at byte %d", at)
	}
	return nil
}

// checkValue reads the next value from dec; t is the Go type it is decoded
// into, nil when unknown or opaque (then only the names rule applies).
func checkValue(dec *jsontext.Decoder, t reflect.Type) error {
	t = walkType(t)
	switch dec.PeekKind() {
	case '{':
		return checkObject(dec, t)
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		if _, err := dec.ReadToken(); err != nil {
			return syntaxError(err)
		}
		for dec.PeekKind() != ']' {
			if err := checkValue(dec, elem); err != nil {
				return err
			}
		}
		_, err := dec.ReadToken()
		return syntaxError(err)
	}
	_, err := dec.ReadToken() // a scalar, or the syntax error PeekKind met
	return syntaxError(err)
}

func checkObject(dec *jsontext.Decoder, t reflect.Type) error {
	var fields *structFields
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = fieldsOf(t)
		case reflect.Map:
			elem = t.Elem()
		}
	}
	if _, err := dec.ReadToken(); err != nil {
		return syntaxError(err)
	}
	seen := make(map[string]string) // FoldName(name) → the name as sent
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return syntaxError(err)
		}
		name := tok.String()
		folded := FoldName(name)
		if first, dup := seen[folded]; dup {
			return duplicateName(dec.StackPointer(), name, first)
		}
		seen[folded] = name
		member := elem
		if fields != nil {
			if ft, ok := fields.byName[name]; ok {
				member = ft
			} else if declared, ok := fields.byFold[folded]; ok {
				return caseVariant(dec.StackPointer(), name, declared)
			}
			// Otherwise unknown: Unmarshal refuses it, UnmarshalIgnoringUnknown skips it.
		}
		if err := checkValue(dec, member); err != nil {
			return err
		}
	}
	_, err := dec.ReadToken()
	return syntaxError(err)
}

func duplicateName(where jsontext.Pointer, name, first string) error {
	message := "duplicate name " + strconv.Quote(clip(name)) + located(where)
	detail := "duplicate name"
	if name != first {
		detail += ": equal but for case to " + strconv.Quote(clip(first))
		message += ": equal but for case to " + strconv.Quote(clip(first))
	}
	return fieldError(name, message, detail)
}

func caseVariant(where jsontext.Pointer, name, declared string) error {
	detail := "unknown field: the name is " + strconv.Quote(clip(declared)) + " (names are case-sensitive)"
	return fieldError(name, "unknown field "+strconv.Quote(clip(name))+located(where)+": the name is "+
		strconv.Quote(clip(declared))+" (names are case-sensitive)", detail)
}

// fieldError returns a 400 with message whose answer names the member
// name in its errors, with detail.
func fieldError(name, message, detail string) *apperr.Error {
	e := apperr.Invalidf("%s", message)
	e.Field, e.Detail = clip(name), detail
	return e
}

// located is " (at <pointer>)" for a member below the top level, else "":
// a top-level member is found by its name alone.
func located(p jsontext.Pointer) string {
	if p.Parent() == "" {
		return ""
	}
	return " (at " + clip(string(p)) + ")"
}

// syntaxError translates a jsontext error into a 400 that gives the byte
// offset (and where in the document it is).
func syntaxError(err error) error {
	if err == nil {
		return nil
	}
	var se *jsontext.SyntacticError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return apperr.Invalidf("malformed JSON: unexpected end of body")
	case errors.As(err, &se):
		at := ""
		if se.JSONPointer != "" {
			at = " (at " + clip(string(se.JSONPointer)) + ")"
		}
		reason := "invalid JSON"
		if se.Err != nil {
			reason = clip(se.Err.Error())
		}
		return apperr.Invalidf("malformed JSON at byte %d%s: %s", se.ByteOffset, at, reason)
	}
	return apperr.Wrap(apperr.Invalidf("malformed JSON"), err)
}

// FoldName is the form two JSON member names share exactly when they are
// equal but for case (strings.EqualFold): each rune is replaced by the
// smallest rune of its Unicode simple case-folding orbit ("title", "Title"
// and "TITLE" all fold to "TITLE"; so do "k", "K" and the Kelvin sign).
func FoldName(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii { // an ASCII letter's smallest fold is its upper case
		return strings.ToUpper(s)
	}
	return strings.Map(foldRune, s)
}

func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// clip shortens text that comes from the request (a name, a pointer) for an
// error message: a member name may be a megabyte long.
func clip(s string) string {
	const max = 100
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// ---------------------------------------------------------------- Go types

var (
	unmarshalerType     = reflect.TypeFor[jsonv2.Unmarshaler]() // also encoding/json's Unmarshaler: the same method
	unmarshalerFromType = reflect.TypeFor[jsonv2.UnmarshalerFrom]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// walkType is the type whose shape the JSON value must have: t without
// pointers, or nil when the value is opaque to checkJSON (an interface, a
// type decoding itself, such as json.RawMessage or a custom UnmarshalJSON).
func walkType(t reflect.Type) reflect.Type {
	for t != nil {
		if t.Kind() == reflect.Interface {
			return nil
		}
		if p := reflect.PointerTo(t); p.Implements(unmarshalerType) || p.Implements(unmarshalerFromType) || p.Implements(textUnmarshalerType) {
			return nil
		}
		if t.Kind() != reflect.Pointer {
			return t
		}
		t = t.Elem()
	}
	return nil
}

// structFields are the JSON member names of a struct type, as encoding/json
// and github.com/go-json-experiment/json name them: the tag's name, else the
// field's; embedded structs without a name are inlined, shallower names win.
type structFields struct {
	byName map[string]reflect.Type // name → the field's type
	byFold map[string]string       // FoldName(name) → name
}

var fieldCache sync.Map // reflect.Type → *structFields

func fieldsOf(t reflect.Type) *structFields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(*structFields)
	}
	f := &structFields{byName: map[string]reflect.Type{}, byFold: map[string]string{}}
	queue, seen := []reflect.Type{t}, map[reflect.Type]bool{t: true}
	for len(queue) > 0 { // breadth first: a shallower name hides a deeper one
		st := queue[0]
		queue = queue[1:]
		for i := range st.NumField() {
			sf := st.Field(i)
			tag := sf.Tag.Get("json")
			if tag == "-" {
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if len(name) >= 2 && name[0] == '\'' && name[len(name)-1] == '\'' {
				name = name[1 : len(name)-1]
			}
			embed := name == "" && (sf.Anonymous || hasOption(opts, "embed"))
			if embed {
				et := sf.Type
				if et.Kind() == reflect.Pointer {
					et = et.Elem()
				}
				if et.Kind() == reflect.Struct && walkType(et) != nil {
					if !seen[et] {
						seen[et] = true
						queue = append(queue, et)
					}
				}
				continue // a struct inlined, or a fallback for unknown members
			}
			if !sf.IsExported() {
				continue
			}
			if name == "" {
				name = sf.Name
			}
			if _, ok := f.byName[name]; ok {
				continue
			}
			f.byName[name] = sf.Type
			if _, ok := f.byFold[FoldName(name)]; !ok {
				f.byFold[FoldName(name)] = name
			}
		}
	}
	actual, _ := fieldCache.LoadOrStore(t, f)
	return actual.(*structFields)
}

func hasOption(opts, want string) bool {
	for opt := range strings.SplitSeq(opts, ",") {
		if opt == want {
			return true
		}
	}
	return false
}
