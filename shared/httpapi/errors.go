// Package httpapi is the HTTP layer shared by every route group: routers with
// per-route access rules, strict JSON decoding, the one mapping from
// apperr codes to HTTP statuses with the JSON error body of CONTRACT.md §2,
// request ids, structured logging, panic recovery and per-tenant throttling.
// Route groups are plain http.Handlers; Lambda is only an adapter around them.
package httpapi

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// ErrorBody is the JSON body of every error answer.
type ErrorBody struct {
	Status   int    `json:"status"`
	Message  string `json:"message"`
	Position *int   `json:"position,omitempty"`
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

// WriteError answers err as JSON. Classified errors send their message;
// anything else is logged once, with the request id, and answered 500 with a
// fixed message.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	e := apperr.As(err)
	if e == nil || e.Code == apperr.Internal {
		Logger(r.Context()).ErrorContext(r.Context(), "request failed", "error", err.Error())
		WriteJSON(w, http.StatusInternalServerError, ErrorBody{Status: 500, Message: internalMessage})
		return
	}
	status := Status(e.Code)
	if len(e.Allow) > 0 {
		w.Header().Set("Allow", strings.Join(e.Allow, ", "))
	}
	if e.Code == apperr.Throttled {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(e.RetryAfter.Seconds()))))
	}
	if e.Err != nil {
		Logger(r.Context()).WarnContext(r.Context(), "request refused", "status", status, "error", e.Error())
	}
	if e.Body != nil {
		WriteJSON(w, status, e.Body)
		return
	}
	body := ErrorBody{Status: status, Message: e.Message}
	if e.Position >= 0 {
		pos := e.Position
		body.Position = &pos
	}
	WriteJSON(w, status, body)
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

// WithLogger returns a context carrying l.
func WithLogger(ctx context.Context, l *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, l)
}
