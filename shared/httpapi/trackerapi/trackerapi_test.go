package trackerapi_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/trackerapi"
)

// TestRouteAccess checks who may call each route of the group (which
// routes exist is checked against template.yaml by functions/routes_test.go).
func TestRouteAccess(t *testing.T) {
	t.Parallel()
	rt := httpapi.NewRouter(auth.Tracker, nil)
	(&trackerapi.Handler{}).Register(rt)
	want := map[string]httpapi.Access{
		"GET /rest/reqs/1/api":                          httpapi.Anonymous,
		"GET /rest/reqs/1/openapi":                      httpapi.Anonymous,
		"POST /rest/reqs/1/api":                         httpapi.LinkOnly,
		"PUT /rest/reqs/1/api/{applinkId}":              httpapi.Admin,
		"GET /rest/reqs/1/api/{applinkId}":              httpapi.Admin,
		"DELETE /rest/reqs/1/api/{applinkId}":           httpapi.Admin,
		"GET /rest/reqs/1/applinks":                     httpapi.Admin,
		"PUT /rest/reqs/1/api/{applinkId}/mode":         httpapi.Admin,
		"PUT /rest/reqs/1/api/{applinkId}/version":      httpapi.AdminOrOwnLink,
		"GET /rest/reqs/1/api/{applinkId}/requirements": httpapi.Member,
	}
	if len(rt.Routes()) != len(want) {
		t.Errorf("%d routes, want %d", len(rt.Routes()), len(want))
	}
	for _, r := range rt.Routes() {
		if a, ok := want[r.Method+" "+r.Path]; !ok || r.Access != a {
			t.Errorf("%s %s: access %v, want %v (listed %v)", r.Method, r.Path, r.Access, a, ok)
		}
	}
}

type applinkOut struct {
	ApplinkID     string `json:"applinkId"`
	Name          string `json:"name"`
	URL           string `json:"url"`
	ServiceID     string `json:"serviceId"`
	Mode          string `json:"mode"`
	Version       int    `json:"version"`
	HasToken      bool   `json:"hasToken"`
	IncomingToken string `json:"incomingToken"`
}

func TestApplinkRegistration(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	if h.Link == "" {
		t.Fatal("no incoming token on creation")
	}
	body := `{"name":"Docs","url":"https://docs.example.com/","token":"s3cret"}`

	// Access.
	h.Expect("PUT", "/rest/reqs/1/api/docs", "", body, 401)
	h.Expect("PUT", "/rest/reqs/1/api/docs", demoUser, body, 403)
	h.Expect("PUT", "/rest/reqs/1/api/docs", h.Link, body, 403)
	h.Expect("PUT", "/rest/reqs/1/api/docs", wikiUser, body, 401)
	h.Expect("GET", "/rest/reqs/1/api/wiki-1", demoUser, "", 403)
	h.Expect("GET", "/rest/reqs/1/api/wiki-1", acmeAdmin, "", 404, "wiki-1 not found")
	h.Expect("GET", "/rest/reqs/1/api/nope", demoAdmin, "", 404)

	// Creation: defaults, incoming token once, wiki token never.
	var created applinkOut
	h.JSON("PUT", "/rest/reqs/1/api/docs", demoAdmin, body, 200, &created)
	want := applinkOut{ApplinkID: "docs", Name: "Docs", URL: "https://docs.example.com", ServiceID: "docs",
		Mode: "AUTO", Version: 4, HasToken: true, IncomingToken: created.IncomingToken}
	if created != want || !strings.HasPrefix(created.IncomingToken, "rt_") {
		t.Errorf("created %+v", created)
	}
	rec := h.Do("GET", "/rest/reqs/1/api/docs", demoAdmin, "")
	if strings.Contains(rec.Body.String(), "s3cret") || strings.Contains(rec.Body.String(), "incomingToken") || rec.Code != 200 {
		t.Errorf("GET shows tokens: %s", rec.Body)
	}
	// acme may use the same id: another applink.
	var acme applinkOut
	h.JSON("PUT", "/rest/reqs/1/api/docs", acmeAdmin, `{"url":"http://acme.test"}`, 200, &acme)
	if acme.IncomingToken == "" || acme.HasToken {
		t.Errorf("acme's applink %+v", acme)
	}

	// Update: no token shown, fields kept; what GET answered can be sent back.
	back := h.Do("GET", "/rest/reqs/1/api/docs", demoAdmin, "").Body.String()
	var updated applinkOut
	h.JSON("PUT", "/rest/reqs/1/api/docs", demoAdmin, back, 200, &updated)
	if updated.IncomingToken != "" || !updated.HasToken || updated.Name != "Docs" {
		t.Errorf("updated %+v", updated)
	}
	// The new applink's token works for its own applink.
	h.Expect("PUT", "/rest/reqs/1/api/docs/version", created.IncomingToken, "3", 200, `"version":3`)
	h.Expect("PUT", "/rest/reqs/1/api/wiki-1/version", created.IncomingToken, "3", 403)

	// Rotation: a new token; the old one is refused.
	var rotated applinkOut
	h.JSON("PUT", "/rest/reqs/1/api/docs", demoAdmin, `{"name":"Docs","url":"https://docs.example.com","rotateToken":true}`, 200, &rotated)
	if rotated.IncomingToken == "" || rotated.IncomingToken == created.IncomingToken {
		t.Fatalf("rotation: %+v", rotated)
	}
	h.Expect("POST", "/rest/reqs/1/api", created.IncomingToken, `[]`, 401)
	h.Expect("POST", "/rest/reqs/1/api", rotated.IncomingToken, `[]`, 200)

	// Bad input.
	for _, tc := range []struct{ path, ctype, body, msg string }{
		{"/rest/reqs/1/api/docs", "application/json", `{"url":"ftp://x"}`, "invalid url"},
		{"/rest/reqs/1/api/docs", "application/json", `{"url":"/wiki"}`, "invalid url"},
		{"/rest/reqs/1/api/docs", "application/json", `{}`, "invalid url"},
		{"/rest/reqs/1/api/do%20cs", "application/json", body, "applinkId: use 1 to 64"},
		{"/rest/reqs/1/api/" + strings.Repeat("a", 65), "application/json", body, "applinkId: use 1 to 64"},
		{"/rest/reqs/1/api/docs", "application/json", `{"url":"http://x","colour":"red"}`, "unknown field"},
		{"/rest/reqs/1/api/docs", "application/json", `{"url":5}`, "wrong JSON type"},
		{"/rest/reqs/1/api/docs", "application/json", `{"url":"http://x","applinkId":"other"}`, "not the path"},
		{"/rest/reqs/1/api/docs", "application/json", `{"url":"http://x","mode":"auto"}`, "unknown mode"},
		{"/rest/reqs/1/api/docs", "application/json", `[1]`, "wrong JSON type"},
	} {
		rec := h.DoType("PUT", tc.path, demoAdmin, tc.ctype, tc.body)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), tc.msg) {
			t.Errorf("PUT %s %s: %d %s, want 400 with %q", tc.path, tc.body, rec.Code, rec.Body, tc.msg)
		}
	}
	if rec := h.DoType("PUT", "/rest/reqs/1/api/docs", demoAdmin, "text/plain", body); rec.Code != 415 {
		t.Errorf("text/plain: %d", rec.Code)
	}
}

// Control characters and path-like ids in an applink registration are a
// 400 naming the JSON field, and nothing is stored (issue 15).
func TestApplinkRegistrationRefusesControlCharacters(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for _, tc := range []struct{ path, body, field string }{
		{"/rest/reqs/1/api/docs", `{"name":"Docs\u0000","url":"https://docs.example.com"}`, "name"},
		{"/rest/reqs/1/api/docs", `{"name":"\u001b[2JDocs","url":"https://docs.example.com"}`, "name"},
		{"/rest/reqs/1/api/docs", `{"name":"Docs","url":"https://docs.example.com","token":"s3cret\r\nX-Injected: 1"}`, "token"},
		{"/rest/reqs/1/api/docs", `{"name":"Docs","url":"https://docs.example.com","token":"s3cret\n"}`, "token"},
		{"/rest/reqs/1/api/docs", `{"name":"Docs","url":"https://docs.example.com","serviceId":".."}`, "serviceId"},
		{"/rest/reqs/1/api/docs", `{"name":"Docs","url":"https://docs.example.com","serviceId":"."}`, "serviceId"},
		{"/rest/reqs/1/api/docs", `{"name":"Docs","url":"https://docs.example.com","serviceId":"a\u0007b"}`, "serviceId"},
		{"/rest/reqs/1/api/%2E%2E", `{"name":"Docs","url":"https://docs.example.com"}`, "applinkId"},
		{"/rest/reqs/1/api/docs", `{"name":"Docs","url":"https://docs.example.com:99999"}`, "url"},
	} {
		rec := h.Do("PUT", tc.path, demoAdmin, tc.body)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), `"errors":{"`+tc.field+`":`) {
			t.Errorf("PUT %s %s: %d %s, want 400 naming %q", tc.path, tc.body, rec.Code, rec.Body, tc.field)
		}
	}
	h.Expect("GET", "/rest/reqs/1/api/docs", demoAdmin, "", 404)
}

func TestModeAndVersion(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	mode := "/rest/reqs/1/api/wiki-1/mode"
	version := "/rest/reqs/1/api/wiki-1/version"

	h.Expect("PUT", mode, demoAdmin, `"MANUAL"`, 200, `{"applinkId":"wiki-1","mode":"MANUAL"}`)
	h.Expect("PUT", mode, demoAdmin, ` "DISABLED" `, 200, `"mode":"DISABLED"`)
	for _, body := range []string{`"manual"`, `"ON"`, `""`, `5`, `null`, `["AUTO"]`, `{"mode":"AUTO"}`, `"AUTO" "MANUAL"`, `AUTO`} {
		h.Expect("PUT", mode, demoAdmin, body, 400)
	}
	if rec := h.DoType("PUT", mode, demoAdmin, "text/plain", `"AUTO"`); rec.Code != 415 {
		t.Errorf("mode as text/plain: %d", rec.Code)
	}
	if rec := h.DoType("PUT", mode, demoAdmin, "", `"AUTO"`); rec.Code != 415 {
		t.Errorf("mode without content type: %d", rec.Code)
	}
	h.Expect("PUT", mode, demoUser, `"AUTO"`, 403)
	h.Expect("PUT", mode, h.Link, `"AUTO"`, 403)
	h.Expect("PUT", mode, "", `"AUTO"`, 401)
	h.Expect("PUT", mode, acmeAdmin, `"AUTO"`, 404)
	h.Expect("PUT", "/rest/reqs/1/api/nope/mode", demoAdmin, `"AUTO"`, 404)

	for _, tc := range []struct {
		body string
		want int
	}{{"7", 5}, {"5", 5}, {"4", 4}, {"2", 2}, {"1", 1}} {
		h.Expect("PUT", version, demoAdmin, tc.body, 200, fmt.Sprintf(`{"applinkId":"wiki-1","version":%d}`, tc.want))
	}
	h.Expect("PUT", version, h.Link, "3", 200, `"version":3`) // the wiki's own credential
	for _, body := range []string{`0`, `-1`, `"4"`, `4.5`, `null`, `true`, `[4]`, `1e400`} {
		h.Expect("PUT", version, demoAdmin, body, 400)
	}
	h.Expect("PUT", version, demoUser, `4`, 403)
	h.Expect("PUT", version, acmeAdmin, `4`, 404)
	var a applinkOut
	h.JSON("GET", "/rest/reqs/1/api/wiki-1", demoAdmin, "", 200, &a)
	if a.Mode != "DISABLED" || a.Version != 3 {
		t.Errorf("applink now %+v", a)
	}
}

func TestInfo(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	acme := func() string {
		var a applinkOut
		h.JSON("PUT", "/rest/reqs/1/api/acme-wiki", acmeAdmin, `{"url":"http://acme.test"}`, 200, &a)
		return a.IncomingToken
	}()
	enc := url.QueryEscape(h.Wiki.URL + "/")
	for _, tc := range []struct {
		name, query, token, want string
	}{
		{"anonymous", "", "", `{"user":null,"versions":{"min":1,"max":5}}`},
		{"user", "", demoUser, `{"user":"bob","versions":{"min":1,"max":5}}`},
		{"anonymous asks", "?applinkId=wiki-1", "", `{"user":null,"versions":{"min":1,"max":5},"applinkRecognized":false}`},
		{"user by id", "?applinkId=wiki-1", demoUser, `"applinkRecognized":true`},
		{"user by url", "?url=" + enc, demoUser, `"applinkRecognized":true`},
		{"user, id and other url", "?applinkId=wiki-1&url=http://other.test", demoUser, `"applinkRecognized":false`},
		{"user unknown", "?applinkId=wiki-9", demoUser, `"applinkRecognized":false`},
		{"other tenant", "?applinkId=wiki-1", acmeUser, `"applinkRecognized":false`},
		{"own link", "?applinkId=wiki-1", h.Link, `{"user":"link:wiki-1","versions":{"min":1,"max":5},"applinkRecognized":true}`},
		{"own link by url", "?url=" + enc, h.Link, `"applinkRecognized":true`},
		{"other tenant's link", "?applinkId=wiki-1", acme, `"applinkRecognized":false`},
		{"bad token", "", "nope", `invalid bearer token`},
	} {
		rec := h.Do("GET", "/rest/reqs/1/api"+tc.query, tc.token, "")
		if !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s: %d %s, want %s", tc.name, rec.Code, rec.Body, tc.want)
		}
	}
	h.Expect("GET", "/rest/reqs/1/openapi", "", "", 200, "openapi: 3")
}

type results struct {
	Results []struct {
		ID      *int64 `json:"id"`
		Status  string `json:"status"`
		Message string `json:"message"`
	} `json:"results"`
}

func (r results) statuses() string {
	var b strings.Builder
	for _, x := range r.Results {
		b.WriteString(x.Status[:1])
	}
	return b.String()
}

const goodAndBad = `[
 {"id":1,"type":"LINK","spaceKey":"DEMO","key":"REQ-1","baseline":null,"estate":"_","objectKey":"PROJ-1","relationship":"implements","authorKey":"u1","authorName":"Ann"},
 {"id":2,"type":"UPDATED","spaceKey":"DEMO","key":"REQ-1","newHtmlExcerpt":"<p>Log in <script>alert(1)</script>users</p>","newUrl":"/requirements/DEMO/REQ-1"},
 {"id":3,"type":"RENAMED","spaceKey":"DEMO","key":"REQ-1"},
 {"id":4,"type":"LINK","spaceKey":"DEMO","key":"REQ-1","objectKey":"PROJ-2"},
 {"id":5,"type":"LINK","spaceKey":"DEMO","key":"REQ-2","objectKey":"PROJ-2","relationship":"tests","futureField":{"x":1}},
 {"type":"DELETED","spaceKey":"DEMO","key":"REQ-2"},
 {"id":7,"type":"MOVED","spaceKey":"DEMO","key":"REQ-3","newSpaceKey":"OTHER","newKey":"REQ-3","newBaseline":null}
]`

func TestReceive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	var res results
	h.JSON("POST", "/rest/reqs/1/api", h.Link, goodAndBad, 200, &res)
	if got := res.statuses(); got != "OOEEOEO" {
		t.Fatalf("statuses %s: %+v", got, res)
	}
	if *res.Results[2].ID != 3 || !strings.Contains(res.Results[2].Message, "unknown message type") ||
		!strings.Contains(res.Results[3].Message, "relationship is required") ||
		res.Results[5].ID != nil || !strings.Contains(res.Results[5].Message, "id is required") {
		t.Errorf("error results %+v", res.Results)
	}
	state := func() string {
		var b strings.Builder
		for _, issue := range []string{"PROJ-1", "PROJ-2"} {
			views, err := h.Svc.IssueLinks(ctx, "demo", issue, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range views {
				fmt.Fprintf(&b, "%s %s %s %q %q %v\n", v.IssueKey, v.Req, v.Relationship, v.HTMLExcerpt, v.GenericURL, v.Deleted)
			}
		}
		return b.String()
	}
	first := state()
	want := `PROJ-1 wiki-1:DEMO/REQ-1 implements "<p>Log in users</p>" "/requirements/DEMO/REQ-1" false
PROJ-2 wiki-1:DEMO/REQ-2 tests "" "/requirements/DEMO/REQ-2" false
`
	if first != want {
		t.Errorf("state after the batch:\n%s\nwant\n%s", first, want)
	}
	// Idempotent: the same batch again, same answers, same state.
	var again results
	h.JSON("POST", "/rest/reqs/1/api", h.Link, goodAndBad, 200, &again)
	if again.statuses() != res.statuses() || state() != first {
		t.Errorf("second delivery: %s\n%s", again.statuses(), state())
	}

	// Whole-request refusals.
	for _, tc := range []struct{ body, msg string }{
		{`{"id":1}`, "JSON array"},
		{`"x"`, "JSON array"},
		{`[1,2]`, "not a JSON object"},
		{`[{"id":1,"type":"DELETED","spaceKey":"S","key":"K","baseline":"2"}]`, "message 0: wrong JSON type for baseline"},
		{`[{"id":"one","type":"DELETED"}]`, "wrong JSON type for id"},
		{`[{"id":1.5,"type":"DELETED"}]`, "wrong JSON type for id"},
		{`[{"id":1,"type":7}]`, "wrong JSON type for type"},
		{`[{"id":1,"type":"LINKS","spaceKey":"S","key":"K","origin":"p"}]`, "wrong JSON type for origin: got string, want an object"},
		{`[{"id":1,"type":"LINKS","spaceKey":"S","key":"K","links":[5]}]`, "want an object"},
		{`[{"id":1,"type":"UPDATED","spaceKey":"S","key":"K","newHtmlExcerpt":{"p":1}}]`, "newHtmlExcerpt"},
		{`[{"id":1}`, "malformed JSON"},
		{`[] []`, "unexpected data"},
		{``, "empty body"},
	} {
		rec := h.Do("POST", "/rest/reqs/1/api", h.Link, tc.body)
		if rec.Code != 400 || !strings.Contains(rec.Body.String(), tc.msg) {
			t.Errorf("POST %s: %d %s, want 400 with %q", tc.body, rec.Code, rec.Body, tc.msg)
		}
		if strings.Contains(rec.Body.String(), "DTO") || strings.Contains(rec.Body.String(), "trackerapi.") {
			t.Errorf("POST %s: the answer names a Go type: %s", tc.body, rec.Body)
		}
	}
	if state() != first {
		t.Error("a refused request changed the state")
	}
	big := `[{"id":1,"type":"UPDATED","spaceKey":"S","key":"K","newHtmlExcerpt":"` + strings.Repeat("x", 1<<20) + `"}]`
	h.Expect("POST", "/rest/reqs/1/api", h.Link, big, 413)
	if rec := h.DoType("POST", "/rest/reqs/1/api", h.Link, "text/plain", `[]`); rec.Code != 415 {
		t.Errorf("text/plain: %d", rec.Code)
	}

	// Only an applink's credential may send messages.
	h.Expect("POST", "/rest/reqs/1/api", "", `[]`, 401)
	h.Expect("POST", "/rest/reqs/1/api", demoAdmin, `[]`, 403)
	h.Expect("POST", "/rest/reqs/1/api", wikiUser, `[]`, 401)
}

func TestReceiveOtherTenant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	// acme's wiki has its own applink, also called wiki-1.
	var acme applinkOut
	h.JSON("PUT", "/rest/reqs/1/api/wiki-1", acmeAdmin, `{"url":"http://acme.test"}`, 200, &acme)
	h.Expect("POST", "/rest/reqs/1/api", acme.IncomingToken,
		`[{"id":1,"type":"LINK","spaceKey":"DEMO","key":"REQ-1","objectKey":"PROJ-1","relationship":"implements"}]`, 200, `"OK"`)
	if views, _ := h.Svc.IssueLinks(ctx, "demo", "PROJ-1", ""); len(views) != 0 {
		t.Errorf("acme's wiki wrote demo's links: %+v", views)
	}
	if views, _ := h.Svc.IssueLinks(ctx, "acme", "PROJ-1", ""); len(views) != 1 {
		t.Errorf("acme's link: %+v", views)
	}
	// A rotated credential is refused.
	h.JSON("PUT", "/rest/reqs/1/api/wiki-1", acmeAdmin, `{"url":"http://acme.test","rotateToken":true}`, 200, nil)
	h.Expect("POST", "/rest/reqs/1/api", acme.IncomingToken, `[]`, 401)
}

func TestReceiveModes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	h.Expect("PUT", "/rest/reqs/1/api/wiki-1/mode", demoAdmin, `"MANUAL"`, 200)
	batch := `[{"id":1,"type":"LINK","spaceKey":"DEMO","key":"REQ-1","objectKey":"PROJ-1","relationship":"implements"},
	           {"id":2,"type":"LINK","spaceKey":"DEMO","key":"REQ-1"}]`
	for range 2 {
		var res results
		h.JSON("POST", "/rest/reqs/1/api", h.Link, batch, 200, &res)
		if res.statuses() != "OE" || res.Results[0].Message != "pending" {
			t.Fatalf("MANUAL: %+v", res)
		}
	}
	if views, _ := h.Svc.IssueLinks(ctx, "demo", "PROJ-1", ""); len(views) != 0 {
		t.Errorf("MANUAL applied a message: %+v", views)
	}
	if p, _ := h.Store.ListPending(ctx, "demo"); len(p) != 1 {
		t.Errorf("%d pending, want 1", len(p))
	}
	h.Expect("PUT", "/rest/reqs/1/api/wiki-1/mode", demoAdmin, `"DISABLED"`, 200)
	h.Expect("POST", "/rest/reqs/1/api", h.Link, batch, 409, "DISABLED")
	h.Expect("PUT", "/rest/reqs/1/api/wiki-1/mode", demoAdmin, `"AUTO"`, 200)
	h.Expect("POST", "/rest/reqs/1/api", h.Link, batch, 200, `"applied"`)
}

func TestLinkDialog(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.Wiki.SetRequirement("DEMO", "REQ-1", "<p>one</p>")
	h.Wiki.SetVersion(2, 4)
	h.Expect("PUT", "/rest/reqs/1/api/wiki-1/version", demoAdmin, `2`, 200)

	path := "/rest/reqs/1/api/wiki-1/requirements?q=" + url.QueryEscape("key ~ 'REQ-%'") + "&limit=10"
	var out struct {
		Results []struct {
			Key string `json:"key"`
		} `json:"results"`
		Count   int   `json:"count"`
		HasMore *bool `json:"hasMore"`
	}
	h.JSON("GET", path, demoUser, "", 200, &out)
	if out.Count != 1 || out.Results[0].Key != "REQ-1" || out.HasMore == nil || *out.HasMore {
		t.Errorf("search answer %+v", out)
	}
	if s := h.Wiki.Searches(); len(s) != 1 || s[0] != "limit=10&q=key+~+%27REQ-%25%27" {
		t.Errorf("the wiki saw %q", s)
	}
	// Upgraded on both sides from 2 to 4.
	if v := h.Wiki.Version(); v != 4 {
		t.Errorf("wiki version %d, want 4", v)
	}
	var a applinkOut
	h.JSON("GET", "/rest/reqs/1/api/wiki-1", demoAdmin, "", 200, &a)
	if a.Version != 4 {
		t.Errorf("applink version %d, want 4", a.Version)
	}

	h.Expect("GET", "/rest/reqs/1/api/wiki-1/requirements?q="+url.QueryEscape("((("), demoUser, "", 400, "unexpected end of query", `"position":3`)
	h.Expect("GET", "/rest/reqs/1/api/wiki-1/requirements?limit=x", demoUser, "", 400, "limit")
	h.Expect("GET", "/rest/reqs/1/api/wiki-1/requirements", "", "", 401)
	h.Expect("GET", "/rest/reqs/1/api/wiki-1/requirements", h.Link, "", 403)
	h.Expect("GET", "/rest/reqs/1/api/wiki-1/requirements", acmeUser, "", 404)
	h.Wiki.SetDown(true)
	h.Expect("GET", "/rest/reqs/1/api/wiki-1/requirements", demoUser, "", 502, "with 503")
	h.ExpectWithout("GET", "/rest/reqs/1/api/wiki-1/requirements", demoUser, "", 502, "maintenance")
}

func TestLinkDialogNeedsWikiToken(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.JSON("PUT", "/rest/reqs/1/api/bare", demoAdmin, `{"url":"`+h.Wiki.URL+`"}`, 200, nil)
	h.Expect("GET", "/rest/reqs/1/api/bare/requirements", demoUser, "", 409, "no wiki token")
	// A wrong token: the wiki refuses it, the user learns why.
	h.JSON("PUT", "/rest/reqs/1/api/bare", demoAdmin, `{"url":"`+h.Wiki.URL+`","token":"wrong"}`, 200, nil)
	h.Expect("GET", "/rest/reqs/1/api/bare/requirements", demoUser, "", 502, "refused the tracker's credential")
}

// TestStrictJSON checks the input rules of issue 15 on the group's bodies
// (messages, applink registration, mode, version): a duplicate name (also
// one equal but for case), a field name in another case and trailing data
// are each a 400 naming the member, and nothing changes. Messages still
// skip members they do not know (their format may gain fields), but not a
// declared one in another case.
func TestStrictJSON(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	state := func() string {
		views, err := h.Svc.IssueLinks(ctx, "demo", "PROJ-1", "")
		if err != nil {
			t.Fatal(err)
		}
		back := h.Do("GET", "/rest/reqs/1/api/wiki-1", demoAdmin, "").Body.String()
		return fmt.Sprint(views, back)
	}
	first := state()
	const link = `[{"id":1,"type":"LINK","spaceKey":"DEMO","key":"REQ-1","baseline":null,"estate":"_","objectKey":"PROJ-1","relationship":"implements"}]`
	type routeCase struct {
		method, path, token string
		httpapitest.StrictJSONCase
	}
	var cases []routeCase
	for _, name := range []string{"type", "objectKey", "relationship"} {
		for _, c := range httpapitest.StrictJSONCases(link, name, `"x"`) {
			cases = append(cases, routeCase{"POST", "/rest/reqs/1/api", h.Link, c})
		}
	}
	for _, c := range httpapitest.StrictJSONCases(`{"name":"Wiki","url":"https://wiki.example.com","mode":"MANUAL"}`, "mode", `"DISABLED"`) {
		cases = append(cases, routeCase{"PUT", "/rest/reqs/1/api/wiki-1", demoAdmin, c})
	}
	cases = append(cases, []routeCase{
		{"POST", "/rest/reqs/1/api", h.Link, httpapitest.StrictJSONCase{Name: "Type alone",
			Body: strings.Replace(link, `"type"`, `"Type"`, 1), Message: `message 0: unknown field "Type": the name is "type"`, Field: "Type"}},
		{"POST", "/rest/reqs/1/api", h.Link, httpapitest.StrictJSONCase{Name: "unknown member in another case twice",
			Body: strings.Replace(link, `"id":1,`, `"id":1,"future":1,"FUTURE":2,`, 1), Message: `duplicate name "FUTURE" (at /0/FUTURE): equal but for case to "future"`, Field: "FUTURE"}},
		{"PUT", "/rest/reqs/1/api/wiki-1/mode", demoAdmin, httpapitest.StrictJSONCase{Name: "mode: trailing value",
			Body: `"DISABLED" "AUTO"`, Message: "unexpected data after the JSON value at byte 11"}},
		{"PUT", "/rest/reqs/1/api/wiki-1/version", demoAdmin, httpapitest.StrictJSONCase{Name: "version: trailing value",
			Body: `3,4`, Message: "unexpected data after the JSON value at byte 1"}},
	}...)
	for _, c := range cases {
		rec := h.DoType(c.method, c.path, c.token, "application/json", c.Body)
		httpapitest.CheckStrictJSON(t, c.StrictJSONCase, rec.Code, rec.Body.Bytes())
	}
	if got := state(); got != first {
		t.Fatalf("refused bodies changed the state:\n%s\nwas\n%s", got, first)
	}
	// An unknown member in one case only is still skipped.
	var res results
	h.JSON("POST", "/rest/reqs/1/api", h.Link, strings.Replace(link, `"id":1,`, `"id":1,"futureField":{"a":1,"b":[]},`, 1), 200, &res)
	if res.statuses() != "O" {
		t.Fatalf("message with an unknown member: %+v", res)
	}
}
