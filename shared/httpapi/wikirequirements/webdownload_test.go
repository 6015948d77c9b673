package wikirequirements_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/websession"
)

// blockList is a Limiter that refuses the tenants it holds (retry after a
// second) and allows every other.
type blockList struct{ blocked sync.Map }

func (b *blockList) Allow(_ context.Context, tenant string, _ auth.App) (time.Duration, bool) {
	if _, ok := b.blocked.Load(tenant); ok {
		return time.Second, false
	}
	return 0, true
}

// webSession opens a session for token's user, as WikiWeb's login does,
// and returns its cookie.
func (s *server) webSession(t *testing.T, token string) *http.Cookie {
	t.Helper()
	id, _, err := s.sessions.Open(context.Background(), token)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Cookie{Name: websession.CookieName, Value: id}
}

// webGet sends a GET with cookie (nil: none), as a browser following a
// page's link.
func (s *server) webGet(path string, cookie *http.Cookie) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodGet, path, nil)
	if cookie != nil {
		req.AddCookie(cookie)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

// checkPageHeaders fails unless an answer carries the security headers
// of the web pages' answers (CSP, nosniff, no framing, no caching).
func checkPageHeaders(t *testing.T, what string, got http.Header) {
	t.Helper()
	want := http.Header{}
	websession.SecurityHeaders(want)
	for name := range want {
		if got.Get(name) != want.Get(name) {
			t.Errorf("%s: %s %q, want %q", what, name, got.Get(name), want.Get(name))
		}
	}
}

// TestWebDownloads: the CSV downloads the diff and coverage pages link
// to, for a browser session. With the session cookie: 303 to the export,
// the CSV the API's format=csv exports. Without a valid session (none, an
// unknown one, an expired one, a bearer token only): 303 to the login with
// the download as next, a stale cookie cleared, as the pages answer.
// Another tenant's session reaches its own tenant only (404 for demo's
// baseline, its own DEMO's matrix); refusals are the API's; the tenant's
// rate holds. Every answer has the pages' security headers.
func TestWebDownloads(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seedChanges(t, s)
	demo := s.webSession(t, "demo-wiki-user")
	const coveragePath, diffPath = "/coverage/DEMO/csv?columns=jira%2Cto%2Cfrom", "/diff/DEMO/csv?from=1&to=current"
	withCookie := func(c *http.Cookie) func(*http.Request) { return func(r *http.Request) { r.AddCookie(c) } }

	t.Run("a session downloads what the API exports", func(t *testing.T) {
		for web, api := range map[string]string{
			coveragePath: "/rest/reqs/1/coverage/DEMO?columns=jira,to,from&format=csv",
			diffPath:     "/rest/reqs/1/diff/DEMO?from=1&to=current&format=csv",
		} {
			rec := s.webGet(web, demo)
			if loc := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || !strings.Contains(loc, "/exports/demo/") ||
				!strings.Contains(loc, "X-Amz-Signature=") {
				t.Fatalf("GET %s: %d to %q, want 303 to a presigned export", web, rec.Code, loc)
			}
			checkPageHeaders(t, web, rec.Header())
			got, _, _ := fetchExport(t, s, web, withCookie(demo))
			want, _, _ := download(t, s, api, "")
			if len(got) < 2 || !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("GET %s: CSV\n%q\nwant the API's\n%q", web, got, want)
			}
		}
	})

	// noSession checks the answer to a download without a valid session.
	noSession := func(t *testing.T, path string, cookie *http.Cookie, hdr http.Header) {
		t.Helper()
		req := httptest.NewRequest(http.MethodGet, path, nil)
		for name, values := range hdr {
			req.Header[name] = values
		}
		if cookie != nil {
			req.AddCookie(cookie)
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if loc, want := rec.Header().Get("Location"), "/login?next="+url.QueryEscape(path); rec.Code != http.StatusSeeOther || loc != want {
			t.Fatalf("GET %s: %d to %q, want 303 to %q", path, rec.Code, loc, want)
		}
		checkPageHeaders(t, path, rec.Header())
		var cleared *http.Cookie
		for _, c := range rec.Result().Cookies() {
			if c.Name == websession.CookieName {
				cleared = c
			}
		}
		if cookie == nil && cleared != nil {
			t.Errorf("GET %s without a cookie sets %v", path, cleared)
		}
		if cookie != nil && (cleared == nil || cleared.MaxAge >= 0 || cleared.Value != "" || !cleared.HttpOnly || cleared.SameSite != http.SameSiteStrictMode) {
			t.Errorf("GET %s with a stale cookie: %+v, want it cleared (HttpOnly, SameSite=Strict)", path, cleared)
		}
	}
	t.Run("without a session: 303 to the login", func(t *testing.T) {
		for _, path := range []string{coveragePath, diffPath} {
			noSession(t, path, nil, nil)
			noSession(t, path, &http.Cookie{Name: websession.CookieName, Value: "not-a-session"}, nil)
			// A bearer token is the API's credential, not a session.
			noSession(t, path, nil, http.Header{"Authorization": {"Bearer demo-wiki-user"}})
		}
	})

	t.Run("another tenant's session: its own tenant only", func(t *testing.T) {
		acme := s.webSession(t, "acme-wiki-user")
		rec := s.webGet(diffPath, acme)
		var body httpapi.ErrorBody
		if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != http.StatusNotFound || body.Status != http.StatusNotFound ||
			rec.Header().Get("Location") != "" {
			t.Fatalf("acme, demo's baseline: %d %s, want the JSON 404", rec.Code, rec.Body)
		}
		checkPageHeaders(t, "acme's diff", rec.Header())
		got, _, location := fetchExport(t, s, coveragePath, withCookie(acme))
		want := [][]string{{"spaceKey", "key", "text", "jira", "to", "from"}, {"DEMO", "A-SAME", "Acme.", "", "", ""}}
		if !slices.EqualFunc(got, want, slices.Equal) || !strings.Contains(location, "/exports/acme/") {
			t.Errorf("acme's coverage of DEMO at %s: %q, want %q", location, got, want)
		}
	})

	t.Run("refusals are the API's", func(t *testing.T) {
		for path, want := range map[string]int{
			"/coverage/DEMO/csv":                                             http.StatusBadRequest,
			"/coverage/DEMO/csv?columns=parent":                              http.StatusBadRequest,
			"/coverage/DEMO/csv?columns=jira&q=" + url.QueryEscape("key = "): http.StatusBadRequest,
			"/diff/DEMO/csv?from=1&to=1":                                     http.StatusBadRequest,
			"/diff/DEMO/csv?from=7&to=current":                               http.StatusNotFound,
			"/diff/DE%20MO/csv?from=1&to=current":                            http.StatusBadRequest,
		} {
			rec := s.webGet(path, demo)
			var body httpapi.ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || rec.Code != want || body.Status != want || body.Message == "" {
				t.Errorf("GET %s: %d %s, want the JSON %d", path, rec.Code, rec.Body, want)
			}
			checkPageHeaders(t, path, rec.Header())
		}
	})

	t.Run("the tenant's rate", func(t *testing.T) {
		s.limiter.blocked.Store("demo", true)
		defer s.limiter.blocked.Delete("demo")
		rec := s.webGet(coveragePath, demo)
		if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("a blocked tenant: %d %v, want 429 with Retry-After", rec.Code, rec.Header())
		}
		checkPageHeaders(t, "429", rec.Header())
	})

	// Last: the session's clock moves past its hour, which ends every
	// session of this server.
	t.Run("an expired session: 303 to the login", func(t *testing.T) {
		s.sessions.Now = func() time.Time { return time.Now().Add(time.Hour + time.Second) }
		for _, path := range []string{coveragePath, diffPath} {
			noSession(t, path, demo, nil)
		}
	})
}
