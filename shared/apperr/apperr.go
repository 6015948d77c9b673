// Package apperr is reqtrace's one error vocabulary. Domain code and adapters
// create these errors; shared/httpapi maps their Code to an HTTP status in
// exactly one function. Any error that is not (or does not wrap) an *Error is
// an internal error: it is logged once and answered with a fixed message.
package apperr

import (
	"errors"
	"fmt"
)

// Code classifies an error for clients.
type Code string

// The codes. Each maps to exactly one HTTP status in shared/httpapi.
const (
	Invalid          Code = "invalid"            // 400
	Unauthorized     Code = "unauthorized"       // 401
	Forbidden        Code = "forbidden"          // 403
	NotFound         Code = "not_found"          // 404
	MethodNotAllowed Code = "method_not_allowed" // 405
	Conflict         Code = "conflict"           // 409
	Gone             Code = "gone"               // 410
	TooLarge         Code = "too_large"          // 413
	UnsupportedMedia Code = "unsupported_media"  // 415
	Throttled        Code = "throttled"          // 429
	BadGateway       Code = "bad_gateway"        // 502
	Internal         Code = "internal"           // 500
)

// Error is an error a client may see: its Message is sent as is, so it must
// never contain internal details.
type Error struct {
	Code    Code
	Message string
	// Position is the 0-based offset of a query syntax error, or -1.
	Position int
	// Field names the request field a 400 is about ("" when none), and
	// Detail says what is wrong with it: the answer's "errors" member
	// holds {Field: Detail}.
	Field, Detail string
	// Err is the wrapped cause, never shown to clients.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return e.Message + ": " + e.Err.Error()
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, apperr.ErrNotFound) true for every not-found error,
// whatever its message.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	if !ok {
		return false
	}
	return t.Message == "" && t.Code == e.Code
}

// Sentinels for errors.Is checks; they carry no message.
var (
	ErrInvalid      = &Error{Code: Invalid, Position: -1}
	ErrUnauthorized = &Error{Code: Unauthorized, Position: -1}
	ErrForbidden    = &Error{Code: Forbidden, Position: -1}
	ErrNotFound     = &Error{Code: NotFound, Position: -1}
	ErrConflict     = &Error{Code: Conflict, Position: -1}
	ErrTooLarge     = &Error{Code: TooLarge, Position: -1}
)

func newf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Position: -1}
}

// Invalidf returns a 400 error.
func Invalidf(format string, args ...any) *Error { return newf(Invalid, format, args...) }

// InvalidAt returns a 400 error that points at a 0-based position of a query.
func InvalidAt(pos int, format string, args ...any) *Error {
	e := newf(Invalid, format, args...)
	e.Position = pos
	return e
}

// InvalidField returns a 400 error about one request field: its message is
// "<field>: <detail>", and the answer names the field in "errors".
func InvalidField(field, format string, args ...any) *Error {
	detail := fmt.Sprintf(format, args...)
	e := newf(Invalid, "%s: %s", field, detail)
	e.Field, e.Detail = field, detail
	return e
}

// InvalidNamed returns a 400 error about one request field whose message
// already names it ("v must be an integer, got \"x\""): the message is
// kept as written and the answer's "errors" holds {field: message}.
func InvalidNamed(field, format string, args ...any) *Error {
	e := newf(Invalid, format, args...)
	e.Field, e.Detail = field, e.Message
	return e
}

// Unauthorizedf returns a 401 error.
func Unauthorizedf(format string, args ...any) *Error { return newf(Unauthorized, format, args...) }

// Forbiddenf returns a 403 error.
func Forbiddenf(format string, args ...any) *Error { return newf(Forbidden, format, args...) }

// NotFoundf returns a 404 error.
func NotFoundf(format string, args ...any) *Error { return newf(NotFound, format, args...) }

// Conflictf returns a 409 error.
func Conflictf(format string, args ...any) *Error { return newf(Conflict, format, args...) }

// Gonef returns a 410 error.
func Gonef(format string, args ...any) *Error { return newf(Gone, format, args...) }

// TooLargef returns a 413 error.
func TooLargef(format string, args ...any) *Error { return newf(TooLarge, format, args...) }

// UnsupportedMediaf returns a 415 error.
func UnsupportedMediaf(format string, args ...any) *Error {
	return newf(UnsupportedMedia, format, args...)
}

// BadGatewayf returns a 502 error.
func BadGatewayf(format string, args ...any) *Error { return newf(BadGateway, format, args...) }

// Wrap attaches a cause to a client-visible error.
func Wrap(e *Error, cause error) *Error {
	c := *e
	c.Err = cause
	return &c
}

// As returns the *Error in err's chain, or nil.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// CodeOf returns the code of err, Internal when err is not classified.
func CodeOf(err error) Code {
	if e := As(err); e != nil {
		return e.Code
	}
	return Internal
}
