// Package gateway is a local stand-in for an API Gateway HTTP API: an
// http.Handler that routes plain HTTP requests to Lambda functions as
// payload format 2.0 events (events.APIGatewayV2HTTPRequest) and turns their
// events.APIGatewayV2HTTPResponse back into HTTP.
//
// It does what reqtrace's functions can observe of the real service:
//   - routing: {name} matches one segment, a last {name+} matches the rest;
//     when several routes match, the most specific wins (at the first
//     segment where they differ a literal beats a variable, which beats a
//     greedy variable; then a method beats ANY). A path that matches no
//     route, or matches only with another method, answers 404
//     {"message":"Not Found"};
//   - the event: lower-case headers with repeated values joined by ",",
//     cookies moved out of the headers, queryStringParameters with repeated
//     values joined by ",", decoded pathParameters, requestContext, and the
//     body as text for text/*, JSON, XML and JavaScript media types, base64
//     (isBase64Encoded) for anything else;
//   - limits and failures: bodies over 10 MiB, and events over Lambda's
//     6 MiB invocation payload, answer 413, a function error
//     or an unusable response 500 {"message":"Internal Server Error"}, a
//     function whose process died under the request (Runtime.ExitError)
//     502 {"message":"Internal Server Error"}, an
//     integration slower than its timeout (30 s at most) 503
//     {"message":"Service Unavailable"}.
//
// A route with Path "$default" takes every request no other route matches
// (routeKey "$default", no path parameters), as API Gateway's default route.
//
// Not modeled: authorizers, CORS, stage variables, custom domains,
// throttling, and the responses without statusCode that API
// Gateway would infer.
package gateway

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/reqtrace/reqtrace/infra/lambdashim"
)

const (
	// MaxBodyBytes is the largest request body accepted (API Gateway's 10 MiB).
	MaxBodyBytes = 10 << 20
	// MaxInvokePayload is the largest event a synchronous Lambda invocation
	// takes (6 MiB); a larger one answers 413 without invoking.
	MaxInvokePayload = 6 << 20
	// MaxIntegrationTimeout is the longest (and default) integration timeout
	// of an HTTP API.
	MaxIntegrationTimeout = 30 * time.Second

	accountID          = "000000000000"
	statusClientClosed = 499
)

// Invoker runs a Lambda function; *lambdashim.Runner implements it.
type Invoker interface {
	// Invoke runs the function with payload (the JSON event) and returns its
	// JSON response. Any error means the invocation failed (a function
	// error, a timeout, a crash); the gateway does not look inside it, but
	// it must return when ctx is done.
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// Route sends the requests that match Method and Path to Invoker.
type Route struct {
	// Method is an HTTP method or ANY (case-insensitive).
	Method string
	// Path is the route path, e.g. "/rest/reqs/1/requirement2/{spaceKey}" or
	// "/files/{proxy+}".
	Path string
	// Invoker runs the route's function.
	Invoker Invoker
	// Timeout is the integration timeout: zero means MaxIntegrationTimeout,
	// more is an error.
	Timeout time.Duration
}

// Gateway is the HTTP handler of one HTTP API. It is safe for concurrent use.
type Gateway struct {
	apiID    string
	routes   []*route
	fallback *route // the $default route, if any
	log      *slog.Logger
}

// DefaultRoute is the Path of API Gateway's default route.
const DefaultRoute = "$default"

// New returns the Gateway of the API apiID (reported in requestContext.apiId)
// serving routes. It fails on an invalid route and on two routes that would
// match the same requests (same method, same path up to variable names), as
// API Gateway refuses them. A nil logger discards the logs.
func New(apiID string, routes []Route, logger *slog.Logger) (*Gateway, error) {
	if apiID == "" {
		return nil, errors.New("gateway: empty API id")
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	g := &Gateway{apiID: apiID, log: logger}
	seen := map[string]string{} // method + shape → route key
	for _, r := range routes {
		r.Method = strings.ToUpper(r.Method)
		if r.Path == DefaultRoute {
			if g.fallback != nil || r.Invoker == nil {
				return nil, errors.New("gateway: a second $default route, or one without an invoker")
			}
			g.fallback = &route{Route: r, key: DefaultRoute, timeout: MaxIntegrationTimeout}
			continue
		}
		key := r.Method + " " + r.Path
		if !slices.Contains(methods, r.Method) {
			return nil, fmt.Errorf("gateway: route %q: unsupported method", key)
		}
		segs, err := parsePath(r.Path)
		if err != nil {
			return nil, fmt.Errorf("gateway: route %q: %w", key, err)
		}
		if r.Invoker == nil {
			return nil, fmt.Errorf("gateway: route %q: nil invoker", key)
		}
		if r.Timeout < 0 || r.Timeout > MaxIntegrationTimeout {
			return nil, fmt.Errorf("gateway: route %q: timeout %v outside (0, %v]", key, r.Timeout, MaxIntegrationTimeout)
		}
		rt := &route{Route: r, key: key, segs: segs, timeout: r.Timeout}
		if rt.timeout == 0 {
			rt.timeout = MaxIntegrationTimeout
		}
		rt.shape = r.Method + " " + shapeOf(segs)
		if other, ok := seen[rt.shape]; ok {
			return nil, fmt.Errorf("gateway: route %q conflicts with %q", key, other)
		}
		seen[rt.shape] = key
		g.routes = append(g.routes, rt)
	}
	return g, nil
}

// find returns the most specific route matching method and the escaped path.
func (g *Gateway) find(method, escapedPath string) (*route, map[string]string) {
	parts, ok := splitRequestPath(escapedPath)
	if !ok {
		return nil, nil
	}
	var best *route
	var bestParams map[string]string
	for _, rt := range g.routes {
		if rt.Method != method && rt.Method != "ANY" {
			continue
		}
		params, ok := rt.match(parts)
		if ok && (best == nil || moreSpecific(rt, best)) {
			best, bestParams = rt, params
		}
	}
	return best, bestParams
}

// ServeHTTP routes one request to its function and writes the function's
// response, or API Gateway's own error responses.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	reqID := newRequestID()
	w.Header().Set("Apigw-Requestid", reqID)
	status, routeKey, err := g.serve(w, r, reqID, start)

	level := slog.LevelInfo
	attrs := []slog.Attr{
		slog.String("requestId", reqID),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.String("routeKey", routeKey),
		slog.Int("status", status),
		slog.Duration("duration", time.Since(start)),
	}
	if err != nil {
		level = slog.LevelError
		attrs = append(attrs, slog.String("err", err.Error()))
	}
	g.log.LogAttrs(r.Context(), level, "gateway request", attrs...)
}

// serve handles the request and returns the status written, the route key
// matched and the error behind a 5xx, for the single log line.
func (g *Gateway) serve(w http.ResponseWriter, r *http.Request, reqID string, start time.Time) (int, string, error) {
	rt, params := g.find(r.Method, r.URL.EscapedPath())
	if rt == nil {
		rt = g.fallback
	}
	if rt == nil {
		return gatewayError(w, http.StatusNotFound, "Not Found"), "", nil
	}
	if r.ContentLength > MaxBodyBytes {
		return gatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large"), rt.key, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return gatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large"), rt.key, nil
		}
		return gatewayError(w, http.StatusBadRequest, "Bad Request"), rt.key, nil
	}
	payload, err := json.Marshal(g.event(r, rt, params, body, reqID, start))
	if err != nil {
		return gatewayError(w, http.StatusInternalServerError, "Internal Server Error"), rt.key, fmt.Errorf("encode event: %w", err)
	}

	if len(payload) > MaxInvokePayload {
		// Lambda refuses the invocation (RequestEntityTooLarge) and API
		// Gateway answers 413: a body under 10 MiB can still be too large
		// once it is an event (binary bodies grow by a third in base64).
		return gatewayError(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large"), rt.key, nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), rt.timeout)
	defer cancel()
	out, err := rt.Invoker.Invoke(ctx, payload)
	if err != nil {
		if r.Context().Err() != nil {
			// The client went away: nobody reads an answer, and it is not
			// the function's failure. 499 is only for the log.
			return statusClientClosed, rt.key, nil
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return gatewayError(w, http.StatusServiceUnavailable, "Service Unavailable"), rt.key,
				fmt.Errorf("integration timeout after %v: %w", rt.timeout, err)
		}
		if errors.Is(err, lambdashim.ErrProcessExited) {
			// The execution environment died under the request (killed,
			// out of memory): Lambda reports Runtime.ExitError and API
			// Gateway answers 502 with its generic message. The caller may
			// retry; the next invocation gets a fresh process.
			return gatewayError(w, http.StatusBadGateway, "Internal Server Error"), rt.key, fmt.Errorf("invoke: %w", err)
		}
		return gatewayError(w, http.StatusInternalServerError, "Internal Server Error"), rt.key, fmt.Errorf("invoke: %w", err)
	}
	status, err := writeResponse(w, out)
	if err != nil {
		return gatewayError(w, http.StatusInternalServerError, "Internal Server Error"), rt.key, err
	}
	return status, rt.key, nil
}

// event builds the payload format 2.0 event of r.
func (g *Gateway) event(r *http.Request, rt *route, params map[string]string, body []byte, reqID string, start time.Time) events.APIGatewayV2HTTPRequest {
	sourceIP := r.RemoteAddr
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		sourceIP = host
	}
	headers := make(map[string]string, len(r.Header)+6)
	var cookies []string
	for k, vs := range r.Header {
		lk := strings.ToLower(k)
		if lk == "cookie" {
			for _, v := range vs {
				for c := range strings.SplitSeq(v, ";") {
					if c = strings.TrimSpace(c); c != "" {
						cookies = append(cookies, c)
					}
				}
			}
			continue
		}
		headers[lk] = strings.Join(vs, ",")
	}
	headers["host"] = r.Host
	if len(body) > 0 {
		headers["content-length"] = fmt.Sprint(len(body))
	}
	if xff := headers["x-forwarded-for"]; xff != "" {
		headers["x-forwarded-for"] = xff + ", " + sourceIP
	} else {
		headers["x-forwarded-for"] = sourceIP
	}
	headers["x-forwarded-proto"] = "http"
	if r.TLS != nil {
		headers["x-forwarded-proto"] = "https"
	}
	if addr, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		if _, port, err := net.SplitHostPort(addr.String()); err == nil {
			headers["x-forwarded-port"] = port
		}
	}
	if headers["x-amzn-trace-id"] == "" {
		headers["x-amzn-trace-id"] = newTraceID(start)
	}

	var query map[string]string
	if r.URL.RawQuery != "" {
		values, _ := url.ParseQuery(r.URL.RawQuery) // keep what parses, as API Gateway does
		query = make(map[string]string, len(values))
		for k, vs := range values {
			query[k] = strings.Join(vs, ",")
		}
	}

	domain := r.Host
	prefix := domain
	if h, _, err := net.SplitHostPort(domain); err == nil {
		prefix = h
	}
	prefix, _, _ = strings.Cut(prefix, ".")

	ev := events.APIGatewayV2HTTPRequest{
		Version:               "2.0",
		RouteKey:              rt.key,
		RawPath:               r.URL.EscapedPath(),
		RawQueryString:        r.URL.RawQuery,
		Cookies:               cookies,
		Headers:               headers,
		QueryStringParameters: query,
		PathParameters:        params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:     rt.key,
			AccountID:    accountID,
			Stage:        "$default",
			RequestID:    reqID,
			APIID:        g.apiID,
			DomainName:   domain,
			DomainPrefix: prefix,
			Time:         start.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:    start.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
			},
		},
	}
	if len(body) > 0 {
		if isText(r.Header.Get("Content-Type")) && utf8.Valid(body) {
			ev.Body = string(body)
		} else {
			ev.Body = base64.StdEncoding.EncodeToString(body)
			ev.IsBase64Encoded = true
		}
	}
	return ev
}

// isText reports whether a body of this content type travels as text.
func isText(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch {
	case strings.HasPrefix(mt, "text/"),
		mt == "application/json", strings.HasSuffix(mt, "+json"),
		mt == "application/xml", strings.HasSuffix(mt, "+xml"),
		mt == "application/javascript":
		return true
	}
	return false
}

// hopHeaders are computed by the server, never copied from a function.
var hopHeaders = []string{"Content-Length", "Transfer-Encoding", "Connection"}

// writeResponse writes the function's proxy response; an unusable one is an
// error (API Gateway answers 500 for a malformed Lambda proxy response).
func writeResponse(w http.ResponseWriter, out []byte) (int, error) {
	var resp events.APIGatewayV2HTTPResponse
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&resp); err != nil {
		return 0, fmt.Errorf("malformed Lambda proxy response: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 599 {
		return 0, fmt.Errorf("malformed Lambda proxy response: status code %d", resp.StatusCode)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			return 0, fmt.Errorf("malformed Lambda proxy response: body: %w", err)
		}
		body = b
	}
	h := w.Header()
	for k, v := range resp.Headers {
		if _, multi := resp.MultiValueHeaders[k]; !multi {
			h.Set(k, v)
		}
	}
	for k, vs := range resp.MultiValueHeaders {
		h.Del(k)
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		h.Add("Set-Cookie", c)
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
	if _, ok := h["Content-Type"]; !ok {
		h["Content-Type"] = nil // no sniffing: API Gateway sends what the function set
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
	return resp.StatusCode, nil
}

// gatewayError writes one of API Gateway's own JSON error responses.
func gatewayError(w http.ResponseWriter, status int, message string) int {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"message": message})
	_, _ = w.Write(b)
	return status
}

// newRequestID returns an id shaped like API Gateway's ("JKJaXmPLvHcESHA=").
func newRequestID() string {
	var b [10]byte
	_, _ = rand.Read(b[:])
	return base64.StdEncoding.EncodeToString(b[:])
}

// newTraceID returns an X-Ray trace header for a request that came without one.
func newTraceID(t time.Time) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("Root=1-%08x-%s", t.Unix(), hex.EncodeToString(b[:]))
}
