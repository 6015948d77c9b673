package wikibaselines_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikibaselines"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikirequirements"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var devTokens = httpapitest.Tokens{
	"demo-wiki-user": {Tenant: "demo", App: auth.Wiki, Kind: auth.User, User: "demo-user"},
	"acme-wiki-user": {Tenant: "acme", App: auth.Wiki, Kind: auth.User, User: "acme-user"},
	"demo-link":      {Tenant: "demo", App: auth.Wiki, Kind: auth.Link, User: "link:jira-1", Scope: "jira-1"},
}

// server is the WikiBaselines route group, with the WikiRequirements group
// on the same router to read archived copies the way clients do.
type server struct {
	http.Handler
	pages *wiki.Service
	store *wikitable.WikiStore
}

func newServer(t *testing.T) *server {
	t.Helper()
	env := testenv.AWS(t)
	bl := wikitable.NewBaselineStore(env.DynamoDB, env.WikiTable)
	store := wikitable.NewWikiStore(env.DynamoDB, env.WikiTable)
	rt := httpapi.NewRouter(auth.Wiki, auth.NewAuthenticator(devTokens, time.Minute))
	(&wikibaselines.Handler{Baselines: baseline.New(baseline.Deps{Store: bl, Source: bl})}).Register(rt)
	(&wikirequirements.Handler{Requirements: wiki.New(wiki.Deps{Store: store})}).Register(rt)
	s := &server{Handler: rt, pages: wiki.New(wiki.Deps{Store: store}), store: store}
	s.seed(t)
	return s
}

// seed saves, for tenant demo in space DEMO: page 100 "Specs" (REQ-1
// refines REQ-2), its child 101 (REQ-3), and 200, the baseline page.
func (s *server) seed(t *testing.T) {
	t.Helper()
	save := func(id, parent, title, body string) {
		t.Helper()
		if _, err := s.pages.SavePage(context.Background(), "demo", "alice", wiki.PageInput{ID: id, SpaceKey: "DEMO", Title: title, ParentID: parent, Body: body}); err != nil {
			t.Fatalf("save page %s: %v", id, err)
		}
	}
	th := wt.TH("Key", "Description", "Refines")
	save("100", "", "Specs", wt.Table(th,
		wt.TR(wt.Def("REQ-1"), "<p>One</p>", wt.Link("", "REQ-2")),
		wt.TR(wt.Def("REQ-2"), "<p>Two</p>", "")))
	save("101", "100", "Details", wt.Table(th, wt.TR(wt.Def("REQ-3"), "<p>Three</p>", "")))
	save("200", "", "Baseline page", "<p>baseline</p>")
}

type answer struct {
	code int
	raw  string
	obj  map[string]any
	list []map[string]any
}

func do(t *testing.T, h http.Handler, method, path, token, ctype, body string) answer {
	t.Helper()
	rec := httpapitest.Do(h, method, path, token, ctype, body)
	a := answer{code: rec.Code, raw: rec.Body.String()}
	if rec.Body.Len() > 0 {
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: content type %q", method, path, ct)
		}
		if strings.HasPrefix(a.raw, "[") {
			if err := json.Unmarshal(rec.Body.Bytes(), &a.list); err != nil {
				t.Fatalf("%s %s: %v in %q", method, path, err, a.raw)
			}
		} else if err := json.Unmarshal(rec.Body.Bytes(), &a.obj); err != nil {
			t.Fatalf("%s %s: %v in %q", method, path, err, a.raw)
		}
	}
	if a.code >= 400 && (a.obj["status"] != float64(a.code) || a.obj["message"] == "") {
		t.Fatalf("%s %s: error body %s", method, path, a.raw)
	}
	return a
}

const base = "/rest/reqs/1/baseline/"

func TestBaselines(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	const user = "demo-wiki-user"
	a := do(t, s, "POST", base+"DEMO/1/create", user, "application/json", `{"name": "Release 1", "ceo": 200}`)
	if a.code != 200 {
		t.Fatalf("create: %d %s", a.code, a.raw)
	}
	created, err := time.Parse(time.RFC3339, a.obj["createdAt"].(string))
	if err != nil || time.Since(created) > time.Minute {
		t.Errorf("createdAt %v: %v", a.obj["createdAt"], err)
	}
	delete(a.obj, "createdAt")
	want := map[string]any{"spaceKey": "DEMO", "number": 1.0, "name": "Release 1", "label": "", "ceo": "200", "instant": false,
		"createdBy": "demo-user", "count": 3.0, "pageLink": "/pages/viewpage.action?pageId=200", "status": "COMPLETE",
		"retitles": map[string]any{"pageId": "200", "title": "Release 1"}}
	if fmt.Sprint(a.obj) != fmt.Sprint(want) {
		t.Errorf("create answer %v, want %v", a.obj, want)
	}
	// The baseline page carries the name.
	if p, err := s.store.PageInfo(context.Background(), "demo", "200"); err != nil || p.Title != "Release 1" {
		t.Errorf("page 200: %+v %v", p, err)
	}
	// The copies are read with ?v=1; the current version stays.
	r := do(t, s, "GET", "/rest/reqs/1/requirement2/DEMO/REQ-1?v=1", user, "", "")
	if r.code != 200 || r.obj["status"] != "ARCHIVED" || r.obj["baseline"] != 1.0 || r.obj["text"] != "One" {
		t.Errorf("archived copy: %d %s", r.code, r.raw)
	}
	r = do(t, s, "GET", "/rest/reqs/1/requirement2/DEMO/REQ-1", user, "", "")
	if r.code != 200 || r.obj["status"] != "ACTIVE" || r.obj["baseline"] != nil {
		t.Errorf("current version: %d %s", r.code, r.raw)
	}

	a = do(t, s, "POST", base+"DEMO/1/create-instant", user, "application/json", `{"name": "Specs only", "fromCeo": "100"}`)
	if a.code != 200 || a.obj["number"] != 2.0 || a.obj["count"] != 2.0 || a.obj["ceo"] != "100" || a.obj["instant"] != true {
		t.Fatalf("create-instant: %d %s", a.code, a.raw)
	}
	if _, ok := a.obj["retitles"]; ok {
		t.Fatalf("create-instant renames no page, yet says it does: %s", a.raw)
	}
	a = do(t, s, "POST", base+"DEMO/1/create-instant", user, "application/json", `{"name": "Tree", "fromCeo": 100, "fromCeoWithChildren": true}`)
	if a.code != 200 || a.obj["number"] != 3.0 || a.obj["count"] != 3.0 {
		t.Fatalf("create-instant with children: %d %s", a.code, a.raw)
	}
	a = do(t, s, "POST", base+"DEMO/1/create", user, "application/json", `{"name": "Refining", "ceo": "200", "queryString": "to@refines = 'REQ-2'"}`)
	// The answer says which page the baseline renames: never a surprise.
	if rt, _ := a.obj["retitles"].(map[string]any); rt["pageId"] != "200" || rt["title"] != "Refining" {
		t.Fatalf("create does not say it renames page 200: %s", a.raw)
	}
	if a.code != 200 || a.obj["number"] != 4.0 || a.obj["count"] != 1.0 {
		t.Fatalf("create with a query: %d %s", a.code, a.raw)
	}

	a = do(t, s, "GET", base+"DEMO", user, "", "")
	if a.code != 200 || len(a.list) != 4 || a.list[0]["number"] != 1.0 || a.list[3]["number"] != 4.0 {
		t.Fatalf("list: %d %s", a.code, a.raw)
	}
	if _, ok := a.list[0]["count"]; ok {
		t.Errorf("count without expand: %v", a.list[0])
	}
	a = do(t, s, "GET", base+"DEMO?expand=details", user, "", "")
	if a.code != 200 || a.list[1]["count"] != 2.0 || a.list[1]["pageLink"] != "/pages/viewpage.action?pageId=100" || a.list[0]["name"] != "Release 1" {
		t.Fatalf("list with details: %d %s", a.code, a.raw)
	}
	if a = do(t, s, "GET", base+"DEMO?expand=details,foo", user, "", ""); a.code != 400 {
		t.Fatalf("unknown expand value: %d %s", a.code, a.raw)
	}

	a = do(t, s, "PUT", base+"DEMO/1/label", user, "text/plain; charset=utf-8", "approved by QA\n")
	if a.code != 200 || a.obj["label"] != "approved by QA" || a.obj["number"] != 1.0 || a.obj["count"] != 3.0 {
		t.Fatalf("label: %d %s", a.code, a.raw)
	}
	if a = do(t, s, "GET", base+"DEMO", user, "", ""); a.list[0]["label"] != "approved by QA" {
		t.Errorf("label not kept: %s", a.raw)
	}

	a = do(t, s, "GET", base+"DEMO/3/pages", user, "", "")
	if a.code != 200 || fmt.Sprint(a.list) != "[map[count:1 pageId:101 title:Details] map[count:2 pageId:100 title:Specs]]" {
		t.Fatalf("pages: %d %s", a.code, a.raw)
	}

	a = do(t, s, "DELETE", base+"DEMO/1", user, "", "")
	if a.code != 204 || a.raw != "" {
		t.Fatalf("delete: %d %q", a.code, a.raw)
	}
	if a = do(t, s, "GET", "/rest/reqs/1/requirement2/DEMO/REQ-1?v=1", user, "", ""); a.code != 404 {
		t.Errorf("copy after delete: %d %s", a.code, a.raw)
	}
	if a = do(t, s, "DELETE", base+"DEMO/1", user, "", ""); a.code != 404 {
		t.Errorf("second delete: %d %s", a.code, a.raw)
	}
	if a = do(t, s, "GET", base+"DEMO", user, "", ""); len(a.list) != 3 || a.list[0]["number"] != 2.0 {
		t.Errorf("list after delete: %s", a.raw)
	}
}

// TestLabelBodies: a label is text/plain, or a JSON string sent as
// application/json; a text/plain body that is exactly one JSON string
// literal (what a widely used Python client sends) is decoded, anything
// else in text/plain is the label as sent.
func TestLabelBodies(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	const user = "demo-wiki-user"
	if a := do(t, s, "POST", base+"DEMO/1/create-instant", user, "application/json", `{"name": "n", "fromCeo": "100"}`); a.code != 200 {
		t.Fatalf("setup: %d %s", a.code, a.raw)
	}
	for _, tc := range []struct{ name, ctype, body, want string }{
		{"text", "text/plain", "v1.0", "v1.0"},
		{"text with a newline", "text/plain; charset=utf-8", "Approved by QA\n", "Approved by QA"},
		{"JSON string", "application/json", `"v1.0"`, "v1.0"},
		{"JSON string, charset", "application/json; charset=UTF-8", ` "Release \u00e9t\u00e9" `, "Release été"},
		{"JSON string with quotes kept", "application/json", `"\"Approved\""`, `"Approved"`},
		{"JSON empty string clears", "application/json", `""`, ""},
		{"text holding a JSON literal", "text/plain", `"v1.0"`, "v1.0"},
		{"text holding a JSON literal and a newline", "text/plain", "\"v2.0\"\n", "v2.0"},
		{"text holding a literal with escapes", "text/plain", `"say \"hi\" \u2713"`, `say "hi" ✓`},
		{"text holding an empty literal clears", "text/plain", `""`, ""},
		{"text quotes but two literals", "text/plain", `"a" and "b"`, `"a" and "b"`},
		{"text quotes, not a valid literal", "text/plain", `"C:\path"`, `"C:\path"`},
		{"text one quote", "text/plain", `"`, `"`},
		{"text quote inside", "text/plain", `5" floppy`, `5" floppy`},
		{"text single quotes", "text/plain", `'v1.0'`, `'v1.0'`},
	} {
		a := do(t, s, "PUT", base+"DEMO/1/label", user, tc.ctype, tc.body)
		if a.code != 200 || a.obj["label"] != tc.want {
			t.Errorf("%s: %d %s, want label %q", tc.name, a.code, a.raw, tc.want)
			continue
		}
		if a = do(t, s, "GET", base+"DEMO", user, "", ""); a.list[0]["label"] != tc.want {
			t.Errorf("%s: stored %v, want %q", tc.name, a.list[0]["label"], tc.want)
		}
	}
	// A bad JSON label names the field.
	a := do(t, s, "PUT", base+"DEMO/1/label", user, "application/json", `42`)
	if errs, _ := a.obj["errors"].(map[string]any); a.code != 400 || errs["label"] == nil {
		t.Errorf("JSON number: %d %s, want 400 naming label", a.code, a.raw)
	}
	// Another tenant's baseline: 404, whatever the body.
	if a := do(t, s, "PUT", base+"DEMO/1/label", "acme-wiki-user", "application/json", `"x"`); a.code != 404 {
		t.Errorf("acme: %d %s", a.code, a.raw)
	}
	if a := do(t, s, "PUT", base+"DEMO/1/label", "", "application/json", `"x"`); a.code != 401 {
		t.Errorf("anonymous: %d %s", a.code, a.raw)
	}
}

// TestBadRequests checks every refusal, then that nothing was written:
// the next baseline is number 1 and the only one.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	const user, js, text = "demo-wiki-user", "application/json", "text/plain"
	if a := do(t, s, "POST", base+"DEMO/1/create-instant", user, js, `{"name": "kept", "fromCeo": "101"}`); a.code != 200 {
		t.Fatalf("setup: %d %s", a.code, a.raw)
	}
	cases := []struct {
		name, method, path, token, ctype, body string
		want                                   int
	}{
		{"no token", "GET", "DEMO", "", "", "", 401},
		{"link credential", "GET", "DEMO", "demo-link", "", "", 403},
		{"unknown space", "GET", "NOPE", user, "", "", 404},
		{"invalid space", "GET", "DE-MO", user, "", "", 400},
		{"other tenant's space", "GET", "DEMO", "acme-wiki-user", "", "", 404},
		{"empty name", "POST", "DEMO/1/create", user, js, `{"name": "", "ceo": "200"}`, 400},
		{"blank name", "POST", "DEMO/1/create", user, js, `{"name": "   ", "ceo": "200"}`, 400},
		{"missing name", "POST", "DEMO/1/create", user, js, `{"ceo": "200"}`, 400},
		{"missing ceo", "POST", "DEMO/1/create", user, js, `{"name": "n"}`, 400},
		{"null ceo", "POST", "DEMO/1/create", user, js, `{"name": "n", "ceo": null}`, 400},
		{"negative ceo", "POST", "DEMO/1/create", user, js, `{"name": "n", "ceo": -5}`, 400},
		{"boolean ceo", "POST", "DEMO/1/create", user, js, `{"name": "n", "ceo": true}`, 400},
		{"unknown page", "POST", "DEMO/1/create", user, js, `{"name": "n", "ceo": "999"}`, 404},
		{"unknown space on create", "POST", "NOPE/1/create", user, js, `{"name": "n", "ceo": "200"}`, 404},
		{"other tenant's page", "POST", "DEMO/1/create", "acme-wiki-user", js, `{"name": "n", "ceo": "200"}`, 404},
		{"query syntax", "POST", "DEMO/1/create", user, js, `{"name": "n", "ceo": "200", "queryString": "key = "}`, 400},
		{"unknown field", "POST", "DEMO/1/create", user, js, `{"name": "n", "ceo": "200", "query": "x"}`, 400},
		{"malformed JSON", "POST", "DEMO/1/create", user, js, `{"name": `, 400},
		{"text body", "POST", "DEMO/1/create", user, text, `{"name": "n", "ceo": "200"}`, 415},
		{"instant missing fromCeo", "POST", "DEMO/1/create-instant", user, js, `{"name": "n"}`, 400},
		{"instant null fromCeo", "POST", "DEMO/1/create-instant", user, js, `{"name": "n", "fromCeo": null}`, 400},
		{"instant unknown page", "POST", "DEMO/1/create-instant", user, js, `{"name": "n", "fromCeo": "999"}`, 404},
		{"instant empty name", "POST", "DEMO/1/create-instant", user, js, `{"name": "", "fromCeo": "100"}`, 400},
		{"delete non-numeric", "DELETE", "DEMO/abc", user, "", "", 400},
		{"delete zero", "DELETE", "DEMO/0", user, "", "", 400},
		{"delete negative", "DELETE", "DEMO/-1", user, "", "", 400},
		{"delete unknown", "DELETE", "DEMO/7", user, "", "", 404},
		{"delete other tenant's", "DELETE", "DEMO/1", "acme-wiki-user", "", "", 404},
		// A JSON string is a label (TestLabelBodies); other JSON is not.
		{"label JSON number", "PUT", "DEMO/1/label", user, js, `5`, 400},
		{"label JSON null", "PUT", "DEMO/1/label", user, js, `null`, 400},
		{"label JSON object", "PUT", "DEMO/1/label", user, js, `{"label":"x"}`, 400},
		{"label JSON trailing data", "PUT", "DEMO/1/label", user, js, `"x" "y"`, 400},
		{"label JSON too long", "PUT", "DEMO/1/label", user, js, `"` + strings.Repeat("x", 256) + `"`, 400},
		{"label JSON control character", "PUT", "DEMO/1/label", user, js, `"ab"`, 400},
		{"label text literal with a control character", "PUT", "DEMO/1/label", user, text, `"a
b"`, 400},
		{"label XML", "PUT", "DEMO/1/label", user, "application/xml", `<label>x</label>`, 415},
		{"label no type", "PUT", "DEMO/1/label", user, "", `x`, 415},
		{"label too long", "PUT", "DEMO/1/label", user, text, strings.Repeat("x", 256), 400},
		{"label non-numeric", "PUT", "DEMO/x/label", user, text, "x", 400},
		{"label unknown", "PUT", "DEMO/9/label", user, text, "x", 404},
		{"label other tenant's", "PUT", "DEMO/1/label", "acme-wiki-user", text, "x", 404},
		{"pages non-numeric", "GET", "DEMO/1.5/pages", user, "", "", 400},
		{"pages unknown", "GET", "DEMO/2/pages", user, "", "", 404},
		{"pages other space", "GET", "OTHER/1/pages", user, "", "", 404},
		{"create with GET", "GET", "DEMO/1/create", user, "", "", 405},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := do(t, s, c.method, base+c.path, c.token, c.ctype, c.body)
			if a.code != c.want {
				t.Fatalf("%d %s, want %d", a.code, a.raw, c.want)
			}
		})
	}
	a := do(t, s, "POST", base+"DEMO/1/create", user, js, `{"name": "n", "ceo": "200", "queryString": "key = 'A' AND (status"}`)
	if a.code != 400 || a.obj["position"] != 21.0 || !strings.Contains(a.obj["message"].(string), "queryString") {
		t.Errorf("query error: %d %s", a.code, a.raw)
	}
	a = do(t, s, "GET", base+"DEMO?expand=details", user, "", "")
	if a.code != 200 || len(a.list) != 1 || a.list[0]["number"] != 1.0 || a.list[0]["label"] != "" {
		t.Fatalf("after refusals: %s", a.raw)
	}
	if p, _ := s.store.PageInfo(context.Background(), "demo", "200"); p.Title != "Baseline page" {
		t.Errorf("page 200 renamed to %q", p.Title)
	}
	a = do(t, s, "POST", base+"DEMO/1/create", user, js, `{"name": "next", "ceo": "200"}`)
	if a.code != 200 || a.obj["number"] != 2.0 {
		t.Errorf("next number: %s", a.raw)
	}
}

// TestParallelCreations runs 12 creations at once: every one succeeds,
// with numbers 1 to 12, each once.
func TestParallelCreations(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	const n = 12
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		numbers []int
		titled  = map[int]string{} // number -> name, for the creations that retitle page 200
	)
	for i := range n {
		wg.Go(func() {
			path, body := base+"DEMO/1/create", fmt.Sprintf(`{"name": "parallel %d", "ceo": "200"}`, i)
			if i%2 == 1 {
				path, body = base+"DEMO/1/create-instant", fmt.Sprintf(`{"name": "parallel %d", "fromCeo": "100", "fromCeoWithChildren": true}`, i)
			}
			a := do(t, s, "POST", path, "demo-wiki-user", "application/json", body)
			if a.code != 200 || a.obj["count"] != 3.0 {
				t.Errorf("creation %d: %d %s", i, a.code, a.raw)
				return
			}
			mu.Lock()
			numbers = append(numbers, int(a.obj["number"].(float64)))
			if i%2 == 0 {
				titled[int(a.obj["number"].(float64))] = fmt.Sprintf("parallel %d", i)
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	// The baseline page carries the name of the latest baseline that titles
	// it, whatever order the freezes committed in.
	if pg, err := s.store.Page(context.Background(), "demo", "200"); err != nil || pg.Title != titled[slices.Max(slices.Collect(maps.Keys(titled)))] {
		t.Errorf("page 200 titled %q (%v); the baselines that title it: %v", pg.Title, err, titled)
	}
	slices.Sort(numbers)
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(numbers, want) {
		t.Fatalf("numbers %v, want %v", numbers, want)
	}
	a := do(t, s, "GET", base+"DEMO?expand=details", "demo-wiki-user", "", "")
	if len(a.list) != n {
		t.Fatalf("list: %s", a.raw)
	}
	for _, b := range a.list {
		if b["count"] != 3.0 {
			t.Errorf("baseline %v", b)
		}
	}
}

// TestRoutesAreMemberOnly checks the access rule of every baseline route
// (which routes exist is checked against template.yaml in
// functions/routes_test.go).
func TestRoutesAreMemberOnly(t *testing.T) {
	t.Parallel()
	rt := httpapi.NewRouter(auth.Wiki, nil)
	(&wikibaselines.Handler{}).Register(rt)
	if len(rt.Routes()) == 0 {
		t.Fatal("no routes registered")
	}
	for _, r := range rt.Routes() {
		if r.Access != httpapi.Member {
			t.Errorf("%s %s: access %v, want Member", r.Method, r.Path, r.Access)
		}
	}
}

// TestCreateStrictJSON checks the input rules of issue 15 on both
// creations: a duplicate name (also one equal but for case), a field name
// in another case and trailing data are each a 400 naming the member, and
// no baseline is made. The page id's own UnmarshalJSON keeps its errors,
// now with the member named.
func TestCreateStrictJSON(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	const user, js = "demo-wiki-user", "application/json"
	type routeCase struct {
		path string
		httpapitest.StrictJSONCase
	}
	var cases []routeCase
	for _, c := range httpapitest.StrictJSONCases(`{"name": "n", "ceo": "200"}`, "ceo", `"200"`) {
		cases = append(cases, routeCase{"DEMO/1/create", c})
	}
	for _, c := range httpapitest.StrictJSONCases(`{"name": "n", "fromCeo": "100", "fromCeoWithChildren": true}`, "fromCeoWithChildren", "false") {
		cases = append(cases, routeCase{"DEMO/1/create-instant", c})
	}
	for _, c := range []httpapitest.StrictJSONCase{
		{Name: "CEO", Body: `{"name": "n", "CEO": "200"}`, Message: `unknown field "CEO": the name is "ceo"`, Field: "CEO"},
		{Name: "boolean ceo", Body: `{"name": "n", "ceo": true}`, Message: "a page id must be a string or an integer", Field: "ceo"},
		{Name: "negative ceo", Body: `{"name": "n", "ceo": -5}`, Message: "non-negative integer, got -5", Field: "ceo"},
	} {
		cases = append(cases, routeCase{"DEMO/1/create", c})
	}
	for _, c := range cases {
		rec := httpapitest.Do(s, "POST", base+c.path, user, js, c.Body)
		httpapitest.CheckStrictJSON(t, c.StrictJSONCase, rec.Code, rec.Body.Bytes())
	}
	if a := do(t, s, "GET", base+"DEMO", user, "", ""); a.code != 200 || len(a.list) != 0 {
		t.Fatalf("baselines after refusals: %s", a.raw)
	}
	// A page id sent as a number is kept.
	if a := do(t, s, "POST", base+"DEMO/1/create", user, js, `{"name": "n", "ceo": 200}`); a.code != 200 || a.obj["ceo"] != "200" {
		t.Fatalf("numeric ceo: %d %s", a.code, a.raw)
	}
}
