package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
)

func testRouter() *Router {
	store := httpapitest.Tokens{
		"admin":   {Tenant: "demo", App: auth.Wiki, Kind: auth.User, User: "a", Admin: true},
		"user":    {Tenant: "demo", App: auth.Wiki, Kind: auth.User, User: "u"},
		"link":    {Tenant: "demo", App: auth.Wiki, Kind: auth.Link, User: "link:jira-1", Scope: "jira-1"},
		"tracker": {Tenant: "demo", App: auth.Tracker, Kind: auth.User, User: "t"},
		// the incoming credential of a DISABLED integration
		"disabled": {Tenant: "demo", App: auth.Wiki, Kind: auth.Link, User: "link:jira-1", Scope: "jira-1", Disabled: true},
	}
	rt := NewRouter(auth.Wiki, auth.NewAuthenticator(store, time.Minute))
	ok := func(w http.ResponseWriter, _ *http.Request, p auth.Principal) error {
		WriteJSON(w, 200, map[string]string{"user": p.User})
		return nil
	}
	rt.HandleAnonymous("GET /open", func(w http.ResponseWriter, r *http.Request) error {
		p, _ := Caller(r)
		return ok(w, r, p)
	})
	rt.Handle("GET /member", Member, ok)
	rt.Handle("GET /reader", Reader, ok)
	rt.Handle("GET /admin", Admin, ok)
	rt.Handle("PUT /integration/{serviceId}/links", AdminOrOwnLink, ok)
	rt.Handle("POST /link", LinkOnly, ok)
	rt.Handle("GET /panic", Member, func(http.ResponseWriter, *http.Request, auth.Principal) error { panic("boom") })
	rt.Handle("GET /fail", Member, func(http.ResponseWriter, *http.Request, auth.Principal) error {
		return errors.New("db password=secret")
	})
	rt.Handle("POST /decode", Member, func(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
		var v struct {
			Name  string `json:"name"`
			Count int    `json:"count"`
		}
		if err := Decode(r, &v); err != nil {
			return err
		}
		WriteJSON(w, 200, v)
		return nil
	})
	return rt
}

func do(t *testing.T, h http.Handler, method, path, token, ctype, body string) (*httptest.ResponseRecorder, ErrorBody) {
	t.Helper()
	rec := httpapitest.Do(h, method, path, token, ctype, body)
	var eb ErrorBody
	if rec.Code >= 400 {
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: error content type %q", method, path, ct)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &eb); err != nil || eb.Status != rec.Code || eb.Message == "" {
			t.Fatalf("%s %s: bad error body %q", method, path, rec.Body.String())
		}
	}
	return rec, eb
}

func TestAccessRules(t *testing.T) {
	rt := testRouter()
	cases := []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/open", "", 200},
		{"GET", "/open", "bogus", 401},
		{"GET", "/member", "", 401},
		{"GET", "/member", "bogus", 401},
		{"GET", "/member", "user", 200},
		{"GET", "/member", "link", 403},
		{"GET", "/member", "tracker", 401},
		{"GET", "/reader", "link", 200},
		{"GET", "/admin", "user", 403},
		{"GET", "/admin", "admin", 200},
		{"GET", "/admin", "link", 403},
		{"PUT", "/integration/jira-1/links", "link", 200},
		{"PUT", "/integration/jira-2/links", "link", 403},
		{"PUT", "/integration/jira-2/links", "admin", 200},
		{"PUT", "/integration/jira-2/links", "user", 403},
		{"POST", "/link", "link", 200},
		{"POST", "/link", "admin", 403},
	}
	for _, c := range cases {
		t.Run(c.method+c.path+"/"+c.token, func(t *testing.T) {
			rec, _ := do(t, rt, c.method, c.path, c.token, "", "")
			if rec.Code != c.want {
				t.Fatalf("status %d, want %d: %s", rec.Code, c.want, rec.Body)
			}
		})
	}
}

// TestHandlersGetThePrincipal: authenticated handlers receive the caller
// the router resolved; an Anonymous handler sees one through Caller only
// when a valid token was sent; Handle refuses Anonymous routes.
func TestHandlersGetThePrincipal(t *testing.T) {
	rt := testRouter()
	for _, c := range []struct{ path, token, user string }{
		{"/member", "user", "u"}, {"/reader", "link", "link:jira-1"}, {"/admin", "admin", "a"},
		{"/open", "user", "u"}, {"/open", "", ""},
	} {
		rec, _ := do(t, rt, "GET", c.path, c.token, "", "")
		var body map[string]string
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != 200 || body["user"] != c.user {
			t.Errorf("GET %s as %q: %d %s, want user %q", c.path, c.token, rec.Code, rec.Body, c.user)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Handle accepted an Anonymous route")
		}
	}()
	rt.Handle("GET /anonymous", Anonymous, func(http.ResponseWriter, *http.Request, auth.Principal) error { return nil })
}

// TestDisabledLinkForbiddenEverywhere: the incoming credential of a
// DISABLED integration answers 403 naming the integration on every route,
// whatever the route's access rule (even where it would be allowed), and
// only after the token itself was checked.
func TestDisabledLinkForbiddenEverywhere(t *testing.T) {
	rt := testRouter()
	for _, c := range []struct{ method, path string }{
		{"GET", "/open"}, {"GET", "/member"}, {"GET", "/reader"}, {"GET", "/admin"},
		{"PUT", "/integration/jira-1/links"}, {"PUT", "/integration/jira-2/links"}, {"POST", "/link"},
	} {
		rec, eb := do(t, rt, c.method, c.path, "disabled", "", "")
		if rec.Code != 403 || eb.Message != "integration 'jira-1' is DISABLED" {
			t.Fatalf("%s %s with a disabled link: %d %s", c.method, c.path, rec.Code, rec.Body)
		}
	}
	// The same routes still work with the enabled credential.
	if rec, _ := do(t, rt, "PUT", "/integration/jira-1/links", "link", "", ""); rec.Code != 200 {
		t.Fatalf("enabled link: %d", rec.Code)
	}
}

func TestMalformedAuthorizationHeader(t *testing.T) {
	for _, h := range []string{"Basic dXNlcjpwYXNz", "user", "Bearer", "Bearer "} {
		req := httptest.NewRequest("GET", "/member", nil)
		req.Header.Set("Authorization", h)
		rec := httptest.NewRecorder()
		testRouter().ServeHTTP(rec, req)
		// The hint says how to send a token, never what was sent.
		if rec.Code != 401 || !strings.Contains(rec.Body.String(), `must be \"Bearer \u003ctoken\u003e\"`) && !strings.Contains(rec.Body.String(), `must be \"Bearer <token>\"`) {
			t.Errorf("Authorization %q: %d %s", h, rec.Code, rec.Body)
		}
		if h != "Bearer" && h != "Bearer " && strings.Contains(rec.Body.String(), h) {
			t.Errorf("Authorization %q is repeated in the answer", h)
		}
	}
}

func TestNoRouteAnswersJSON(t *testing.T) {
	rt := testRouter()
	rec, _ := do(t, rt, "GET", "/nowhere", "user", "", "")
	if rec.Code != 404 {
		t.Fatalf("status %d", rec.Code)
	}
	rec, _ = do(t, rt, "DELETE", "/admin", "admin", "", "")
	if rec.Code != 405 || rec.Header().Get("Allow") != "GET" {
		t.Fatalf("status %d allow %q", rec.Code, rec.Header().Get("Allow"))
	}
}

// TestAuthenticateBeforeNoRoute: a caller without a valid token learns
// nothing of the routes (401 before 404 and 405), except on a path whose
// every route is anonymous.
func TestAuthenticateBeforeNoRoute(t *testing.T) {
	rt := testRouter()
	for _, c := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/nowhere", "", 401},
		{"GET", "/nowhere", "bogus", 401},
		{"GET", "/nowhere", "tracker", 401}, // the other application's token
		{"GET", "/nowhere", "user", 404},
		{"DELETE", "/admin", "", 401},
		{"DELETE", "/admin", "bogus", 401},
		{"DELETE", "/admin", "user", 405},
		{"POST", "/open", "", 405}, // every route of /open is anonymous
		{"POST", "/open", "bogus", 401},
	} {
		if rec, _ := do(t, rt, c.method, c.path, c.token, "", ""); rec.Code != c.want {
			t.Errorf("%s %s with token %q: %d, want %d", c.method, c.path, c.token, rec.Code, c.want)
		}
	}
}

// TestBodyCheckedBeforeAuthentication: 413 and 415 come before the token is
// looked at, on every route, and the body read for the check reaches the
// handler whole.
func TestBodyCheckedBeforeAuthentication(t *testing.T) {
	rt := testRouter()
	big := strings.Repeat("x", MaxBody+1)
	for _, c := range []struct {
		name, method, path, token, ctype, body string
		chunked                                bool
		want                                   int
	}{
		{"too large, no token", "POST", "/decode", "", "application/json", big, false, 413},
		{"too large, chunked, no token", "POST", "/decode", "", "application/json", big, true, 413},
		{"too large on a GET", "GET", "/member", "bogus", "application/json", big, false, 413},
		{"too large on an anonymous route", "GET", "/open", "", "text/plain", big, false, 413},
		{"wrong type, no token", "POST", "/decode", "", "text/plain", `{}`, false, 415},
		{"binary, bad token", "POST", "/link", "bogus", "application/octet-stream", "\x00\x01", false, 415},
		{"no type, no token", "POST", "/decode", "", "", `{}`, false, 415},
		{"empty body, no token", "POST", "/decode", "", "", "", false, 401},
		{"right type, no token", "POST", "/decode", "", "application/json", `{}`, false, 401},
		{"at the limit", "POST", "/decode", "user", "application/json", `{"name":"` + strings.Repeat("x", MaxBody-11) + `"}`, true, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
			if c.chunked {
				req.ContentLength = -1
			}
			if c.ctype != "" {
				req.Header.Set("Content-Type", c.ctype)
			}
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			rec := httptest.NewRecorder()
			rt.ServeHTTP(rec, req)
			if rec.Code != c.want {
				t.Fatalf("%d %s, want %d", rec.Code, rec.Body, c.want)
			}
			if c.want == 200 && !strings.Contains(rec.Body.String(), strings.Repeat("x", 1000)) {
				t.Fatal("the handler did not get the whole body")
			}
		})
	}
}

func TestInternalErrorsHideDetails(t *testing.T) {
	rt := testRouter()
	for _, path := range []string{"/panic", "/fail"} {
		rec, eb := do(t, rt, "GET", path, "user", "", "")
		if rec.Code != 500 || strings.Contains(rec.Body.String(), "secret") || strings.Contains(eb.Message, "boom") {
			t.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
		}
		if rec.Header().Get("X-Request-Id") == "" {
			t.Fatal("no request id")
		}
	}
}

func TestDecode(t *testing.T) {
	rt := testRouter()
	big := `{"name":"` + strings.Repeat("x", MaxBody) + `"}`
	cases := []struct {
		name, ctype, body string
		want              int
		msg               string
	}{
		{"ok", "application/json", `{"name":"a","count":2}`, 200, ""},
		{"charset", "application/json; charset=utf-8", `{"name":"a"}`, 200, ""},
		{"malformed", "application/json", `{"name":`, 400, "malformed JSON"},
		{"syntax", "application/json", `{"name" "a"}`, 400, "malformed JSON"},
		{"wrong type", "application/json", `{"count":"2"}`, 400, "wrong JSON type for count: got string, want an integer"},
		{"fraction for an integer", "application/json", `{"count":2.5}`, 400, "got number 2.5, want an integer"},
		{"array for the body", "application/json", `[]`, 400, "wrong JSON type for the body: got array, want an object"},
		{"object for a string", "application/json", `{"name":{}}`, 400, "got object, want a string"},
		{"unknown field", "application/json", `{"nmae":"a"}`, 400, `unknown field "nmae"`},
		{"trailing", "application/json", `{"name":"a"} {}`, 400, "after the JSON value"},
		{"empty", "application/json", ``, 400, "empty body"},
		{"no content type", "", `{}`, 415, "Content-Type"},
		{"text", "text/plain", `{}`, 415, "Content-Type"},
		{"too large", "application/json", big, 413, "larger than"},
		{"latin-1 bytes", "application/json", "{\"name\":\"caf\xe9\"}", 400, "not valid UTF-8"},
		{"latin-1 charset", "application/json; charset=latin1", `{"name":"a"}`, 415, "charset"},
		// Issue 15: duplicate names (also equal but for case), names in
		// another case, trailing data.
		{"duplicate name", "application/json", `{"name":"a","name":"b"}`, 400, `duplicate name "name"`},
		{"duplicate name but for case", "application/json", `{"name":"a","Name":"b"}`, 400, `duplicate name "Name": equal but for case to "name"`},
		{"escaped duplicate", "application/json", `{"name":"a","n\u0061me":"b"}`, 400, `duplicate name "name"`},
		{"name in another case", "application/json", `{"Name":"a"}`, 400, `unknown field "Name": the name is "name"`},
		{"all upper case", "application/json", `{"COUNT":1}`, 400, `unknown field "COUNT": the name is "count"`},
		{"duplicate unknown names", "application/json", `{"x":1,"X":2}`, 400, `duplicate name "X"`},
		{"trailing garbage", "application/json", `{"name":"a"}x`, 400, "unexpected data after the JSON value at byte 12"},
		{"trailing value", "application/json", `{"name":"a"} "b"`, 400, "unexpected data after the JSON value at byte 13"},
		{"trailing white space", "application/json", "{\"name\":\"a\"}\r\n\t ", 200, ""},
		{"lone surrogate", "application/json", `{"name":"\ud800"}`, 400, "malformed JSON at byte"},
		{"syntax offset", "application/json", `{"name" "a"}`, 400, "malformed JSON at byte 8"},
		{"number out of range", "application/json", `{"count":99999999999999999999}`, 400, "number out of range for count"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec, eb := do(t, rt, "POST", "/decode", "user", c.ctype, c.body)
			if rec.Code != c.want || !strings.Contains(eb.Message, c.msg) {
				t.Fatalf("got %d %q, want %d containing %q", rec.Code, eb.Message, c.want, c.msg)
			}
		})
	}
}

// fakeLimiter lets through the first n requests of each tenant and
// application and records who asked.
type fakeLimiter struct {
	n     int
	asked []string
}

func (f *fakeLimiter) Allow(_ context.Context, tenant string, app auth.App) (time.Duration, bool) {
	f.asked = append(f.asked, tenant+"/"+string(app))
	used := 0
	for _, a := range f.asked {
		if a == tenant+"/"+string(app) {
			used++
		}
	}
	return 1500 * time.Millisecond, used <= f.n
}

func TestLimiter(t *testing.T) {
	rt := testRouter()
	lim := &fakeLimiter{n: 1}
	rt.Limiter = lim
	if rec, _ := do(t, rt, "GET", "/member", "user", "", ""); rec.Code != 200 {
		t.Fatalf("first request: %d", rec.Code)
	}
	rec, eb := do(t, rt, "GET", "/member", "user", "", "")
	if rec.Code != 429 || rec.Header().Get("Retry-After") != "2" {
		t.Fatalf("past the limit: status %d retry-after %q, want 429 and 2 (1.5 s rounded up)", rec.Code, rec.Header().Get("Retry-After"))
	}
	if len(eb.ErrorMessages) != 1 || eb.ErrorMessages[0] != eb.Message || eb.Errors == nil {
		t.Fatalf("429 body %q lacks errorMessages/errors", rec.Body.String())
	}
	// Requests without a tenant are not counted: an anonymous call, a
	// missing or unknown token.
	do(t, rt, "GET", "/open", "", "", "")
	do(t, rt, "GET", "/member", "", "", "")
	do(t, rt, "GET", "/member", "nope", "", "")
	if want := []string{"demo/wiki", "demo/wiki"}; !slices.Equal(lim.asked, want) {
		t.Fatalf("limiter asked for %v, want %v (tenant and the router's application)", lim.asked, want)
	}
	// An anonymous route called with a token counts against its tenant.
	if rec, _ := do(t, rt, "GET", "/open", "user", "", ""); rec.Code != 429 {
		t.Fatalf("anonymous route with the throttled tenant's token: %d, want 429", rec.Code)
	}
}

// TestAccessLogNamesTheTenant: the one access line of a request carries the
// tenant and user once the token is known (429s are counted per tenant
// from it), and nothing of the kind without a token.
func TestAccessLogNamesTheTenant(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	rt := testRouter()
	rt.Logger = slog.New(slog.NewJSONHandler(&buf, nil))
	rt.Limiter = &fakeLimiter{n: 0}
	access := func(token string) map[string]any {
		t.Helper()
		buf.Reset()
		do(t, rt, "GET", "/member", token, "", "")
		for l := range strings.Lines(buf.String()) {
			var line map[string]any
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatalf("log %q: %v", l, err)
			}
			if line["msg"] == "request" {
				return line
			}
		}
		t.Fatalf("no access line in %q", buf.String())
		return nil
	}
	if line := access("user"); line["status"] != float64(429) || line["tenant"] != "demo" || line["user"] != "u" {
		t.Fatalf("access line of a throttled request: %v", line)
	}
	if line := access(""); line["status"] != float64(401) || line["tenant"] != nil || line["user"] != nil {
		t.Fatalf("access line without a token: %v", line)
	}
}

func TestQueryPosition(t *testing.T) {
	rec := httptest.NewRecorder()
	WriteError(rec, httptest.NewRequest("GET", "/", nil), apperr.InvalidAt(7, "unexpected ')'"))
	if !strings.Contains(rec.Body.String(), `"position":7`) {
		t.Fatal(rec.Body.String())
	}
}

// TestErrorBodyConvention checks that every error body carries
// errorMessages and errors (the Atlassian REST convention existing clients
// read), with the field of a field error named in errors.
func TestErrorBodyConvention(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		status int
		errors map[string]string
	}{
		{"plain", apperr.NotFoundf("requirement DEMO/REQ-9 not found"), 404, map[string]string{}},
		{"field", fmt.Errorf("save: %w", apperr.InvalidField("name", "must not contain control characters")), 400,
			map[string]string{"name": "must not contain control characters"}},
		{"query", apperr.InvalidAt(3, "unexpected end of query"), 400, map[string]string{}},
		{"internal", errors.New("boom: password=secret"), 500, map[string]string{}},
	} {
		rec := httptest.NewRecorder()
		WriteError(rec, httptest.NewRequest("GET", "/", nil), tc.err)
		var body struct {
			Status        int                `json:"status"`
			Message       string             `json:"message"`
			ErrorMessages []string           `json:"errorMessages"`
			Errors        *map[string]string `json:"errors"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
			t.Fatalf("%s: %v: %s", tc.name, err, rec.Body)
		}
		if rec.Code != tc.status || body.Status != tc.status || body.Message == "" ||
			!slices.Equal(body.ErrorMessages, []string{body.Message}) || body.Errors == nil || !maps.Equal(*body.Errors, tc.errors) {
			t.Errorf("%s: %d %s", tc.name, rec.Code, rec.Body)
		}
	}
}

func TestQueryParams(t *testing.T) {
	r := httptest.NewRequest("GET", "/?limit=900&offset=x&b=TRUE&c=maybe", nil)
	if n, err := QueryLimit(r, "limit", 50, 500); err != nil || n != 500 {
		t.Fatalf("limit %d %v", n, err)
	}
	// Only a page size is clamped: any other bounded integer out of its
	// range is a 400 naming the parameter.
	if _, err := QueryInt(r, "limit", 50, 0, 500); apperr.As(err) == nil || apperr.As(err).Field != "limit" {
		t.Fatalf("limit above its bound: %v", err)
	}
	if n, err := QueryInt(r, "absent", 7, 1, 10); err != nil || n != 7 {
		t.Fatalf("absent: %d %v", n, err)
	}
	if _, err := QueryInt(r, "offset", 0, 0, 0); !errors.Is(err, apperr.ErrInvalid) {
		t.Fatalf("offset err %v", err)
	}
	if b, err := QueryBool(r, "b"); !b || err != nil {
		t.Fatal("bool")
	}
	if _, err := QueryBool(r, "c"); err == nil {
		t.Fatal("maybe accepted")
	}
}

func TestMalformedQueryString(t *testing.T) {
	for _, query := range []string{"q=%ZZ", "q=%27%FF%27", "q=key%20%3D%20%27a%00b%27", "q%FF=1", "order=%1B"} {
		rec, eb := do(t, testRouter(), "GET", "/member?"+query, "user", "", "")
		if rec.Code != 400 || !strings.Contains(eb.Message, "malformed query string") {
			t.Errorf("%s: %d %q", query, rec.Code, eb.Message)
		}
	}
	// Text with tabs and line breaks, and any valid UTF-8, is a query.
	for _, query := range []string{"q=key%20~%20%27R%25%27%0A%09AND%20text%20~%20%27%C3%A9%27", "q=%E2%9C%93"} {
		if rec, eb := do(t, testRouter(), "GET", "/member?"+query, "user", "", ""); rec.Code != 200 {
			t.Errorf("%s: %d %q", query, rec.Code, eb.Message)
		}
	}
}

func TestFormatTime(t *testing.T) {
	t.Parallel()
	paris := time.FixedZone("CET", 3600)
	for in, want := range map[time.Time]string{
		time.Date(2026, 11, 22, 5, 50, 55, 29674653, paris): "2026-11-22T04:50:55.029Z",
		time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC):         "2026-01-02T03:04:05.000Z",
	} {
		if got := FormatTime(in); got != want {
			t.Errorf("FormatTime(%v) = %q, want %q", in, got, want)
		}
	}
}

// TestWriteErrorHTTPExtras checks that what only HTTP has (Allow, a body
// of its own) survives wrapping, and that the apperr kind sets the status.
func TestWriteErrorHTTPExtras(t *testing.T) {
	t.Parallel()
	req := httptest.NewRequest("GET", "/x", nil)
	rec := httptest.NewRecorder()
	WriteError(rec, req, fmt.Errorf("route: %w", MethodNotAllowed([]string{"GET", "PUT"}, "no %s", "POST")))
	if rec.Code != 405 || rec.Header().Get("Allow") != "GET, PUT" || !strings.Contains(rec.Body.String(), `"no POST"`) {
		t.Fatalf("405: %d %q %s", rec.Code, rec.Header().Get("Allow"), rec.Body)
	}
	rec = httptest.NewRecorder()
	WriteError(rec, req, WithBody(apperr.BadGatewayf("tracker down"), map[string]string{"id": "m1"}))
	if rec.Code != 502 || strings.TrimSpace(rec.Body.String()) != `{"id":"m1"}` {
		t.Fatalf("502 with a body: %d %s", rec.Code, rec.Body)
	}
	// The kind is the apperr one: apperr.As sees through the HTTP error.
	if e := apperr.As(Throttled(time.Second)); e == nil || e.Code != apperr.Throttled {
		t.Fatalf("Throttled kind %+v", e)
	}
}

// TestDomainLogsKeepTheRequestID checks ContextHandler: a line logged with
// the request's context through another logger than the request's own
// (what domain packages do with slog.WarnContext) carries the request id,
// the tenant and the user.
func TestDomainLogsKeepTheRequestID(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	domain := slog.New(ContextHandler{Handler: slog.NewJSONHandler(&buf, nil)})
	rt := testRouter()
	rt.Handle("GET /domain", Member, func(w http.ResponseWriter, r *http.Request, _ auth.Principal) error {
		domain.WarnContext(r.Context(), "from the domain")
		WriteJSON(w, 200, map[string]string{})
		return nil
	})
	req := httptest.NewRequest("GET", "/domain", nil)
	req.Header.Set("Authorization", "Bearer user")
	req.Header.Set("X-Request-Id", "req-12345678")
	rec := httptest.NewRecorder()
	rt.ServeHTTP(rec, req)
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || rec.Code != 200 {
		t.Fatalf("status %d, log %q", rec.Code, buf.String())
	}
	if line["request_id"] != "req-12345678" || line["tenant"] != "demo" || line["user"] != "u" || line["msg"] != "from the domain" {
		t.Fatalf("log line %v", line)
	}
	// Without a request, nothing is added.
	buf.Reset()
	domain.Info("no request")
	if strings.Contains(buf.String(), "request_id") {
		t.Fatalf("log line %s", buf.String())
	}
}
