package wikirequirements_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/coverage"
	"github.com/reqtrace/reqtrace/shared/diff"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/export"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikirequirements"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/s3export"
	"github.com/reqtrace/reqtrace/shared/search"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var devTokens = httpapitest.DevTokens()

type server struct {
	http.Handler
	wiki     *wiki.Service
	reqs     *wikitable.RequirementStore
	bl       *wikitable.BaselineStore
	settings *wikitable.SettingsStore
	calls    *dynamo.CallCounter
	items    *itemCounter
	diff     *diff.Service
	search   *search.Service
	s3       *s3.Client
	bucket   string
	// sessions opens the web pages' sessions (WikiWeb's login does in the
	// stack); limiter is the tenants' rate, unlimited until a test blocks one.
	sessions *auth.Sessions
	limiter  *blockList
	// db and table reach the WikiTable without the call counter.
	db    *dynamodb.Client
	table string
}

// newServer serves the route group wired as functions/wikirequirements
// does (the search included), on DynamoDB Local.
func newServer(t *testing.T) *server {
	t.Helper()
	env := testenv.AWS(t)
	calls, items := dynamo.NewCallCounter(), &itemCounter{}
	db := dynamodb.NewFromConfig(env.Config, calls.Options, items.options)
	svc := wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(db, env.WikiTable)})
	store := wikitable.NewSearchStore(db, env.WikiTable)
	authn := auth.NewAuthenticator(devTokens, time.Minute)
	sessions := auth.NewSessions(authtable.NewSessionStore(env.DynamoDB, env.AuthTable), authn, auth.Wiki, time.Hour)
	limiter := &blockList{}
	rt := httpapi.NewRouter(auth.Wiki, authn)
	rt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	rt.Limiter = limiter
	searcher := search.New(search.Deps{Store: store, Settings: store})
	differ := diff.New(diff.Deps{Store: store, Matcher: searcher})
	s3c := s3.NewFromConfig(env.Config)
	(&wikirequirements.Handler{Requirements: svc, Search: searcher, Diff: differ, Coverage: coverage.New(searcher),
		Export: export.New(s3export.New(s3c, env.ExportBucket)), Suspects: svc, Sessions: sessions, Limiter: rt.Limiter}).Register(rt)
	return &server{Handler: rt, wiki: svc, reqs: wikitable.NewRequirementStore(db, env.WikiTable), bl: wikitable.NewBaselineStore(db, env.WikiTable),
		settings: wikitable.NewSettingsStore(db, env.WikiTable), calls: calls, items: items, diff: differ, search: searcher, s3: s3c, bucket: env.ExportBucket,
		sessions: sessions, limiter: limiter, db: env.DynamoDB, table: env.WikiTable}
}

func (s *server) save(t *testing.T, tenant, id, space, body string) {
	t.Helper()
	if _, err := s.wiki.SavePage(context.Background(), tenant, "alice", wiki.PageInput{ID: id, SpaceKey: space, Title: "Page " + id, Body: body}); err != nil {
		t.Fatal(err)
	}
}

type answer struct {
	code   int
	header http.Header
	body   map[string]any
	raw    string
}

func do(t *testing.T, h http.Handler, method, path, token string) answer {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	a := answer{code: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s %s: content type %q", method, path, ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &a.body); err != nil {
		t.Fatalf("%s %s: %v in %q", method, path, err, a.raw)
	}
	if a.code >= 400 && (a.body["status"] != float64(a.code) || a.body["message"] == "") {
		t.Fatalf("%s %s: error body %s", method, path, a.raw)
	}
	return a
}

func specs(rows ...string) string {
	return wt.Table(append([]string{wt.TH("Key", "Description", "Priority", "Refines", "Implements")}, rows...)...)
}

func TestGetRequirement(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.save(t, "demo", "123", "DEMO", specs(
		wt.TR(wt.Def("REQ-001"), "<p>The system shall log in users.</p>", "High", wt.Link("", "REQ-000"), wt.Jira("PROJ-1", "jira-1")+wt.Jira("PROJ-2", "")),
		wt.TR(wt.Def("REQ-000"), "<p>Users exist.</p>", "", "", ""),
	))
	s.save(t, "demo", "456", "OTHER", specs(wt.TR(wt.Def("O-1"), "Other", "", wt.Link("DEMO", "REQ-001"), "")))

	s.calls.Reset()
	a := do(t, s, "GET", "/rest/reqs/1/requirement2/DEMO/REQ-001", "demo-wiki-user")
	if a.code != 200 {
		t.Fatalf("%d %s", a.code, a.raw)
	}
	if c := s.calls.Counts(); len(c) != 1 || c["GetItem"] != 1 {
		t.Fatalf("DynamoDB calls %v, want exactly one GetItem", c)
	}
	want := `{"spaceKey":"DEMO","key":"REQ-001","baseline":null,"status":"ACTIVE",
	 "text":"The system shall log in users.","htmlExcerpt":"<p>The system shall log in users.</p>",
	 "htmlNeedsUpdating":false,
	 "properties":[{"key":"Priority","value":"High","type":"INLINE"}],
	 "origin":{"pageId":"123","title":"Page 123"},
	 "dependencies":[{"spaceKey":"DEMO","key":"REQ-000","relationship":"refines","suspect":false}],
	 "reverseDependencies":[{"spaceKey":"OTHER","key":"O-1","relationship":"refines"}],
	 "issues":[{"serviceId":"jira-1","issueKey":"PROJ-1","relationship":"implements","origin":"PAGE","suspect":false},{"serviceId":null,"issueKey":"PROJ-2","relationship":"implements","origin":"PAGE","suspect":false}],
	 "genericUrl":"/requirements/DEMO/REQ-001"}`
	var wantBody map[string]any
	if err := json.Unmarshal([]byte(want), &wantBody); err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(a.body); string(got) != mustJSON(t, wantBody) {
		t.Fatalf("got\n%s\nwant\n%s", got, mustJSON(t, wantBody))
	}

	// The integration's Link credential reads like a user.
	if a := do(t, s, "GET", "/rest/reqs/1/requirement2/DEMO/req-001?v=", "demo-link"); a.code != 200 || a.body["key"] != "REQ-001" {
		t.Fatalf("link: %d %s", a.code, a.raw)
	}

	// expand=references: the pages whose requirements reference it.
	a = do(t, s, "GET", "/rest/reqs/1/requirement2/DEMO/REQ-001?expand=references", "demo-wiki-user")
	if refs, _ := json.Marshal(a.body["references"]); string(refs) != `[{"pageId":"456","title":"Page 456"}]` {
		t.Fatalf("references %s", refs)
	}
	a = do(t, s, "GET", "/rest/reqs/1/requirement2/DEMO/REQ-000?expand=references", "demo-wiki-user")
	if refs, _ := json.Marshal(a.body["references"]); string(refs) != `[{"pageId":"123","title":"Page 123"}]` {
		t.Fatalf("references of REQ-000 %s", refs)
	}
	a = do(t, s, "GET", "/rest/reqs/1/requirement2/OTHER/O-1?expand=references", "demo-wiki-user")
	if refs, _ := json.Marshal(a.body["references"]); string(refs) != `[]` {
		t.Fatalf("references of O-1 %s", refs)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestGetRequirementVersionsAndStatuses(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.save(t, "demo", "1", "DEMO", specs(wt.TR(wt.Def("REQ-1"), "One", "", "", ""), wt.TR(wt.Def("REQ-2"), "Two", "", "", "")))
	cp, err := s.reqs.Get(context.Background(), "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"})
	if err != nil {
		t.Fatal(err)
	}
	cp.Baseline, cp.Status = 2, requirement.Archived
	if err := s.reqs.Put(context.Background(), "demo", []*requirement.Requirement{cp}); err != nil {
		t.Fatal(err)
	}
	// Invisible until its baseline is committed.
	if a := do(t, s, "GET", "/rest/reqs/1/requirement2/DEMO/REQ-1?v=2", "demo-wiki-user"); a.code != 404 || !strings.Contains(a.raw, "baseline 2 not found") {
		t.Fatalf("v=2 before the commit: %d %s", a.code, a.raw)
	}
	httpapitest.CommitBaseline(t, s.bl, "demo", "DEMO", 2)
	if a := do(t, s, "GET", "/rest/reqs/1/requirement2/DEMO/REQ-1?v=2", "demo-wiki-user"); a.code != 200 || a.body["baseline"] != 2.0 || a.body["status"] != "ARCHIVED" {
		t.Fatalf("v=2: %d %s", a.code, a.raw)
	}
	if a := do(t, s, "GET", "/rest/reqs/1/requirement2/DEMO/REQ-1", "demo-wiki-user"); a.body["baseline"] != nil || a.body["status"] != "ACTIVE" {
		t.Fatalf("current: %s", a.raw)
	}
	// MOVED carries newSpaceKey/newKey; ACTIVE does not.
	s.save(t, "demo", "1", "NEW", specs(wt.TR(wt.Def("REQ-1"), "One", "", "", "")))
	a := do(t, s, "GET", "/rest/reqs/1/requirement2/DEMO/REQ-1", "demo-wiki-user")
	if a.body["status"] != "MOVED" || a.body["newSpaceKey"] != "NEW" || a.body["newKey"] != "REQ-1" {
		t.Fatalf("moved: %s", a.raw)
	}
	if a := do(t, s, "GET", "/rest/reqs/1/requirement2/DEMO/REQ-2", "demo-wiki-user"); a.body["status"] != "DELETED" || a.body["text"] != "Two" {
		t.Fatalf("deleted: %s", a.raw)
	}
	if a := do(t, s, "GET", "/rest/reqs/1/requirement2/NEW/REQ-1", "demo-wiki-user"); a.body["status"] != "ACTIVE" {
		t.Fatalf("new: %s", a.raw)
	}
	if _, ok := do(t, s, "GET", "/rest/reqs/1/requirement2/NEW/REQ-1", "demo-wiki-user").body["newSpaceKey"]; ok {
		t.Fatal("newSpaceKey on an ACTIVE requirement")
	}
}

func TestGetRequirementErrors(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.save(t, "demo", "1", "DEMO", specs(wt.TR(wt.Def("REQ-1"), "One", "", wt.Link("", "STUB-1"), "")))
	cases := []struct {
		path, token string
		want        int
		msg         string
		field       string // named in the answer's errors, for a 400
	}{
		{"/rest/reqs/1/requirement2/DEMO/REQ-9", "demo-wiki-user", 404, "requirement DEMO/REQ-9 not found", ""},
		{"/rest/reqs/1/requirement2/DEMO/STUB-1", "demo-wiki-user", 404, "requirement DEMO/STUB-1 not found", ""},
		{"/rest/reqs/1/requirement2/DEMO/REQ-1?v=3", "demo-wiki-user", 404, "baseline 3 not found", ""},
		{"/rest/reqs/1/requirement2/DEMO/REQ-1", "acme-wiki-user", 404, "requirement DEMO/REQ-1 not found", ""},
		{"/rest/reqs/1/requirement2/DEMO/REQ-1?v=abc", "demo-wiki-user", 400, "v must be an integer", "v"},
		{"/rest/reqs/1/requirement2/DEMO/REQ-1?v=0", "demo-wiki-user", 400, "v must be at least 1", "v"},
		{"/rest/reqs/1/requirement2/DEMO/REQ-1?v=100000000", "demo-wiki-user", 400, "v must be at most 99999999, got 100000000", "v"}, // not silently clamped
		{"/rest/reqs/1/requirement2/DEMO/REQ-1?expand=pages", "demo-wiki-user", 400, "expand", "expand"},
		{"/rest/reqs/1/requirement2/DEMO/REQ%201", "demo-wiki-user", 400, "invalid requirement key", "key"},
		{"/rest/reqs/1/requirement2/DE-MO/REQ-1", "demo-wiki-user", 400, "invalid spaceKey", "spaceKey"},
		{"/rest/reqs/1/requirement2/DEMO/REQ-1", "", 401, "bearer", ""},
		{"/rest/reqs/1/requirement2/DEMO/REQ-1", "demo-tracker-user", 401, "tracker", ""},
	}
	for _, c := range cases {
		a := do(t, s, "GET", c.path, c.token)
		if a.code != c.want || !strings.Contains(a.body["message"].(string), c.msg) {
			t.Errorf("GET %s as %q: %d %s, want %d containing %q", c.path, c.token, a.code, a.raw, c.want, c.msg)
		}
		if errs, _ := a.body["errors"].(map[string]any); c.field != "" && errs[c.field] == nil {
			t.Errorf("GET %s: errors %v does not name %s", c.path, a.body["errors"], c.field)
		}
	}
}

func TestMustNotUseRoutes(t *testing.T) {
	t.Parallel()
	rt := httpapi.NewRouter(auth.Wiki, auth.NewAuthenticator(devTokens, time.Minute))
	(&wikirequirements.Handler{}).Register(rt)
	for _, c := range []struct{ method, path string }{
		{"POST", "/rest/reqs/1/requirement2/DEMO"}, {"PUT", "/rest/reqs/1/requirement2/DEMO"},
		{"POST", "/rest/reqs/1/requirement2/DEMO/REQ-1"}, {"PUT", "/rest/reqs/1/requirement2/DEMO/REQ-1"},
		{"DELETE", "/rest/reqs/1/requirement2/DEMO/REQ-1"},
	} {
		// A caller without a valid token learns nothing of the route: 401
		// before the 405 (docs/architecture.md: 401 before any 404/405/410).
		for _, token := range []string{"", "no-such-token"} {
			if a := do(t, rt, c.method, c.path, token); a.code != 401 || a.header.Get("Allow") != "" {
				t.Errorf("%s %s with token %q: %d allow %q, want 401", c.method, c.path, token, a.code, a.header.Get("Allow"))
			}
		}
		a := do(t, rt, c.method, c.path, "demo-wiki-user")
		if a.code != 405 || a.header.Get("Allow") != "GET" {
			t.Errorf("%s %s: %d allow %q", c.method, c.path, a.code, a.header.Get("Allow"))
		}
	}
	if a := do(t, rt, "GET", "/rest/reqs/1/requirement3", "demo-wiki-user"); a.code != 410 {
		t.Errorf("requirement3: %d", a.code)
	}
	for _, token := range []string{"", "no-such-token"} {
		if a := do(t, rt, "GET", "/rest/reqs/1/requirement3", token); a.code != 401 {
			t.Errorf("requirement3 with token %q: %d, want 401", token, a.code)
		}
	}
	req := httptest.NewRequest("GET", "/rest/reqs/1/openapi", nil)
	rec := httptest.NewRecorder()
	rt.ServeHTTP(rec, req)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), "openapi: 3") {
		t.Errorf("openapi: %d", rec.Code)
	}
}

func TestPageView(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	s.save(t, "demo", "200", "DEMO", specs(wt.TR(wt.Def("B-1"), "Bee", "Low", "", ""), wt.TR(wt.Def("A-1"), "Ay", "High", "", "")))
	a := do(t, s, "GET", "/rest/reqs/1/page/DEMO/200", "demo-wiki-user")
	if a.code != 200 {
		t.Fatalf("%d %s", a.code, a.raw)
	}
	rows := a.body["requirements"].([]any)
	if len(rows) != 2 || rows[0].(map[string]any)["key"] != "B-1" || rows[1].(map[string]any)["text"] != "Ay" {
		t.Fatalf("rows %s", a.raw)
	}
	// Reindex flags nothing here (the index matches the body); flag one by
	// hand and view again: the flag is cleared and the excerpt gathered.
	r, _ := s.reqs.Get(context.Background(), "demo", requirement.ID{SpaceKey: "DEMO", Key: "A-1"})
	r.HTMLNeedsUpdating, r.HTMLExcerpt, r.Text = true, "", ""
	if err := s.reqs.Put(context.Background(), "demo", []*requirement.Requirement{r}); err != nil {
		t.Fatal(err)
	}
	a = do(t, s, "GET", "/rest/reqs/1/page/DEMO/200", "demo-wiki-user")
	if row := a.body["requirements"].([]any)[1].(map[string]any); row["htmlNeedsUpdating"] != false || row["htmlExcerpt"] != "<p>Ay</p>" {
		t.Fatalf("after view %v", row)
	}
	if r, _ := s.reqs.Get(context.Background(), "demo", requirement.ID{SpaceKey: "DEMO", Key: "A-1"}); r.HTMLNeedsUpdating || r.Text != "Ay" {
		t.Fatalf("stored %+v", r)
	}
	for _, c := range []struct {
		path, token string
		want        int
	}{
		{"/rest/reqs/1/page/OTHER/200", "demo-wiki-user", 404},
		{"/rest/reqs/1/page/DEMO/201", "demo-wiki-user", 404},
		{"/rest/reqs/1/page/DEMO/200", "acme-wiki-user", 404},
		{"/rest/reqs/1/page/DEMO/2.0", "demo-wiki-user", 400},
		{"/rest/reqs/1/page/DEMO/200", "demo-link", 403},
		{"/rest/reqs/1/page/DEMO/200", "", 401},
	} {
		if a := do(t, s, "GET", c.path, c.token); a.code != c.want {
			t.Errorf("GET %s as %q: %d, want %d", c.path, c.token, a.code, c.want)
		}
	}
}

// TestEmittedLinksStayOnSafeTargets: the links of an excerpt are relative
// paths or http(s) URLs; //host, /\host, javascript: in any encoding and
// the like are dropped (their text kept), in the requirement and in search
// answers.
func TestEmittedLinksStayOnSafeTargets(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	hostile := []string{`//evil.example/a`, `/\evil.example`, `/%5Cevil.example`, `jav&#x61;script:alert(1)`,
		`java&#x09;script:alert(1)`, `http:evil.example`, `https://user@evil.example/`}
	text := `<p><a href="/requirements/DEMO/REQ-2">safe</a> <a href="https://docs.example/x">docs</a>`
	for i, h := range hostile {
		text += fmt.Sprintf(` <a href="%s">bad%d</a>`, h, i)
	}
	text += `<img src="//evil.example/i.png"></p>`
	s.save(t, "demo", "1", "DEMO", specs(wt.TR(wt.Def("REQ-1"), text, "", "", "")))
	for _, path := range []string{"/rest/reqs/1/requirement2/DEMO/REQ-1", "/rest/reqs/1/requirement2/DEMO?q=key+%3D+'REQ-1'"} {
		a := do(t, s, "GET", path, "demo-wiki-user")
		if a.code != 200 {
			t.Fatalf("%s: %d %s", path, a.code, a.raw)
		}
		req := a.body
		if results, ok := a.body["results"].([]any); ok && len(results) == 1 {
			req = results[0].(map[string]any)
		}
		excerpt, _ := req["htmlExcerpt"].(string)
		if !strings.Contains(excerpt, `<a href="/requirements/DEMO/REQ-2">safe</a>`) || !strings.Contains(excerpt, `<a href="https://docs.example/x">docs</a>`) {
			t.Fatalf("%s: safe links lost: %s", path, excerpt)
		}
		for i := range hostile {
			if !strings.Contains(excerpt, fmt.Sprintf("bad%d", i)) {
				t.Errorf("%s: the text of link %d is lost: %s", path, i, excerpt)
			}
		}
		if strings.Contains(excerpt, "evil") || strings.Contains(strings.ToLower(excerpt), "script") || strings.Contains(excerpt, "<img") {
			t.Errorf("%s: a hostile link survives: %s", path, excerpt)
		}
		if g, _ := req["genericUrl"].(string); g != "/requirements/DEMO/REQ-1" {
			t.Errorf("%s: genericUrl %q", path, g)
		}
	}
}

// TestMustNotUseRoutesReadNoBody: no route of this group reads a request
// body (requirements change only when their page is saved), so a body that
// breaks the input rules of issue 15 on the must-not-use methods is still
// answered by the method's 405, never decoded.
func TestMustNotUseRoutesReadNoBody(t *testing.T) {
	t.Parallel()
	rt := httpapi.NewRouter(auth.Wiki, auth.NewAuthenticator(devTokens, time.Minute))
	(&wikirequirements.Handler{}).Register(rt)
	for _, c := range httpapitest.StrictJSONCases(`{"key":"REQ-1","text":"t"}`, "key", `"REQ-2"`) {
		for _, m := range []struct{ method, path string }{{"POST", "/rest/reqs/1/requirement2/DEMO"}, {"PUT", "/rest/reqs/1/requirement2/DEMO/REQ-1"}} {
			rec := httpapitest.Do(rt, m.method, m.path, "demo-wiki-user", "application/json", c.Body)
			if rec.Code != 405 || rec.Header().Get("Allow") != "GET" {
				t.Errorf("%s %s %s: %d %s", m.method, m.path, c.Body, rec.Code, rec.Body)
			}
		}
	}
}
