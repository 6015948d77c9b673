package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// MaxBody is the largest request body accepted (docs/architecture.md, "Requests"): 1 MiB.
const MaxBody = 1 << 20

// Decode reads a JSON request body into v. It requires a JSON content type
// (415), at most MaxBody bytes (413), exactly one JSON value, and no fields
// that v does not declare (400 naming the field): a misspelt field is a
// client bug that silently losing data would hide.
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

// Unmarshal decodes one JSON value strictly, with the errors of Decode.
// JSON must be UTF-8 (RFC 8259): invalid bytes are refused rather than
// silently replaced with U+FFFD and stored.
func Unmarshal(body []byte, v any) error {
	if !utf8.Valid(body) {
		return apperr.Invalidf("malformed JSON: the body is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return jsonError(err)
	}
	if dec.More() {
		return apperr.Invalidf("malformed JSON: unexpected data after the JSON value")
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return apperr.Invalidf("malformed JSON: unexpected data after the JSON value")
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

func requireContentType(r *http.Request, want string) error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return apperr.UnsupportedMediaf("missing Content-Type: send %s", want)
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || !strings.EqualFold(mt, want) {
		return apperr.UnsupportedMediaf("unsupported Content-Type %q: send %s", ct, want)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
		return apperr.UnsupportedMediaf("unsupported charset %q: send UTF-8", cs)
	}
	return nil
}

func jsonError(err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return apperr.Invalidf("malformed JSON: empty body")
	case errors.As(err, &syn):
		return apperr.Invalidf("malformed JSON at byte %d: %s", syn.Offset, syn.Error())
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the body"
		}
		return apperr.Invalidf("wrong JSON type for %s: got %s, want %s", field, typ.Value, JSONKind(typ.Type))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return apperr.Invalidf("malformed JSON: unexpected end of body")
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return apperr.Invalidf("unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	if e := apperr.As(err); e != nil {
		return e // from a custom UnmarshalJSON
	}
	return apperr.Invalidf("malformed JSON: %s", err.Error())
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
// (values above max are clamped); absent means def.
func QueryInt(r *http.Request, name string, def, min, max int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, apperr.Invalidf("%s must be an integer, got %q", name, s)
	}
	if n < min {
		return 0, apperr.Invalidf("%s must be at least %d, got %d", name, min, n)
	}
	if max > 0 && n > max {
		n = max
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
		return false, apperr.Invalidf("%s must be true or false, got %q", name, r.URL.Query().Get(name))
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
