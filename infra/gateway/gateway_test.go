package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/reqtrace/reqtrace/infra/lambdashim"
)

// fakeInvoker is the Invoker of these tests: invoke, when set, does the
// work; otherwise it keeps the event it was sent (event) and answers resp
// (200 "ok" when unset).
type fakeInvoker struct {
	invoke func(ctx context.Context, payload []byte) ([]byte, error)
	mu     sync.Mutex
	last   events.APIGatewayV2HTTPRequest
	resp   events.APIGatewayV2HTTPResponse
}

func (f *fakeInvoker) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if f.invoke != nil {
		return f.invoke(ctx, payload)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = events.APIGatewayV2HTTPRequest{}
	if err := json.Unmarshal(payload, &f.last); err != nil {
		return nil, err
	}
	resp := f.resp
	if resp.StatusCode == 0 {
		resp = events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: "ok"}
	}
	return json.Marshal(resp)
}

func (f *fakeInvoker) event() events.APIGatewayV2HTTPRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

func newGateway(t *testing.T, routes []Route) *Gateway {
	t.Helper()
	g, err := New("wikiapi", routes, slog.New(slog.NewTextHandler(t.Output(), nil)))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return g
}

func serve(g http.Handler, req *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	g.ServeHTTP(w, req)
	return w
}

func TestRouting(t *testing.T) {
	t.Parallel()
	rec := &fakeInvoker{}
	var routes []Route
	for _, key := range []string{
		"ANY /things/{id}", // listed first: order must not decide
		"GET /things/{id}",
		"GET /pets/dog/1",
		"GET /pets/dog/{id}",
		"GET /pets/{proxy+}",
		"ANY /pets/{animal}/{id}",
		"GET /",
		"GET /rest/reqs/1/requirement2/{spaceKey}",
		"GET /rest/reqs/1/requirement2/{spaceKey}/{key}",
		"PUT /rest/reqs/1/api/{applinkId}/mode",
		"GET /rest/reqs/1/api/{applinkId}",
	} {
		method, path, _ := strings.Cut(key, " ")
		routes = append(routes, Route{Method: method, Path: path, Invoker: rec})
	}
	g := newGateway(t, routes)

	tests := []struct {
		method, target string
		wantRoute      string // "" means 404
		wantParams     map[string]string
	}{
		{"GET", "/pets/dog/1", "GET /pets/dog/1", nil},
		{"GET", "/pets/dog/2", "GET /pets/dog/{id}", map[string]string{"id": "2"}},
		// Both ANY /pets/{animal}/{id} and GET /pets/{proxy+} match: the
		// variable beats the greedy variable at the third segment.
		{"GET", "/pets/cat/1", "ANY /pets/{animal}/{id}", map[string]string{"animal": "cat", "id": "1"}},
		{"POST", "/pets/cat/1", "ANY /pets/{animal}/{id}", map[string]string{"animal": "cat", "id": "1"}},
		{"GET", "/pets/cat/1/toys", "GET /pets/{proxy+}", map[string]string{"proxy": "cat/1/toys"}},
		{"GET", "/", "GET /", nil},
		{"GET", "/things/1", "GET /things/{id}", map[string]string{"id": "1"}},
		{"PATCH", "/things/1", "ANY /things/{id}", map[string]string{"id": "1"}},
		{"GET", "/rest/reqs/1/requirement2/SPACE", "GET /rest/reqs/1/requirement2/{spaceKey}", map[string]string{"spaceKey": "SPACE"}},
		{"GET", "/rest/reqs/1/requirement2/SPACE/REQ-1", "GET /rest/reqs/1/requirement2/{spaceKey}/{key}", map[string]string{"spaceKey": "SPACE", "key": "REQ-1"}},
		{"GET", "/rest/reqs/1/requirement2/MY%20SPACE/A%2FB", "GET /rest/reqs/1/requirement2/{spaceKey}/{key}", map[string]string{"spaceKey": "MY SPACE", "key": "A/B"}},
		{"PUT", "/rest/reqs/1/api/7/mode", "PUT /rest/reqs/1/api/{applinkId}/mode", map[string]string{"applinkId": "7"}},
		// Not found: unknown path, other method only, too many or too few segments, empty variable.
		{"GET", "/nope", "", nil},
		{"DELETE", "/rest/reqs/1/requirement2/SPACE", "", nil},
		{"GET", "/rest/reqs/1/api/7/mode", "", nil},
		{"GET", "/rest/reqs/1/requirement2/SPACE/REQ-1/extra", "", nil},
		{"GET", "/rest/reqs/1/requirement2/", "", nil},
		{"GET", "/rest/reqs/1", "", nil},
		{"HEAD", "/", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.target, func(t *testing.T) {
			w := serve(g, httptest.NewRequest(tt.method, tt.target, nil))
			if tt.wantRoute == "" {
				if w.Code != http.StatusNotFound || w.Body.String() != `{"message":"Not Found"}` {
					t.Errorf("got %d %s, want 404 {\"message\":\"Not Found\"}", w.Code, w.Body)
				}
				return
			}
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d (%s), want 200", w.Code, w.Body)
			}
			ev := rec.event()
			if ev.RouteKey != tt.wantRoute || ev.RequestContext.RouteKey != tt.wantRoute {
				t.Errorf("routeKey = %q / %q, want %q", ev.RouteKey, ev.RequestContext.RouteKey, tt.wantRoute)
			}
			if len(ev.PathParameters) != len(tt.wantParams) {
				t.Errorf("pathParameters = %v, want %v", ev.PathParameters, tt.wantParams)
			}
			for k, v := range tt.wantParams {
				if ev.PathParameters[k] != v {
					t.Errorf("pathParameters[%s] = %q, want %q", k, ev.PathParameters[k], v)
				}
			}
		})
	}
}

func TestNewRejectsBadRoutes(t *testing.T) {
	t.Parallel()
	inv := &fakeInvoker{}
	tests := []struct {
		name   string
		routes []Route
		want   string
	}{
		{"duplicate", []Route{{"GET", "/a", inv, 0}, {"get", "/a", inv, 0}}, "conflicts"},
		{"same shape", []Route{{"GET", "/a/{x}", inv, 0}, {"GET", "/a/{y}", inv, 0}}, "conflicts"},
		{"same greedy", []Route{{"ANY", "/a/{p+}", inv, 0}, {"ANY", "/a/{q+}", inv, 0}}, "conflicts"},
		{"bad method", []Route{{"FETCH", "/a", inv, 0}}, "unsupported method"},
		{"relative path", []Route{{"GET", "a", inv, 0}}, "start with /"},
		{"empty segment", []Route{{"GET", "/a//b", inv, 0}}, "empty path segment"},
		{"trailing slash", []Route{{"GET", "/a/", inv, 0}}, "empty path segment"},
		{"greedy not last", []Route{{"GET", "/{p+}/a", inv, 0}}, "last segment"},
		{"variable twice", []Route{{"GET", "/{a}/{a}", inv, 0}}, "used twice"},
		{"mixed segment", []Route{{"GET", "/a{b}", inv, 0}}, "mixes"},
		{"empty variable", []Route{{"GET", "/{}", inv, 0}}, "bad variable"},
		{"nil invoker", []Route{{"GET", "/a", nil, 0}}, "nil invoker"},
		{"timeout too long", []Route{{"GET", "/a", inv, time.Minute}}, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New("api", tt.routes, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New error = %v, want one containing %q", err, tt.want)
			}
		})
	}
	// Same path with different methods, and a method beside ANY, are fine.
	if _, err := New("api", []Route{{"GET", "/a/{x}", inv, 0}, {"POST", "/a/{y}", inv, 0}, {"ANY", "/a/{z}", inv, 0}}, nil); err != nil {
		t.Errorf("New: %v", err)
	}
}

func TestRequestEvent(t *testing.T) {
	t.Parallel()
	rec := &fakeInvoker{}
	g := newGateway(t, []Route{{Method: "POST", Path: "/rest/reqs/1/requirement2/{spaceKey}", Invoker: rec}})
	req := httptest.NewRequest("POST", "http://wiki.local:8080/rest/reqs/1/requirement2/SP?q=a&q=b&text=x%20y&empty=", strings.NewReader(`{"a":1}`))
	req.RemoteAddr = "192.0.2.7:5555"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "reqtrace-test/1")
	req.Header.Add("X-Multi", "1")
	req.Header.Add("X-Multi", "2")
	req.Header.Set("Authorization", "Bearer tok")
	req.Header.Add("Cookie", "a=1; b=2")
	req.Header.Add("Cookie", "c=3")
	before := time.Now()
	w := serve(g, req)
	if w.Code != http.StatusOK {
		t.Fatalf("status = %d (%s)", w.Code, w.Body)
	}
	ev := rec.event()
	rc := ev.RequestContext

	checks := []struct {
		name      string
		got, want any
	}{
		{"version", ev.Version, "2.0"},
		{"routeKey", ev.RouteKey, "POST /rest/reqs/1/requirement2/{spaceKey}"},
		{"rawPath", ev.RawPath, "/rest/reqs/1/requirement2/SP"},
		{"rawQueryString", ev.RawQueryString, "q=a&q=b&text=x%20y&empty="},
		{"cookies", strings.Join(ev.Cookies, "|"), "a=1|b=2|c=3"},
		{"cookie header removed", ev.Headers["cookie"], ""},
		{"joined header", ev.Headers["x-multi"], "1,2"},
		{"authorization", ev.Headers["authorization"], "Bearer tok"},
		{"content-type", ev.Headers["content-type"], "application/json"},
		{"host", ev.Headers["host"], "wiki.local:8080"},
		{"x-forwarded-for", ev.Headers["x-forwarded-for"], "192.0.2.7"},
		{"query q", ev.QueryStringParameters["q"], "a,b"},
		{"query text", ev.QueryStringParameters["text"], "x y"},
		{"query empty", ev.QueryStringParameters["empty"], ""},
		{"pathParameters", ev.PathParameters["spaceKey"], "SP"},
		{"body", ev.Body, `{"a":1}`},
		{"isBase64Encoded", ev.IsBase64Encoded, false},
		{"accountId", rc.AccountID, "000000000000"},
		{"apiId", rc.APIID, "wikiapi"},
		{"domainName", rc.DomainName, "wiki.local:8080"},
		{"domainPrefix", rc.DomainPrefix, "wiki"},
		{"stage", rc.Stage, "$default"},
		{"context routeKey", rc.RouteKey, "POST /rest/reqs/1/requirement2/{spaceKey}"},
		{"requestId", rc.RequestID, w.Header().Get("Apigw-Requestid")},
		{"http.method", rc.HTTP.Method, "POST"},
		{"http.path", rc.HTTP.Path, "/rest/reqs/1/requirement2/SP"},
		{"http.protocol", rc.HTTP.Protocol, "HTTP/1.1"},
		{"http.sourceIp", rc.HTTP.SourceIP, "192.0.2.7"},
		{"http.userAgent", rc.HTTP.UserAgent, "reqtrace-test/1"},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %#v, want %#v", c.name, c.got, c.want)
		}
	}
	if len(rc.RequestID) != 16 {
		t.Errorf("requestId = %q, want 16 characters", rc.RequestID)
	}
	if !strings.HasPrefix(ev.Headers["x-amzn-trace-id"], "Root=1-") {
		t.Errorf("x-amzn-trace-id = %q, want Root=1-...", ev.Headers["x-amzn-trace-id"])
	}
	if at := time.UnixMilli(rc.TimeEpoch); at.Before(before.Truncate(time.Millisecond)) || at.After(time.Now()) {
		t.Errorf("timeEpoch = %v, want the request time", at)
	}
	if _, err := time.Parse("02/Jan/2006:15:04:05 -0700", rc.Time); err != nil {
		t.Errorf("time = %q: %v", rc.Time, err)
	}

	// No query string: no queryStringParameters at all, as API Gateway.
	if w := serve(g, httptest.NewRequest("POST", "/rest/reqs/1/requirement2/SP", nil)); w.Code != 200 {
		t.Fatalf("status = %d", w.Code)
	}
	if ev := rec.event(); ev.QueryStringParameters != nil || ev.Cookies != nil || ev.Body != "" {
		t.Errorf("event without query, cookies, body = %+v", ev)
	}
}

func TestRequestBodyEncoding(t *testing.T) {
	t.Parallel()
	rec := &fakeInvoker{}
	g := newGateway(t, []Route{{Method: "PUT", Path: "/content/{id}", Invoker: rec}})
	binary := []byte{0x89, 'P', 'N', 'G', 0, 0xff}
	tests := []struct {
		contentType string
		body        []byte
		wantBase64  bool
	}{
		{"application/json", []byte(`{"x":"é"}`), false},
		{"text/plain; charset=utf-8", []byte("hello"), false},
		{"application/xhtml+xml", []byte("<p/>"), false},
		{"application/vnd.api+json", []byte("{}"), false},
		{"application/octet-stream", binary, true},
		{"image/png", binary, true},
		{"application/x-www-form-urlencoded", []byte("a=1&b=2"), true},
		{"", []byte("no type"), true},
		{"text/plain", binary, true}, // not UTF-8: cannot travel as text
	}
	for _, tt := range tests {
		t.Run(tt.contentType, func(t *testing.T) {
			req := httptest.NewRequest("PUT", "/content/1", bytes.NewReader(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			if w := serve(g, req); w.Code != 200 {
				t.Fatalf("status = %d", w.Code)
			}
			ev := rec.event()
			if ev.IsBase64Encoded != tt.wantBase64 {
				t.Errorf("isBase64Encoded = %v, want %v", ev.IsBase64Encoded, tt.wantBase64)
			}
			got := []byte(ev.Body)
			if ev.IsBase64Encoded {
				var err error
				if got, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, tt.body) {
				t.Errorf("body = %q, want %q", got, tt.body)
			}
		})
	}
}

func TestResponseTranslation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		resp        string // the function's JSON response
		wantStatus  int
		wantHeaders map[string][]string
		wantBody    string
	}{
		{
			name: "headers, multi-value headers and cookies",
			resp: `{"statusCode":201,"headers":{"Content-Type":"application/json","X-One":"1","X-Both":"from-headers"},
				"multiValueHeaders":{"X-Many":["a","b"],"X-Both":["m1","m2"]},"cookies":["s=1; Path=/","t=2"],"body":"{\"ok\":true}"}`,
			wantStatus: 201,
			wantHeaders: map[string][]string{
				"Content-Type": {"application/json"}, "X-One": {"1"}, "X-Many": {"a", "b"},
				"X-Both": {"m1", "m2"}, "Set-Cookie": {"s=1; Path=/", "t=2"},
			},
			wantBody: `{"ok":true}`,
		},
		{
			name:        "base64 body",
			resp:        `{"statusCode":200,"headers":{"Content-Type":"image/png"},"body":"iVBORw0KGgo=","isBase64Encoded":true}`,
			wantStatus:  200,
			wantHeaders: map[string][]string{"Content-Type": {"image/png"}},
			wantBody:    "\x89PNG\r\n\x1a\n",
		},
		{
			name:        "no content type is not sniffed",
			resp:        `{"statusCode":404,"body":"<html>"}`,
			wantStatus:  404,
			wantHeaders: map[string][]string{"Content-Type": nil},
			wantBody:    "<html>",
		},
		{
			name:        "function content-length is recomputed",
			resp:        `{"statusCode":200,"headers":{"Content-Length":"999"},"body":"abc"}`,
			wantStatus:  200,
			wantHeaders: map[string][]string{"Content-Length": {"3"}},
			wantBody:    "abc",
		},
		{name: "not JSON", resp: `hello`, wantStatus: 500, wantBody: `{"message":"Internal Server Error"}`},
		{name: "no status code", resp: `{"body":"x"}`, wantStatus: 500, wantBody: `{"message":"Internal Server Error"}`},
		{name: "bad base64", resp: `{"statusCode":200,"body":"%%%","isBase64Encoded":true}`, wantStatus: 500, wantBody: `{"message":"Internal Server Error"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			inv := &fakeInvoker{invoke: func(context.Context, []byte) ([]byte, error) { return []byte(tt.resp), nil }}
			// A real server: it is the one that would sniff a content type or
			// trip over a wrong Content-Length.
			srv := httptest.NewServer(newGateway(t, []Route{{Method: "GET", Path: "/x", Invoker: inv}}))
			defer srv.Close()
			resp, err := srv.Client().Get(srv.URL + "/x")
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tt.wantStatus || string(body) != tt.wantBody {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tt.wantStatus, tt.wantBody)
			}
			for k, want := range tt.wantHeaders {
				if got := resp.Header.Values(k); !slices.Equal(got, want) {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
			if resp.Header.Get("Apigw-Requestid") == "" {
				t.Error("no Apigw-Requestid header")
			}
		})
	}
}

func TestInvokeFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		invoke     func(ctx context.Context, payload []byte) ([]byte, error)
		timeout    time.Duration
		wantStatus int
		wantBody   string
		wantLog    string
	}{
		{
			name:       "function error",
			invoke:     func(context.Context, []byte) ([]byte, error) { return nil, errors.New("errorString: boom") },
			wantStatus: 500, wantBody: `{"message":"Internal Server Error"}`, wantLog: "boom",
		},
		{
			name: "process killed under the request",
			invoke: func(context.Context, []byte) ([]byte, error) {
				return nil, fmt.Errorf("invoke f: %w", lambdashim.ErrProcessExited)
			},
			wantStatus: 502, wantBody: `{"message":"Internal Server Error"}`, wantLog: "process exited",
		},
		{
			name: "integration timeout",
			invoke: func(ctx context.Context, _ []byte) ([]byte, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
			timeout:    50 * time.Millisecond,
			wantStatus: 503, wantBody: `{"message":"Service Unavailable"}`, wantLog: "integration timeout",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs bytes.Buffer
			g, err := New("api", []Route{{Method: "GET", Path: "/x", Invoker: &fakeInvoker{invoke: tt.invoke}, Timeout: tt.timeout}},
				slog.New(slog.NewJSONHandler(&logs, nil)))
			if err != nil {
				t.Fatal(err)
			}
			w := serve(g, httptest.NewRequest("GET", "/x", nil))
			if w.Code != tt.wantStatus || w.Body.String() != tt.wantBody {
				t.Errorf("got %d %q, want %d %q", w.Code, w.Body, tt.wantStatus, tt.wantBody)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			var line map[string]any
			if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
				t.Fatalf("want exactly one JSON log line, got %q: %v", logs.String(), err)
			}
			if line["level"] != "ERROR" || !strings.Contains(line["err"].(string), tt.wantLog) ||
				line["requestId"] != w.Header().Get("Apigw-Requestid") || line["routeKey"] != "GET /x" {
				t.Errorf("log line = %v, want an ERROR with %q, the request id and route", line, tt.wantLog)
			}
		})
	}
}

func TestClientGoneIsNotAnError(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	ctx, cancel := context.WithCancel(t.Context())
	inv := &fakeInvoker{invoke: func(ctx context.Context, _ []byte) ([]byte, error) {
		cancel() // the client disconnects while the function runs
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	g, err := New("api", []Route{{Method: "GET", Path: "/x", Invoker: inv}}, slog.New(slog.NewJSONHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	w := serve(g, httptest.NewRequestWithContext(ctx, "GET", "/x", nil))
	if w.Body.Len() != 0 {
		t.Errorf("wrote %q to a client that went away", w.Body)
	}
	var line map[string]any
	if err := json.Unmarshal(logs.Bytes(), &line); err != nil {
		t.Fatalf("log %q: %v", logs.String(), err)
	}
	if line["level"] != "INFO" || line["status"] != float64(499) {
		t.Errorf("log line = %v, want INFO with status 499", line)
	}
}

func TestBodyLimit(t *testing.T) {
	t.Parallel()
	calls := 0
	inv := &fakeInvoker{invoke: func(context.Context, []byte) ([]byte, error) {
		calls++
		return []byte(`{"statusCode":204}`), nil
	}}
	g := newGateway(t, []Route{{Method: "POST", Path: "/upload", Invoker: inv}})
	tests := []struct {
		name       string
		size       int
		ctype      string // text travels as is, anything else in base64
		chunked    bool   // no Content-Length: the limit applies while reading
		wantStatus int
	}{
		{"text that fits an invocation", MaxInvokePayload - 4096, "text/plain", false, 204},
		{"text over the invocation payload", MaxInvokePayload + 1, "text/plain", false, 413},
		{"binary that fits once in base64", 4 << 20, "", false, 204},
		{"binary over the payload once in base64", 46 << 20 / 10, "", false, 413},
		{"over the limit", MaxBodyBytes + 1, "text/plain", false, 413},
		{"over the limit, chunked", MaxBodyBytes + 1, "", true, 413},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls = 0
			req := httptest.NewRequest("POST", "/upload", bytes.NewReader(bytes.Repeat([]byte("a"), tt.size)))
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			if tt.chunked {
				req.ContentLength = -1
			}
			w := serve(g, req)
			if w.Code != tt.wantStatus {
				t.Errorf("status = %d, want %d", w.Code, tt.wantStatus)
			}
			if tt.wantStatus == 413 && (calls != 0 || w.Body.String() != `{"message":"Request Entity Too Large"}`) {
				t.Errorf("413 with %d invocations and body %q", calls, w.Body)
			}
		})
	}
}

// FuzzParsePath checks that any route path that parses is matched by a
// request built from it, with the expected parameters.
func FuzzParsePath(f *testing.F) {
	for _, s := range []string{"/", "/a", "/a/{b}", "/a/{b}/c/{d+}", "/{proxy+}", "/a%20b/{x}", "//", "/{a", "/{a+}/b", "/{}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		segs, err := parsePath(path)
		if err != nil {
			return
		}
		rt := &route{Route: Route{Method: "GET", Path: path}, segs: segs}
		var parts []string
		want := map[string]string{}
		for _, s := range segs {
			switch s.kind {
			case literal:
				parts = append(parts, s.lit)
			case variable:
				parts = append(parts, "v")
				want[s.text] = "v"
			case greedy:
				parts = append(parts, "g1", "g2")
				want[s.text] = "g1/g2"
			}
		}
		if slices.ContainsFunc(parts, func(p string) bool { return strings.Contains(p, "/") || p == "" }) {
			return // a literal that decodes to a slash cannot be requested segment by segment
		}
		params, ok := rt.match(parts)
		if !ok {
			t.Fatalf("route %q does not match %q", path, parts)
		}
		for k, v := range want {
			if params[k] != v {
				t.Errorf("route %q: param %s = %q, want %q", path, k, params[k], v)
			}
		}
	})
}

func TestDefaultRouteTakesUnmatchedRequests(t *testing.T) {
	named, fallback := &fakeInvoker{}, &fakeInvoker{}
	g := newGateway(t, []Route{
		{Method: "GET", Path: "/things/{id}", Invoker: named},
		{Method: "ANY", Path: DefaultRoute, Invoker: fallback},
	})
	if w := serve(g, httptest.NewRequest("GET", "/things/7", nil)); w.Code != 200 || named.event().RouteKey != "GET /things/{id}" {
		t.Fatalf("named route not preferred: %d %q", w.Code, named.event().RouteKey)
	}
	for _, req := range []*http.Request{httptest.NewRequest("PATCH", "/things/7", nil), httptest.NewRequest("GET", "/nowhere", nil)} {
		if w := serve(g, req); w.Code != 200 {
			t.Fatalf("%s %s: %d", req.Method, req.URL.Path, w.Code)
		}
		ev := fallback.event()
		if ev.RouteKey != DefaultRoute || ev.RawPath != req.URL.Path || len(ev.PathParameters) != 0 {
			t.Fatalf("%s %s: fallback event %q %q %v", req.Method, req.URL.Path, ev.RouteKey, ev.RawPath, ev.PathParameters)
		}
	}
	if _, err := New("api", []Route{{Method: "ANY", Path: DefaultRoute, Invoker: named}, {Method: "ANY", Path: DefaultRoute, Invoker: fallback}}, nil); err == nil {
		t.Fatal("two $default routes accepted")
	}
}
