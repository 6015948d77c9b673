// Package httpapi is the HTTP layer shared by every route group: routers with
// per-route access rules, strict JSON decoding, the one mapping from
// apperr codes to HTTP statuses with the JSON error body (docs/architecture.md, "Requests"),
// request ids, structured logging, panic recovery and the per-tenant rate
// limit (a Limiter, shared/ratelimit).
// Route groups are plain http.Handlers; Lambda is only an adapter around them.
package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// ErrorBody is the JSON body of every error answer. ErrorMessages and
// Errors follow the Atlassian REST convention that existing clients of the
// original read: the message again, and the request fields at fault with
// what is wrong with each ({} when the error is about no one field).
type ErrorBody struct {
	Status        int               `json:"status"`
	Message       string            `json:"message"`
	ErrorMessages []string          `json:"errorMessages"`
	Errors        map[string]string `json:"errors"`
	Position      *int              `json:"position,omitempty"`
}

// NewErrorBody returns the body of an error answer with status and message.
func NewErrorBody(status int, message string) ErrorBody {
	return ErrorBody{Status: status, Message: message, ErrorMessages: []string{message}, Errors: map[string]string{}}
}

// internalMessage is all a client ever learns about an unexpected error.
const internalMessage = "internal error; see the service logs with this request id"

// Status maps an error code to its HTTP status. It is the only such mapping.
func Status(code apperr.Code) int {
	switch code {
	case apperr.Invalid:
		return http.StatusBadRequest
	case apperr.Unauthorized:
		return http.StatusUnauthorized
	case apperr.Forbidden:
		return http.StatusForbidden
	case apperr.NotFound:
		return http.StatusNotFound
	case apperr.MethodNotAllowed:
		return http.StatusMethodNotAllowed
	case apperr.Conflict:
		return http.StatusConflict
	case apperr.Gone:
		return http.StatusGone
	case apperr.TooLarge:
		return http.StatusRequestEntityTooLarge
	case apperr.UnsupportedMedia:
		return http.StatusUnsupportedMediaType
	case apperr.Throttled:
		return http.StatusTooManyRequests
	case apperr.BadGateway:
		return http.StatusBadGateway
	}
	return http.StatusInternalServerError
}

// Error is an error answer with what only HTTP has: the Allow header of a
// 405, the Retry-After of a 429, or a body of its own instead of the
// standard one. It is built at the boundary from an apperr error, which
// keeps the domain's vocabulary (the kind, the message).
type Error struct {
	Err *apperr.Error
	// Allow lists the methods of a 405 answer.
	Allow []string
	// RetryAfter is the Retry-After of a 429 answer.
	RetryAfter time.Duration
	// Body, when non-nil, replaces the standard JSON error body.
	Body any
}

func (e *Error) Error() string { return e.Err.Error() }

func (e *Error) Unwrap() error { return e.Err }

// MethodNotAllowed returns a 405 answer listing the allowed methods.
func MethodNotAllowed(allow []string, format string, args ...any) *Error {
	return &Error{Err: &apperr.Error{Code: apperr.MethodNotAllowed, Message: fmt.Sprintf(format, args...), Position: -1}, Allow: allow}
}

// Throttled returns a 429 answer asking to retry after wait.
func Throttled(wait time.Duration) *Error {
	return &Error{Err: &apperr.Error{Code: apperr.Throttled, Message: "too many requests for this tenant; retry later", Position: -1},
		RetryAfter: wait}
}

// WithBody returns err answered with body instead of the standard one.
func WithBody(err *apperr.Error, body any) *Error { return &Error{Err: err, Body: body} }

// WriteError answers err as JSON. Classified errors send their message;
// anything else is logged once, with the request id, and answered 500 with a
// fixed message.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	status, message := Public(r, err)
	e := apperr.As(err)
	if status == http.StatusInternalServerError {
		WriteJSON(w, status, NewErrorBody(status, message))
		return
	}
	var h Error // what only HTTP has, when the boundary added it
	var he *Error
	if errors.As(err, &he) {
		h = *he
	}
	if len(h.Allow) > 0 {
		w.Header().Set("Allow", strings.Join(h.Allow, ", "))
	}
	if e.Code == apperr.Throttled {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(h.RetryAfter.Seconds()))))
	}
	if h.Body != nil {
		WriteJSON(w, status, h.Body)
		return
	}
	body := NewErrorBody(status, message)
	if e.Field != "" {
		body.Errors[e.Field] = e.Detail
	}
	if e.Position >= 0 {
		pos := e.Position
		body.Position = &pos
	}
	WriteJSON(w, status, body)
}

// Public returns the status of an error answer and the message a client
// may see, logging err as every error answer does: an unclassified error
// once, with the request id, answered 500 with a fixed message; a
// classified one with a cause at warning level. WriteError answers with
// it in JSON; the web pages (shared/httpapi/wikiweb) in HTML.
func Public(r *http.Request, err error) (status int, message string) {
	e := apperr.As(err)
	if e == nil || e.Code == apperr.Internal {
		Logger(r.Context()).ErrorContext(r.Context(), "request failed", "error", err.Error())
		return http.StatusInternalServerError, internalMessage
	}
	status = Status(e.Code)
	if e.Err != nil {
		Logger(r.Context()).WarnContext(r.Context(), "request refused", "status", status, "error", e.Error())
	}
	return status, e.Message
}

type loggerKey struct{}

// Logger returns the request's logger (with request id, route and tenant), or
// slog.Default.
func Logger(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// attrsKey carries the request's log attributes (request id, method, path,
// tenant, user) for ContextHandler.
type attrsKey struct{}

// withLogAttrs returns ctx carrying l and the request's log attributes
// extended by args (key, value pairs, as slog.Logger.With takes them).
func withLogAttrs(ctx context.Context, l *slog.Logger, args ...any) context.Context {
	prev, _ := ctx.Value(attrsKey{}).([]any)
	ctx = context.WithValue(ctx, attrsKey{}, append(slices.Clip(prev), args...))
	return WithLogger(ctx, l.With(args...))
}

// ContextHandler is a slog.Handler that adds the attributes of the request
// a record is logged in (request id, method, path, tenant, user) when the
// record is logged with that request's context through a logger other than
// the request's own: code that cannot reach Logger(ctx), such as the domain
// packages, logs with slog.InfoContext(ctx, ...) on the default logger and
// keeps the request id. Functions install it as slog's default
// (shared/lambdaapp).
type ContextHandler struct{ slog.Handler }

// Handle implements slog.Handler.
func (h ContextHandler) Handle(ctx context.Context, r slog.Record) error {
	if args, ok := ctx.Value(attrsKey{}).([]any); ok && len(args) > 0 {
		r = r.Clone()
		r.Add(args...)
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h ContextHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return ContextHandler{h.Handler.WithAttrs(attrs)}
}

// WithGroup implements slog.Handler.
func (h ContextHandler) WithGroup(name string) slog.Handler {
	return ContextHandler{h.Handler.WithGroup(name)}
}

// WithLogger returns a context carrying l.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}
