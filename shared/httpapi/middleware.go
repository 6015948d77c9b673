package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// requestIDPattern, with the length checked apart (a bounded repetition
// compiles to one copy per repetition at package init).
var requestIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// requestID is the Lambda request id when running in Lambda, else the
// caller's X-Request-Id when it is safe to log, else a random id.
func requestID(r *http.Request) string {
	if lc, ok := lambdacontext.FromContext(r.Context()); ok && lc.AwsRequestID != "" {
		return lc.AwsRequestID
	}
	if id := r.Header.Get("X-Request-Id"); len(id) <= 64 && requestIDPattern.MatchString(id) {
		return id
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// caller is who a request turned out to be, filled in by authentication
// for the access log line, which is set up before anyone knows.
type caller struct{ tenant, user string }

type callerKey struct{}

// noteCaller records the authenticated tenant and user for the access log.
func noteCaller(ctx context.Context, tenant, user string) {
	if c, ok := ctx.Value(callerKey{}).(*caller); ok {
		c.tenant, c.user = tenant, user
	}
}

// serve runs next with a request id, one access log line (with the tenant
// and user once authenticated, so that refusals such as 429s can be counted
// per tenant), and recovery from panics (answered 500, logged with the
// stack).
func serve(base *slog.Logger, w http.ResponseWriter, r *http.Request, next http.HandlerFunc) {
	start := time.Now()
	id := requestID(r)
	who := &caller{}
	ctx := context.WithValue(r.Context(), callerKey{}, who)
	r = r.WithContext(withLogAttrs(ctx, base, "request_id", id, "method", r.Method, "path", r.URL.Path))
	logger := Logger(r.Context())
	w.Header().Set("X-Request-Id", id)
	rec := &statusRecorder{ResponseWriter: w}
	defer func() {
		if v := recover(); v != nil {
			logger.Error("panic", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			if rec.status == 0 {
				WriteError(rec, r, fmt.Errorf("panic: %v", v))
			}
		}
		attrs := []any{"status", rec.status, "duration_ms", time.Since(start).Milliseconds()}
		if who.tenant != "" {
			attrs = append(attrs, "tenant", who.tenant, "user", who.user)
		}
		logger.Info("request", attrs...)
	}()
	next(rec, r)
}
