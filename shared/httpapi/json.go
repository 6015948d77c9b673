package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// MaxBody is the largest request body accepted (docs/architecture.md, "Requests"): 1 MiB.
const MaxBody = 1 << 20

// Decode reads a JSON request body into v. It requires a JSON content type
// (415), at most MaxBody bytes (413), and then the rules of Unmarshal (400).
func Decode(r *http.Request, v any) error {
	if err := requireContentType(r, "application/json"); err != nil {
		return err
	}
	body, err := ReadBody(r)
	if err != nil {
		return err
	}
	return Unmarshal(body, v)
}

// Unmarshal decodes a request body into v strictly; every request body goes
// through it (or UnmarshalIgnoringUnknown). Any failure is a 400 whose
// message names the member or the byte offset at fault, and whose errors
// names the member when there is one:
//   - the body must be UTF-8 (RFC 8259): invalid bytes are refused rather
//     than silently replaced with U+FFFD and stored (so is an escaped lone
//     surrogate, "\ud800");
//   - exactly one JSON value: trailing data is refused;
//   - no object anywhere in the body may hold two names equal but for case
//     ("title" twice, or "title" and "Title"), whatever it is decoded into;
//   - members are matched to v's fields by their exact name, and a member v
//     does not declare is refused ("Title" for "title" says so): a misspelt
//     field is a client bug that silently losing data would hide;
//   - a value of the wrong JSON kind names the kind wanted, never a Go type.
//
// An apperr error returned by a type's own UnmarshalJSON is answered as is
// (with the member named in errors when it names none).
func Unmarshal(body []byte, v any) error { return unmarshal(body, v, true) }

// UnmarshalIgnoringUnknown is Unmarshal for a wire format that may gain
// members (the messages a wiki sends, spec 2.5): members v does not declare
// are skipped. Every other rule holds, so a member that v declares under
// another case ("Type" for "type") is still refused.
func UnmarshalIgnoringUnknown(body []byte, v any) error { return unmarshal(body, v, false) }

func unmarshal(body []byte, v any, rejectUnknown bool) error {
	if !utf8.Valid(body) {
		return apperr.Invalidf("malformed JSON: the body is not valid UTF-8")
	}
	if err := checkJSON(body, reflect.TypeOf(v)); err != nil {
		return err
	}
	err := jsonv2.Unmarshal(body, v,
		jsonv2.RejectUnknownMembers(rejectUnknown),
		jsonv2.MatchCaseInsensitiveNames(false),
		jsontext.AllowDuplicateNames(false),
		jsontext.AllowInvalidUTF8(false))
	if err != nil {
		return jsonError(err)
	}
	return nil
}

// ReadText reads a UTF-8 text/plain body (415 otherwise), at most MaxBody
// bytes.
func ReadText(r *http.Request) (string, error) {
	if err := requireContentType(r, "text/plain"); err != nil {
		return "", err
	}
	body, err := ReadBody(r)
	if err == nil && !utf8.Valid(body) {
		err = apperr.Invalidf("the body is not valid UTF-8")
	}
	return string(body), err
}

// ReadBody reads the whole body, answering 413 past MaxBody bytes.
func ReadBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	if r.ContentLength > MaxBody {
		return nil, apperr.TooLargef("request body is larger than %d bytes", MaxBody)
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return nil, apperr.Wrap(apperr.Invalidf("cannot read the request body"), err)
	}
	if len(body) > MaxBody {
		return nil, apperr.TooLargef("request body is larger than %d bytes", MaxBody)
	}
	return body, nil
}

// MediaType returns the media type of the request's Content-Type in lower
// case, without parameters ("" when absent or unparsable): for a route
// that takes more than one type. Decode and ReadText still check it (and
// its charset) in full.
func MediaType(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return strings.ToLower(mt)
}

// requireContentType answers 415 unless the request's media type is one of
// want, in UTF-8 when it names a charset.
func requireContentType(r *http.Request, want ...string) error {
	send := strings.Join(want, " or ")
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return apperr.UnsupportedMediaf("missing Content-Type: send %s", send)
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || !slices.ContainsFunc(want, func(w string) bool { return strings.EqualFold(mt, w) }) {
		return apperr.UnsupportedMediaf("unsupported Content-Type %q: send %s", ct, send)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return apperr.UnsupportedMediaf("unsupported charset %q: send UTF-8", cs)
	}
	return nil
}

// jsonError translates an error of jsonv2.Unmarshal. checkJSON has already
// refused malformed bodies, so these are about values: the messages are
// built here from the error's fields, since its own text names Go types.
func jsonError(err error) error {
	var sem *jsonv2.SemanticError
	var syn *jsontext.SyntacticError
	switch {
	case errors.As(err, &sem):
		return semanticError(sem)
	case errors.As(err, &syn) && errors.Is(syn.Err, jsontext.ErrDuplicateName):
		name := syn.JSONPointer.LastToken()
		return fieldError(name, "duplicate name "+strconv.Quote(clip(name))+located(syn.JSONPointer), "duplicate name")
	case errors.As(err, &syn):
		return syntaxError(syn)
	}
	if e := apperr.As(err); e != nil {
		return e
	}
	return apperr.Wrap(apperr.Invalidf("malformed JSON: the body cannot be read"), err)
}

func semanticError(sem *jsonv2.SemanticError) error {
	ptr := sem.JSONPointer
	field := memberName(ptr)
	var syn *jsontext.SyntacticError
	switch e := apperr.As(sem.Err); {
	case errors.Is(sem.Err, jsonv2.ErrUnknownName):
		name := ptr.LastToken()
		return fieldError(name, "unknown field "+strconv.Quote(clip(name))+located(ptr), "unknown field")
	case e != nil: // from a custom UnmarshalJSON
		if e.Field == "" && field != "" {
			c := *e
			c.Field, c.Detail = clip(field), e.Message
			return &c
		}
		return e
	case errors.As(sem.Err, &syn):
		return syntaxError(syn)
	case sem.JSONKind != 0 && sem.GoType != nil && (sem.Err == nil || errors.Is(sem.Err, strconv.ErrSyntax) || errors.Is(sem.Err, strconv.ErrRange)):
		got, want := jsonKindOf(sem.JSONKind, sem.JSONValue), JSONKind(sem.GoType)
		detail := "wrong JSON type: got " + got + ", want " + want
		if errors.Is(sem.Err, strconv.ErrRange) {
			detail = "number out of range: got " + got + ", want " + want + " that fits"
		}
		msg := strings.Replace(detail, ":", " for "+describeValue(ptr)+":", 1)
		if field == "" {
			return apperr.Invalidf("%s", msg)
		}
		return fieldError(field, msg, detail)
	}
	// A custom UnmarshalJSON's own error, or one this code does not know:
	// the cause goes to the log, never to the client (it names Go types).
	e := apperr.Invalidf("invalid value for %s", describeValue(ptr))
	if field != "" {
		e = fieldError(field, e.Message, "invalid value")
	}
	return apperr.Wrap(e, sem)
}

// describeValue names the value at p in a message: "the body", the
// member's name ("count"), followed by where it is when below the top level
// ("baselineNumber at /0/baselineNumber"), or "the item at /tags/0".
func describeValue(p jsontext.Pointer) string {
	switch last := p.LastToken(); {
	case p == "":
		return "the body"
	case isIndex(last):
		return "the item at " + clip(string(p))
	case p.Parent() == "":
		return clip(last)
	default:
		return clip(last) + " at " + clip(string(p))
	}
}

// memberName is the name of the innermost member holding the value at p
// ("tags" for /tags/0), "" when none (the body, or an item of a top-level
// array).
func memberName(p jsontext.Pointer) string {
	for ; p != ""; p = p.Parent() {
		if last := p.LastToken(); !isIndex(last) {
			return last
		}
	}
	return ""
}

func isIndex(tok string) bool {
	if tok == "" {
		return false
	}
	for _, c := range tok {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// jsonKindOf names a JSON value's kind for an error message, with the
// number when it is one ("number 2.5"): never a Go type.
func jsonKindOf(k jsontext.Kind, v jsontext.Value) string {
	switch k {
	case '"':
		return "string"
	case '0':
		if len(v) > 0 {
			return "number " + clip(string(v))
		}
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "another JSON value"
}

// FormatTime renders a time as every answer sends it: RFC 3339 in UTC with
// milliseconds ("2026-11-22T04:50:55.029Z").
func FormatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// WriteJSON answers v as JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // excerpts are HTML; JSON needs no escaping of <, > and &
	body := buf.Bytes()
	if err := enc.Encode(v); err != nil {
		status, body = http.StatusInternalServerError, []byte(`{"status":500,"message":"cannot encode the answer"}`)
	} else {
		body = buf.Bytes()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// QueryInt reads an optional integer query parameter within [min, max]
// (max 0: no upper bound); absent means def. A value outside the range is
// a 400, never silently moved into it.
func QueryInt(r *http.Request, name string, def, min, max int) (int, error) {
	n, err := queryInt(r, name, def, min)
	if err == nil && max > 0 && n > max {
		return 0, apperr.InvalidNamed(name, "%s must be at most %d, got %d", name, max, n)
	}
	return n, err
}

// QueryLimit reads an optional page size: an integer of at least 1, absent
// means def, and a value above max is clamped to max (a client asking for
// more than a page holds gets a full page and hasMore).
func QueryLimit(r *http.Request, name string, def, max int) (int, error) {
	n, err := queryInt(r, name, def, 1)
	return min(n, max), err
}

func queryInt(r *http.Request, name string, def, min int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, apperr.InvalidNamed(name, "%s must be an integer, got %q", name, s)
	}
	if n < min {
		return 0, apperr.InvalidNamed(name, "%s must be at least %d, got %d", name, min, n)
	}
	return n, nil
}

// QueryBool reads an optional boolean query parameter: true or false
// (case-insensitive); absent means false.
func QueryBool(r *http.Request, name string) (bool, error) {
	switch s := strings.ToLower(r.URL.Query().Get(name)); s {
	case "":
		return false, nil
	case "true":
		return true, nil
	case "false":
		return false, nil
	default:
		return false, apperr.InvalidNamed(name, "%s must be true or false, got %q", name, r.URL.Query().Get(name))
	}
}

// JSONKind names, for an error message, the JSON kind a Go type is read
// from ("an object", "a string", ...): never the Go type's own name.
func JSONKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return "a string" // []byte is sent as base64
		}
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another JSON value"
}
