package wikiweb_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"golang.org/x/net/html"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/coverage"
	"github.com/reqtrace/reqtrace/shared/diff"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/export"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/websession"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikirequirements"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikiweb"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/s3export"
	"github.com/reqtrace/reqtrace/shared/search"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// origin is the wiki's own origin in these tests (httptest's default host).
const origin = "http://example.com"

type server struct {
	http.Handler
	wiki     *wiki.Service
	reqs     *wikitable.RequirementStore
	bl       *wikitable.BaselineStore
	sessions *auth.Sessions
}

// newServer serves the route group wired as functions/wikiweb does, on
// DynamoDB Local, with the development tokens; the CSV downloads the
// pages link to go to WikiRequirements' route group, wired as
// functions/wikirequirements does, as the WikiApi routes them.
func newServer(t *testing.T) *server {
	t.Helper()
	env := testenv.AWS(t)
	db := dynamodb.NewFromConfig(env.Config)
	svc := wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(db, env.WikiTable)})
	store := wikitable.NewSearchStore(db, env.WikiTable)
	authn := auth.NewAuthenticator(httpapitest.DevTokens(), time.Minute)
	sessions := auth.NewSessions(authtable.NewSessionStore(db, env.AuthTable), authn, auth.Wiki, time.Hour)
	searcher := search.New(search.Deps{Store: store, Settings: store})
	differ, coverer := diff.New(diff.Deps{Store: store, Matcher: searcher}), coverage.New(searcher)
	router := func(g interface{ Register(*httpapi.Router) }) http.Handler {
		rt := httpapi.NewRouter(auth.Wiki, authn)
		rt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		g.Register(rt)
		return rt
	}
	gateway := http.NewServeMux()
	gateway.Handle("/", router(&wikiweb.Handler{Sessions: sessions, Requirements: svc, Search: searcher, Diff: differ, Coverage: coverer}))
	downloads := router(&wikirequirements.Handler{Requirements: svc, Search: searcher, Diff: differ, Coverage: coverer, Sessions: sessions,
		Export: export.New(s3export.New(s3.NewFromConfig(env.Config), env.ExportBucket))})
	gateway.Handle("GET /coverage/{spaceKey}/csv", downloads)
	gateway.Handle("GET /diff/{spaceKey}/csv", downloads)
	return &server{Handler: gateway, wiki: svc, reqs: wikitable.NewRequirementStore(db, env.WikiTable),
		bl: wikitable.NewBaselineStore(db, env.WikiTable), sessions: sessions}
}

func (s *server) save(t *testing.T, tenant, id, space, title, body string) {
	t.Helper()
	if _, err := s.wiki.SavePage(context.Background(), tenant, "alice", wiki.PageInput{ID: id, SpaceKey: space, Title: title, Body: body}); err != nil {
		t.Fatal(err)
	}
}

// request sends one request; cookie is the session cookie's value ("" for
// none), form a urlencoded body (for POST), hdr extra headers.
func (s *server) request(method, path, cookie string, form url.Values, hdr map[string]string) *httptest.ResponseRecorder {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req := httptest.NewRequest(method, path, body)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != "" {
		req.AddCookie(&http.Cookie{Name: websession.CookieName, Value: cookie})
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

// login signs in with token from the wiki's own origin and returns the
// session cookie.
func (s *server) login(t *testing.T, token string) *http.Cookie {
	t.Helper()
	rec := s.request("POST", "/login", "", url.Values{"token": {token}, "next": {"/requirements"}}, map[string]string{"Origin": origin})
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("login with %s: %d %s", token, rec.Code, rec.Body)
	}
	c := sessionCookie(t, rec)
	if c == nil || c.Value == "" {
		t.Fatalf("login with %s: no session cookie in %v", token, rec.Header()["Set-Cookie"])
	}
	return c
}

func sessionCookie(t *testing.T, rec *httptest.ResponseRecorder) *http.Cookie {
	t.Helper()
	for _, c := range rec.Result().Cookies() {
		if c.Name == websession.CookieName {
			return c
		}
	}
	return nil
}

// page parses an HTML answer, checking the headers every page sends.
func page(t *testing.T, rec *httptest.ResponseRecorder, wantStatus int) *html.Node {
	t.Helper()
	if rec.Code != wantStatus {
		t.Fatalf("status %d, want %d: %s", rec.Code, wantStatus, rec.Body)
	}
	checkSecurityHeaders(t, rec.Header())
	if ct := rec.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Fatalf("content type %q", ct)
	}
	doc, err := html.Parse(strings.NewReader(rec.Body.String()))
	if err != nil {
		t.Fatal(err)
	}
	if n := findAll(doc, func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == "script" }); len(n) > 0 {
		t.Fatalf("a page holds %d script elements", len(n))
	}
	for _, n := range findAll(doc, func(n *html.Node) bool { return n.Type == html.ElementNode }) {
		for _, a := range n.Attr {
			if strings.HasPrefix(strings.ToLower(a.Key), "on") || a.Key == "style" ||
				strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.Val)), "javascript:") {
				t.Fatalf("element <%s> has %s=%q", n.Data, a.Key, a.Val)
			}
		}
	}
	return doc
}

func checkSecurityHeaders(t *testing.T, h http.Header) {
	t.Helper()
	csp := h.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'none'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("Content-Security-Policy %q allows inline code", csp)
	}
	if h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("X-Content-Type-Options %q", h.Get("X-Content-Type-Options"))
	}
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for c := range n.Descendants() {
		if match(c) {
			out = append(out, c)
		}
	}
	return out
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func hasClass(n *html.Node, class string) bool {
	return n.Type == html.ElementNode && strings.Contains(" "+attr(n, "class")+" ", " "+class+" ")
}

// text returns the text of n, spaces collapsed.
func text(n *html.Node) string {
	var b strings.Builder
	for c := range n.Descendants() {
		if c.Type == html.TextNode {
			b.WriteString(c.Data + " ")
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// one returns the only element matching; it fails the test otherwise.
func one(t *testing.T, doc *html.Node, what string, match func(*html.Node) bool) *html.Node {
	t.Helper()
	ns := findAll(doc, match)
	if len(ns) != 1 {
		t.Fatalf("%d elements for %s, want 1", len(ns), what)
	}
	return ns[0]
}

func element(tag string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Type == html.ElementNode && n.Data == tag }
}

// links returns the href of every <a> (HTML and SVG) under n.
func links(n *html.Node) []string {
	var out []string
	for _, a := range findAll(n, element("a")) {
		out = append(out, attr(a, "href"))
	}
	return out
}

func section(t *testing.T, doc *html.Node, class string) *html.Node {
	t.Helper()
	return one(t, doc, "section."+class, func(n *html.Node) bool { return n.Data == "section" && hasClass(n, class) })
}

// specs is a page defining REQ-1 (depending on REQ-0, implemented by
// PROJ-1), REQ-0 (depending on REQ-00) and REQ-2 (depending on REQ-1),
// with hostile text in REQ-1's description and in its property.
func specs() string {
	return wt.Table(
		wt.TH("Key", "Description", "Priority", "Depends on", "Implements"),
		wt.TR(wt.Def("REQ-1"), `<p>Log in &lt;script&gt;alert(1)&lt;/script&gt; <b>now</b> <a href="javascript:alert(2)">x</a></p>`,
			`<p>&lt;img src=x onerror=alert(3)&gt;</p>`, wt.Link("", "REQ-0"), wt.Jira("PROJ-1", "jira-1")),
		wt.TR(wt.Def("REQ-0"), "<p>Users exist.</p>", "Low", wt.Link("", "REQ-00"), ""),
		wt.TR(wt.Def("REQ-00"), "<p>A directory.</p>", "Low", "", ""),
		wt.TR(wt.Def("REQ-2"), "<p>Sessions expire.</p>", "Low", wt.Link("", "REQ-1"), ""),
	)
}

const hostileTitle = `Specs <img src=x onerror=alert(4)>`

func TestNoSessionRedirectsToLogin(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	for _, path := range []string{"/requirements/DEMO/REQ-1", "/requirements/DEMO/REQ-1?v=2", "/requirements", "/pages/viewpage.action?pageId=1",
		"/coverage/DEMO?columns=jira&q=key+~+%27REQ-%25%27", "/diff/DEMO?from=1&to=current"} {
		for _, cookie := range []string{"", "not-a-session"} {
			rec := s.request("GET", path, cookie, nil, nil)
			if rec.Code != http.StatusSeeOther {
				t.Fatalf("GET %s with cookie %q: %d, want 303", path, cookie, rec.Code)
			}
			checkSecurityHeaders(t, rec.Header())
			if loc, want := rec.Header().Get("Location"), "/login?next="+url.QueryEscape(path); loc != want {
				t.Errorf("GET %s: Location %q, want %q", path, loc, want)
			}
			if c := sessionCookie(t, rec); cookie != "" && (c == nil || c.MaxAge >= 0) {
				t.Errorf("GET %s with a stale cookie: it is not cleared (%v)", path, c)
			}
		}
	}
}

func TestLoginFormAndCookie(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	doc := page(t, s.request("GET", "/login?next=%2Frequirements%2FDEMO%2FREQ-1", "", nil, nil), http.StatusOK)
	form := one(t, doc, "login form", element("form"))
	if attr(form, "method") != "post" || attr(form, "action") != "/login" {
		t.Errorf("form %v", form.Attr)
	}
	next := one(t, doc, "next input", func(n *html.Node) bool { return n.Data == "input" && attr(n, "name") == "next" })
	if attr(next, "value") != "/requirements/DEMO/REQ-1" {
		t.Errorf("next = %q", attr(next, "value"))
	}

	t.Run("a good token: 303 to next with the session cookie", func(t *testing.T) {
		rec := s.request("POST", "/login", "", url.Values{"token": {"demo-wiki-user"}, "next": {"/requirements/DEMO/REQ-1"}}, map[string]string{"Origin": origin})
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/requirements/DEMO/REQ-1" {
			t.Fatalf("%d to %q", rec.Code, rec.Header().Get("Location"))
		}
		c := sessionCookie(t, rec)
		if c == nil || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure || c.Path != "/" || c.MaxAge <= 0 || c.MaxAge > 3600 {
			t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, not Secure over http, Path=/, expiring within the session's hour", c)
		}
		if strings.Contains(c.Value, "demo-wiki-user") || c.Value == auth.HashToken("demo-wiki-user") {
			t.Errorf("the cookie holds the token: %q", c.Value)
		}
		raw := strings.Join(rec.Header()["Set-Cookie"], "\n")
		if !strings.Contains(raw, "HttpOnly") || !strings.Contains(raw, "SameSite=Strict") {
			t.Errorf("Set-Cookie %q", raw)
		}
	})
	t.Run("over https the cookie is Secure", func(t *testing.T) {
		rec := s.request("POST", "/login", "", url.Values{"token": {"demo-wiki-user"}},
			map[string]string{"Origin": "https://example.com", "X-Forwarded-Proto": "https"})
		if c := sessionCookie(t, rec); rec.Code != http.StatusSeeOther || c == nil || !c.Secure {
			t.Fatalf("%d, cookie %+v: want a Secure cookie", rec.Code, c)
		}
	})
	for _, token := range []string{"nope", "demo-tracker-user", httpapitest.LinkToken, ""} {
		t.Run("refused token "+token+": the form again with 401", func(t *testing.T) {
			rec := s.request("POST", "/login", "", url.Values{"token": {token}, "next": {"/requirements/DEMO/REQ-1"}}, map[string]string{"Origin": origin})
			doc := page(t, rec, http.StatusUnauthorized)
			if sessionCookie(t, rec) != nil {
				t.Error("a refused login sets a cookie")
			}
			one(t, doc, "error message", func(n *html.Node) bool { return hasClass(n, "error") })
			next := one(t, doc, "next input", func(n *html.Node) bool { return n.Data == "input" && attr(n, "name") == "next" })
			if attr(next, "value") != "/requirements/DEMO/REQ-1" {
				t.Errorf("next = %q", attr(next, "value"))
			}
		})
	}
	for _, next := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)", "requirements"} {
		t.Run("next "+next+" stays on the site", func(t *testing.T) {
			rec := s.request("POST", "/login", "", url.Values{"token": {"demo-wiki-user"}, "next": {next}}, map[string]string{"Origin": origin})
			if loc := rec.Header().Get("Location"); rec.Code != http.StatusSeeOther || loc != "/requirements" {
				t.Fatalf("%d to %q, want 303 to /requirements", rec.Code, loc)
			}
		})
	}
}

func TestLoginAndLogoutRefuseOtherOrigins(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	for _, c := range []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"no Origin nor Referer", nil, http.StatusForbidden},
		{"another site's Origin", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"another scheme", map[string]string{"Origin": "https://example.com"}, http.StatusForbidden},
		{"a null Origin, another site's Referer", map[string]string{"Origin": "null", "Referer": "http://evil.example/login"}, http.StatusForbidden},
		{"the wiki's Referer without Origin", map[string]string{"Referer": origin + "/login?next=%2F"}, http.StatusSeeOther},
		{"the wiki's Origin", map[string]string{"Origin": origin}, http.StatusSeeOther},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := s.request("POST", "/login", "", url.Values{"token": {"demo-wiki-user"}}, c.hdr)
			if rec.Code != c.want {
				t.Fatalf("login: %d, want %d", rec.Code, c.want)
			}
			if c.want == http.StatusForbidden {
				page(t, rec, http.StatusForbidden)
				if sessionCookie(t, rec) != nil {
					t.Error("a refused login sets a cookie")
				}
			}
		})
	}
	// A logout from another site leaves the session alone.
	cookie := s.login(t, "demo-wiki-user")
	rec := s.request("POST", "/logout", cookie.Value, url.Values{}, map[string]string{"Origin": "http://evil.example"})
	page(t, rec, http.StatusForbidden)
	if rec := s.request("GET", "/requirements", cookie.Value, nil, nil); rec.Code != http.StatusOK {
		t.Fatalf("after a refused logout the session answers %d", rec.Code)
	}
	// A form of another content type is refused before anything runs.
	req := httptest.NewRequest("POST", "/login", strings.NewReader(`{"token":"demo-wiki-user"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", origin)
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnsupportedMediaType {
		t.Errorf("JSON login: %d, want 415", rec.Code)
	}
}

func TestLogoutAndExpiryEndTheSession(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	cookie := s.login(t, "demo-wiki-user")
	if rec := s.request("GET", "/requirements", cookie.Value, nil, nil); rec.Code != http.StatusOK {
		t.Fatalf("home: %d", rec.Code)
	}
	rec := s.request("POST", "/logout", cookie.Value, url.Values{}, map[string]string{"Origin": origin})
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != "/login" {
		t.Fatalf("logout: %d to %q", rec.Code, rec.Header().Get("Location"))
	}
	if c := sessionCookie(t, rec); c == nil || c.MaxAge >= 0 || c.Value != "" {
		t.Errorf("logout cookie %+v: want it deleted", c)
	}
	if rec := s.request("GET", "/requirements", cookie.Value, nil, nil); rec.Code != http.StatusSeeOther {
		t.Fatalf("the old cookie after the logout: %d, want 303 to the login", rec.Code)
	}

	// A session ends at its expiry (the server's clock; the cookie's own
	// expiry is only the browser's side).
	cookie = s.login(t, "demo-wiki-user")
	if _, _, err := s.sessions.Resolve(context.Background(), cookie.Value); err != nil {
		t.Fatal(err)
	}
	s.sessions.Now = func() time.Time { return time.Now().Add(time.Hour + time.Second) }
	if rec := s.request("GET", "/requirements", cookie.Value, nil, nil); rec.Code != http.StatusSeeOther {
		t.Fatalf("an expired session: %d, want 303 to the login", rec.Code)
	}
}

func TestRequirementPage(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.save(t, "demo", "1", "DEMO", hostileTitle, specs())
	// An excerpt the store holds unsanitized (written past the page
	// indexer) is sanitized again on the way out.
	row, err := s.reqs.Get(context.Background(), "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-00"})
	if err != nil {
		t.Fatal(err)
	}
	row.HTMLExcerpt = `<p onclick="alert(5)">A directory.<script>alert(6)</script><a href="javascript:alert(7)">y</a></p>`
	cp := row.Clone()
	cp.Baseline, cp.Status = 3, requirement.Archived
	if err := s.reqs.Put(context.Background(), "demo", []*requirement.Requirement{row, cp}); err != nil {
		t.Fatal(err)
	}
	httpapitest.CommitBaseline(t, s.bl, "demo", "DEMO", 3)
	cookie := s.login(t, "demo-wiki-user")

	doc := page(t, s.request("GET", "/requirements/DEMO/REQ-1", cookie.Value, nil, nil), http.StatusOK)
	if got := text(one(t, doc, "h1", element("h1"))); got != "DEMO / REQ-1 ACTIVE" {
		t.Errorf("h1 %q", got)
	}
	excerpt := one(t, doc, ".excerpt", func(n *html.Node) bool { return hasClass(n, "excerpt") })
	if got := text(excerpt); got != "Log in <script>alert(1)</script> now x" {
		t.Errorf("excerpt text %q: the hostile text must show as text", got)
	}
	if len(findAll(excerpt, element("b"))) != 1 {
		t.Error("the excerpt's formatting is lost")
	}
	facts := section(t, doc, "facts")
	if !strings.Contains(text(facts), hostileTitle) || !slices.Contains(links(facts), "/pages/viewpage.action?pageId=1") {
		t.Errorf("origin: %q, links %v", text(facts), links(facts))
	}
	if len(findAll(doc, element("img"))) != 0 {
		t.Error("hostile text became an image")
	}
	if !strings.Contains(text(facts), "Priority <img src=x onerror=alert(3)> INLINE") {
		t.Errorf("properties: %q", text(facts))
	}
	links1 := section(t, doc, "links")
	for _, want := range []string{"/requirements/DEMO/REQ-0", "/requirements/DEMO/REQ-2"} {
		if !slices.Contains(links(links1), want) {
			t.Errorf("links section lacks %s: %v", want, links(links1))
		}
	}
	if got := text(links1); !strings.Contains(got, "PROJ-1 implements jira-1 PAGE") {
		t.Errorf("issues: %q", got)
	}
	if !strings.Contains(text(links1), "No baseline holds a copy.") {
		t.Errorf("baselines of REQ-1: %q", text(links1))
	}

	// The graph: the requirement, REQ-0 and REQ-00 (two levels of
	// dependencies), REQ-2 (depends on it) and PROJ-1, each requirement a
	// link to its page.
	graph := section(t, doc, "graph")
	svg := one(t, graph, "svg", element("svg"))
	var labels []string
	for _, n := range findAll(svg, func(n *html.Node) bool { return hasClass(n, "node") }) {
		labels = append(labels, text(one(t, n, "node text", element("text"))))
	}
	if got := strings.Join(labels, " "); got != "REQ-00 REQ-0 REQ-1 REQ-2 PROJ-1" {
		t.Errorf("graph nodes %q", got)
	}
	if got := strings.Join(links(svg), " "); got != "/requirements/DEMO/REQ-00 /requirements/DEMO/REQ-0 /requirements/DEMO/REQ-1 /requirements/DEMO/REQ-2" {
		t.Errorf("graph links %q", got)
	}
	if n := len(findAll(svg, func(n *html.Node) bool { return n.Data == "path" && hasClass(n, "edge") })); n != 4 {
		t.Errorf("%d edges, want 4 (REQ-1→REQ-0, REQ-0→REQ-00, REQ-2→REQ-1, REQ-1→PROJ-1)", n)
	}

	// The unsanitized stored excerpt, and the baseline copy.
	doc = page(t, s.request("GET", "/requirements/DEMO/REQ-00", cookie.Value, nil, nil), http.StatusOK)
	if got := text(one(t, doc, ".excerpt", func(n *html.Node) bool { return hasClass(n, "excerpt") })); got != "A directory.y" {
		t.Errorf("re-sanitized excerpt %q", got)
	}
	if ls := links(section(t, doc, "links")); !slices.Contains(ls, "/requirements/DEMO/REQ-00?v=3") {
		t.Errorf("baselines: links %v, want baseline 3", ls)
	}
	doc = page(t, s.request("GET", "/requirements/DEMO/REQ-00?v=3", cookie.Value, nil, nil), http.StatusOK)
	if got := text(one(t, doc, "h1", element("h1"))); got != "DEMO / REQ-00 ARCHIVED baseline 3" {
		t.Errorf("copy h1 %q", got)
	}

	// The page a baseline's pageLink names.
	doc = page(t, s.request("GET", "/pages/viewpage.action?pageId=1", cookie.Value, nil, nil), http.StatusOK)
	if got := text(one(t, doc, "h1", element("h1"))); got != hostileTitle {
		t.Errorf("page title %q", got)
	}
	if ls := links(one(t, doc, "main", element("main"))); strings.Join(ls, " ") != "/requirements/DEMO/REQ-1 /requirements/DEMO/REQ-0 /requirements/DEMO/REQ-00 /requirements/DEMO/REQ-2" {
		t.Errorf("page's requirements %v", ls)
	}

	// Errors are HTML pages too.
	for path, want := range map[string]int{
		"/requirements/DEMO/REQ-9":              http.StatusNotFound,
		"/requirements/DEMO/REQ-1?v=9":          http.StatusNotFound,
		"/requirements/DEMO/REQ-1?v=x":          http.StatusBadRequest,
		"/requirements/DE%20MO/REQ-1":           http.StatusBadRequest,
		"/pages/viewpage.action?pageId=404":     http.StatusNotFound,
		"/pages/viewpage.action":                http.StatusBadRequest,
		"/requirements?spaceKey=DEMO&key=a%20b": http.StatusBadRequest,
	} {
		doc := page(t, s.request("GET", path, cookie.Value, nil, nil), want)
		one(t, doc, "error message", func(n *html.Node) bool { return hasClass(n, "error") })
	}
	// The home page's form leads to a requirement.
	if rec := s.request("GET", "/requirements?spaceKey=DEMO&key=REQ-2", cookie.Value, nil, nil); rec.Code != http.StatusSeeOther ||
		rec.Header().Get("Location") != "/requirements/DEMO/REQ-2" {
		t.Errorf("jump: %d to %q", rec.Code, rec.Header().Get("Location"))
	}
}

func TestAnotherTenantsRequirementIsNotFound(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.save(t, "demo", "1", "DEMO", "Specs", specs())
	acme := s.login(t, "acme-wiki-user")
	for _, path := range []string{"/requirements/DEMO/REQ-1", "/pages/viewpage.action?pageId=1"} {
		doc := page(t, s.request("GET", path, acme.Value, nil, nil), http.StatusNotFound)
		if strings.Contains(text(doc), "Log in") {
			t.Errorf("%s shows demo's content to acme", path)
		}
	}
	demo := s.login(t, "demo-wiki-user")
	page(t, s.request("GET", "/requirements/DEMO/REQ-1", demo.Value, nil, nil), http.StatusOK)
}

func TestStylesheet(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	rec := s.request("GET", "/static/reqtrace.css", "", nil, nil)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/css; charset=utf-8" ||
		rec.Header().Get("X-Content-Type-Options") != "nosniff" || !strings.Contains(rec.Body.String(), ".graph-box") {
		t.Fatalf("%d %v", rec.Code, rec.Header())
	}
}

// TestDiffPage: the diff of a space between a baseline and the current
// state, as a page: the form, the summary, each change field by field
// (hostile text escaped), links to the requirements, the refusals as error
// pages, and another tenant's baseline not found.
func TestDiffPage(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := context.Background()
	s.save(t, "demo", "100", "DEMO", hostileTitle, specs())
	if _, err := baseline.New(baseline.Deps{Store: s.bl, Source: s.bl}).CreateInstant(ctx, "demo", "alice", "DEMO",
		baseline.InstantInput{Name: "Release 1", FromCEO: "100"}); err != nil {
		t.Fatal(err)
	}
	// REQ-0's text turns hostile, REQ-2 goes, REQ-3 comes.
	s.save(t, "demo", "100", "DEMO", hostileTitle, wt.Table(
		wt.TH("Key", "Description", "Priority", "Depends on", "Implements"),
		wt.TR(wt.Def("REQ-1"), `<p>Log in &lt;script&gt;alert(1)&lt;/script&gt; <b>now</b> <a href="javascript:alert(2)">x</a></p>`,
			`<p>&lt;img src=x onerror=alert(3)&gt;</p>`, wt.Link("", "REQ-0"), wt.Jira("PROJ-1", "jira-1")),
		wt.TR(wt.Def("REQ-0"), "<p>Users &lt;script&gt;alert(5)&lt;/script&gt;</p>", "Low", wt.Link("", "REQ-00"), ""),
		wt.TR(wt.Def("REQ-00"), "<p>A directory.</p>", "Low", "", ""),
		wt.TR(wt.Def("REQ-3"), "<p>New.</p>", "High", "", ""),
	))
	if rec := s.request("GET", "/diff/DEMO?from=1&to=current", "", nil, nil); rec.Code != http.StatusSeeOther {
		t.Fatalf("without a session: %d", rec.Code)
	}
	c := s.login(t, "demo-wiki-user")
	form := page(t, s.request("GET", "/diff/DEMO", c.Value, nil, nil), http.StatusOK)
	if len(findAll(form, element("form"))) == 0 || len(findAll(form, element("table"))) != 0 {
		t.Fatal("without sides the page is the form only")
	}
	doc := page(t, s.request("GET", "/diff/DEMO?from=1&to=current", c.Value, nil, nil), http.StatusOK)
	summary := one(t, doc, "p.summary", func(n *html.Node) bool { return n.Data == "p" && hasClass(n, "summary") })
	if got := text(summary); got != "1 added · 0 removed · 2 modified · 2 unchanged" {
		t.Errorf("summary %q", got)
	}
	table := one(t, doc, "table.diff", func(n *html.Node) bool { return n.Data == "table" && hasClass(n, "diff") })
	var rows []string
	for _, tr := range findAll(table, element("tr"))[1:] {
		rows = append(rows, text(tr))
	}
	want := []string{
		"REQ-0 MODIFIED text Users exist. Users <script>alert(5)</script>",
		"REQ-2 MODIFIED status ACTIVE DELETED",
		"REQ-3 ADDED text New.", "status ACTIVE", "origin " + hostileTitle + " (100)", "@Priority High",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows\n%s\nwant\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	for _, href := range []string{"/requirements/DEMO/REQ-0", "/requirements/DEMO/REQ-2", "/requirements/DEMO/REQ-3"} {
		if !slices.Contains(links(table), href) {
			t.Errorf("no link to %s in %v", href, links(table))
		}
	}
	nav := one(t, doc, "the space's navigation", func(n *html.Node) bool { return n.Data == "nav" && attr(n, "aria-label") == "space" })
	if cur := findAll(nav, func(n *html.Node) bool { return attr(n, "aria-current") == "page" }); len(cur) != 1 || text(cur[0]) != "Diff" {
		t.Errorf("navigation %q", text(nav))
	}
	// The CSV link: 303 to the download of the whole diff, a row per field.
	records := s.csvLink(t, doc, c.Value, "/diff/DEMO/csv?from=1&to=current")
	if len(records) != 1+len(want) || !slices.Equal(records[0], diff.Columns) ||
		!slices.Equal(records[2], []string{"DEMO", "REQ-2", "MODIFIED", "status", "ACTIVE", "DELETED"}) {
		t.Fatalf("CSV download: %q", records)
	}
	for _, tc := range []struct {
		path   string
		cookie string
		status int
	}{
		{"/diff/DEMO?from=1&to=1", c.Value, http.StatusBadRequest},
		{"/diff/DEMO?from=1&to=current&q=" + url.QueryEscape("key = "), c.Value, http.StatusBadRequest},
		{"/diff/DEMO?from=7&to=current", c.Value, http.StatusNotFound},
		{"/diff/DEMO?from=1&to=current", s.login(t, "acme-wiki-user").Value, http.StatusNotFound},
		{"/diff/DEMO?from=1&to=current&format=xml", c.Value, http.StatusBadRequest},
	} {
		page(t, s.request("GET", tc.path, tc.cookie, nil, nil), tc.status)
	}
	// Another tenant's download of the diff, by the link or by its former
	// address (format=csv, 303 to the link): demo's baseline is not found.
	acme := s.login(t, "acme-wiki-user").Value
	if rec := s.request("GET", "/diff/DEMO?from=1&to=current&format=csv", acme, nil, nil); rec.Code != http.StatusSeeOther ||
		rec.Header().Get("Location") != "/diff/DEMO/csv?from=1&to=current" {
		t.Fatalf("format=csv: %d to %q, want 303 to the download", rec.Code, rec.Header().Get("Location"))
	}
	if rec := s.request("GET", "/diff/DEMO/csv?from=1&to=current", acme, nil, nil); rec.Code != http.StatusNotFound {
		t.Fatalf("acme's download of demo's diff: %d %s, want 404", rec.Code, rec.Body)
	}
}

// TestRequirementPageShowsSuspectLinks: the dependencies and issue links
// of a requirement's page carry their suspect marks, as the JSON API's
// suspect fields do. REQ-1's text changes: its issue link to PROJ-1 and
// REQ-2's dependency on it become suspect; REQ-1's own dependency on
// REQ-0 does not.
func TestRequirementPageShowsSuspectLinks(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.save(t, "demo", "1", "DEMO", "Specs", specs())
	s.save(t, "demo", "1", "DEMO", "Specs", strings.Replace(specs(), "<b>now</b>", "<b>at once</b>", 1))
	c := s.login(t, "demo-wiki-user")
	suspects := func(n *html.Node) []string {
		var out []string
		for _, a := range findAll(n, func(n *html.Node) bool { return n.Data == "abbr" && hasClass(n, "suspect") }) {
			if !strings.Contains(attr(a, "title"), "text") {
				t.Errorf("suspect mark %q does not name the changed field", attr(a, "title"))
			}
			out = append(out, text(a.Parent.Parent))
		}
		return out
	}

	doc := page(t, s.request("GET", "/requirements/DEMO/REQ-1", c.Value, nil, nil), http.StatusOK)
	if got := suspects(section(t, doc, "links")); !slices.Equal(got, []string{"PROJ-1 suspect implements jira-1 PAGE"}) {
		t.Errorf("REQ-1's suspect links %q, want its issue link to PROJ-1 only", got)
	}
	doc = page(t, s.request("GET", "/requirements/DEMO/REQ-2", c.Value, nil, nil), http.StatusOK)
	if got := suspects(section(t, doc, "links")); !slices.Equal(got, []string{"DEMO/REQ-1 suspect depends_on ACTIVE"}) {
		t.Errorf("REQ-2's suspect links %q, want its dependency on REQ-1", got)
	}
	doc = page(t, s.request("GET", "/requirements/DEMO/REQ-0", c.Value, nil, nil), http.StatusOK)
	if got := suspects(section(t, doc, "links")); len(got) != 0 {
		t.Errorf("REQ-0's suspect links %q, want none", got)
	}
}
