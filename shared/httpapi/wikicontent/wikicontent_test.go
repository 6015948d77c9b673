package wikicontent_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikicontent"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

func TestMain(m *testing.M) { testenv.Main(m) }

var devTokens = httpapitest.DevTokens()

type server struct {
	http.Handler
	reqs  *wikitable.RequirementStore
	store *wikitable.WikiStore
}

func newServer(t *testing.T) *server {
	t.Helper()
	env := testenv.AWS(t)
	store := wikitable.NewWikiStore(env.DynamoDB, env.WikiTable)
	rt := httpapi.NewRouter(auth.Wiki, auth.NewAuthenticator(devTokens, time.Minute))
	(&wikicontent.Handler{Pages: wiki.New(wiki.Deps{Store: store})}).Register(rt)
	return &server{Handler: rt, reqs: wikitable.NewRequirementStore(env.DynamoDB, env.WikiTable), store: store}
}

type answer struct {
	code   int
	header http.Header
	body   map[string]any
	raw    string
}

func do(t *testing.T, h http.Handler, method, path, token, body string) answer {
	t.Helper()
	ctype := ""
	if body != "" {
		ctype = "application/json"
	}
	rec := httpapitest.Do(h, method, path, token, ctype, body)
	a := answer{code: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	if rec.Body.Len() > 0 {
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%s %s: content type %q", method, path, ct)
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &a.body); err != nil {
			t.Fatalf("%s %s: %v in %q", method, path, err, rec.Body.String())
		}
	}
	if a.code >= 400 && (a.body["status"] != float64(a.code) || a.body["message"] == "") {
		t.Fatalf("%s %s: error body %s", method, path, a.raw)
	}
	return a
}

func pageJSON(t *testing.T, fields map[string]any) string {
	t.Helper()
	b, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func specs(rows ...string) string {
	return wt.Table(append([]string{wt.TH("Key", "Description", "Priority")}, rows...)...)
}

func TestContentRoundTrip(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	body := specs(wt.TR(wt.Def("REQ-1"), "<p>One</p>", "High"), wt.TR(wt.Def("REQ-2"), "<p>Two</p>", "Low"), wt.TR(wt.Def("REQ-2"), "again", ""))
	a := do(t, s, "PUT", "/rest/reqs/1/content/100", "demo-wiki-user",
		pageJSON(t, map[string]any{"spaceKey": "DEMO", "title": "Specs", "parentId": "10", "body": body}))
	if a.code != 200 {
		t.Fatalf("put: %d %s", a.code, a.raw)
	}
	var res struct {
		ID           string  `json:"id"`
		SpaceKey     string  `json:"spaceKey"`
		Title        string  `json:"title"`
		ParentID     *string `json:"parentId"`
		Version      int     `json:"version"`
		Requirements []struct {
			Key, Status string
		} `json:"requirements"`
		Duplicates []string `json:"duplicates"`
	}
	if err := json.Unmarshal([]byte(a.raw), &res); err != nil {
		t.Fatal(err)
	}
	if res.ID != "100" || res.SpaceKey != "DEMO" || res.Title != "Specs" || res.Version != 1 || res.ParentID == nil || *res.ParentID != "10" ||
		len(res.Requirements) != 2 || res.Requirements[0].Key != "REQ-1" || res.Requirements[0].Status != "ACTIVE" ||
		!slices.Equal(res.Duplicates, []string{"REQ-2"}) {
		t.Fatalf("put answer %s", a.raw)
	}

	a = do(t, s, "GET", "/rest/reqs/1/content/100", "demo-wiki-user", "")
	if a.code != 200 || a.body["body"] != body || a.body["version"] != 1.0 || a.body["parentId"] != "10" || a.body["title"] != "Specs" || a.body["spaceKey"] != "DEMO" {
		t.Fatalf("get: %d %s", a.code, a.raw)
	}

	// A new version, without parent.
	a = do(t, s, "PUT", "/rest/reqs/1/content/100", "demo-wiki-user", pageJSON(t, map[string]any{"spaceKey": "DEMO", "title": "Specs", "body": "<p>none</p>"}))
	if a.code != 200 || a.body["version"] != 2.0 || a.body["parentId"] != nil {
		t.Fatalf("second put: %s", a.raw)
	}
	statuses := a.body["requirements"].([]any)
	if len(statuses) != 2 || statuses[0].(map[string]any)["status"] != "DELETED" {
		t.Fatalf("statuses %v", statuses)
	}

	a = do(t, s, "POST", "/rest/reqs/1/helpers/reindex/100", "demo-wiki-user", "")
	if a.code != 200 || a.body["version"] != 2.0 {
		t.Fatalf("reindex: %d %s", a.code, a.raw)
	}

	if a = do(t, s, "DELETE", "/rest/reqs/1/content/100", "demo-wiki-user", ""); a.code != 204 || a.raw != "" {
		t.Fatalf("delete: %d %s", a.code, a.raw)
	}
	for _, m := range []string{"GET", "DELETE"} {
		if a = do(t, s, m, "/rest/reqs/1/content/100", "demo-wiki-user", ""); a.code != 404 || a.body["message"] != "page 100 not found" {
			t.Fatalf("%s after delete: %d %s", m, a.code, a.raw)
		}
	}
	if a = do(t, s, "POST", "/rest/reqs/1/helpers/reindex/100", "demo-wiki-user", ""); a.code != 404 {
		t.Fatalf("reindex after delete: %d", a.code)
	}
}

func TestContentAccess(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	for _, c := range []struct {
		token string
		want  int
	}{{"", 401}, {"bogus", 401}, {"demo-link", 403}, {"demo-tracker-admin", 401}} {
		for _, r := range []struct{ method, path string }{
			{"GET", "/rest/reqs/1/content/100"}, {"PUT", "/rest/reqs/1/content/100"},
			{"DELETE", "/rest/reqs/1/content/100"}, {"POST", "/rest/reqs/1/helpers/reindex/100"},
		} {
			if a := do(t, s, r.method, r.path, c.token, ""); a.code != c.want {
				t.Errorf("%s %s as %q: %d, want %d", r.method, r.path, c.token, a.code, c.want)
			}
		}
	}
	if a := do(t, s, "POST", "/rest/reqs/1/sync", "demo-wiki-user", ""); a.code != 410 || !strings.Contains(a.body["message"].(string), "deprecated") {
		t.Fatalf("sync: %d %s", a.code, a.raw)
	}
	for _, token := range []string{"", "bogus"} { // 401 before 410
		if a := do(t, s, "POST", "/rest/reqs/1/sync", token, ""); a.code != 401 {
			t.Fatalf("sync with token %q: %d %s, want 401", token, a.code, a.raw)
		}
	}
}

func TestContentTenantIsolation(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	put := pageJSON(t, map[string]any{"spaceKey": "DEMO", "title": "Demo specs", "body": specs(wt.TR(wt.Def("REQ-1"), "One", "High"))})
	if a := do(t, s, "PUT", "/rest/reqs/1/content/100", "demo-wiki-user", put); a.code != 200 {
		t.Fatal(a.raw)
	}
	for _, r := range []struct{ method, path string }{
		{"GET", "/rest/reqs/1/content/100"}, {"DELETE", "/rest/reqs/1/content/100"}, {"POST", "/rest/reqs/1/helpers/reindex/100"},
	} {
		if a := do(t, s, r.method, r.path, "acme-wiki-user", ""); a.code != 404 || a.body["message"] != "page 100 not found" {
			t.Errorf("acme %s %s: %d %s", r.method, r.path, a.code, a.raw)
		}
	}
	// acme's page 100 is its own: version 1, demo's untouched.
	if a := do(t, s, "PUT", "/rest/reqs/1/content/100", "acme-wiki-user", pageJSON(t, map[string]any{"spaceKey": "DEMO", "title": "Acme", "body": ""})); a.code != 200 || a.body["version"] != 1.0 {
		t.Fatalf("acme put: %s", a.raw)
	}
	if a := do(t, s, "GET", "/rest/reqs/1/content/100", "demo-wiki-user", ""); a.body["title"] != "Demo specs" {
		t.Fatalf("demo's page: %s", a.raw)
	}
	r, err := s.reqs.Get(context.Background(), "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"})
	if err != nil || r.Status != requirement.Active {
		t.Fatalf("demo's requirement %+v %v", r, err)
	}
}

func TestContentBadInput(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	valid := func(over map[string]any) string {
		f := map[string]any{"spaceKey": "DEMO", "title": "Specs", "body": specs(wt.TR(wt.Def("REQ-1"), "One", "High"))}
		for k, v := range over {
			if v == nil {
				delete(f, k)
			} else {
				f[k] = v
			}
		}
		return pageJSON(t, f)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 800<<10)
	for i := range noise {
		noise[i] = byte('a' + rng.IntN(26))
	}
	cases := []struct {
		name, path, body string
		want             int
		msg              string
	}{
		{"malformed XHTML", "100", valid(map[string]any{"body": "<p>" + wt.Def("REQ-1") + " <b>unclosed</p>"}), 400, "malformed storage format"},
		{"invalid requirement key", "100", valid(map[string]any{"body": "<p>" + wt.Def("REQ 1") + " x</p>"}), 400, "REQ 1"},
		{"wrong JSON type", "100", `{"spaceKey":"DEMO","title":7,"body":""}`, 400, "wrong JSON type for title"},
		{"parentId number", "100", `{"spaceKey":"DEMO","title":"x","parentId":100,"body":""}`, 400, "parentId"},
		{"unknown field", "100", `{"spaceKey":"DEMO","title":"x","body":"","bodyy":""}`, 400, "unknown field"},
		{"malformed JSON", "100", `{"spaceKey":`, 400, "malformed JSON"},
		{"missing body", "100", valid(map[string]any{"body": nil}), 400, "body is required"},
		{"missing space", "100", valid(map[string]any{"spaceKey": nil}), 400, "spaceKey is required"},
		{"invalid space", "100", valid(map[string]any{"spaceKey": "DE-MO"}), 400, "invalid spaceKey"},
		{"blank title", "100", valid(map[string]any{"title": " "}), 400, "title"},
		{"invalid contentId", "1.5", valid(nil), 400, "invalid contentId"},
		{"invalid parentId", "100", valid(map[string]any{"parentId": "../1"}), 400, "invalid parentId"},
		{"id differs", "100", valid(map[string]any{"id": "101"}), 400, "differs"},
		{"over 1 MiB", "100", valid(map[string]any{"body": "<p>" + strings.Repeat("x", httpapi.MaxBody) + "</p>"}), 413, "larger than"},
		{"too large compressed", "100", valid(map[string]any{"body": "<p>" + string(noise) + "</p>"}), 413, "compressed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := do(t, s, "PUT", "/rest/reqs/1/content/"+c.path, "demo-wiki-user", c.body)
			if a.code != c.want || !strings.Contains(a.body["message"].(string), c.msg) {
				t.Fatalf("got %d %s, want %d containing %q", a.code, a.raw, c.want, c.msg)
			}
		})
	}
	// Control characters: a 400 naming the field (issue 15).
	for _, c := range []struct{ name, body, field string }{
		{"title with NUL", valid(map[string]any{"title": "Specs\x00"}), "title"},
		{"title with LF", valid(map[string]any{"title": "Specs\nX"}), "title"},
		{"title with DEL", valid(map[string]any{"title": "Specs\x7f"}), "title"},
		{"body with NUL", valid(map[string]any{"body": "<p>a\x00b</p>"}), "body"},
	} {
		a := do(t, s, "PUT", "/rest/reqs/1/content/100", "demo-wiki-user", c.body)
		errs, _ := a.body["errors"].(map[string]any)
		if _, named := errs[c.field]; a.code != 400 || !named {
			t.Errorf("%s: got %d %s, want 400 naming %q", c.name, a.code, a.raw, c.field)
		}
	}
	// Nothing was stored.
	if a := do(t, s, "GET", "/rest/reqs/1/content/100", "demo-wiki-user", ""); a.code != 404 {
		t.Fatalf("page stored: %s", a.raw)
	}
	if _, err := s.reqs.Get(context.Background(), "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"}); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("requirement stored: %v", err)
	}
	if sp, err := s.store.Spaces(context.Background(), "demo"); err != nil || len(sp) != 0 {
		t.Fatalf("space registered: %v %v", sp, err)
	}
	// A text/plain body is refused.
	req := httptest.NewRequest("PUT", "/rest/reqs/1/content/100", strings.NewReader(valid(nil)))
	req.Header.Set("Authorization", "Bearer demo-wiki-user")
	req.Header.Set("Content-Type", "text/plain")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 415 {
		t.Fatalf("text/plain: %d", rec.Code)
	}
}

// TestPageSaveStrictJSON checks the input rules of issue 15 on the page
// save: a duplicate name (also one equal but for case), a field name in
// another case and trailing data are each a 400 naming the member, and
// nothing is stored.
func TestPageSaveStrictJSON(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	valid := pageJSON(t, map[string]any{"spaceKey": "DEMO", "title": "Specs", "body": specs(wt.TR(wt.Def("REQ-1"), "One", "High"))})
	cases := httpapitest.StrictJSONCases(valid, "title", `"Other"`)
	cases = append(cases, httpapitest.StrictJSONCases(valid, "spaceKey", `"DEMO"`)...)
	cases = append(cases, httpapitest.StrictJSONCase{Name: "body in upper case", Body: strings.Replace(valid, `"body":`, `"BODY":`, 1),
		Message: `unknown field "BODY": the name is "body"`, Field: "BODY"})
	for _, c := range cases {
		rec := httpapitest.Do(s, "PUT", "/rest/reqs/1/content/100", "demo-wiki-user", "application/json", c.Body)
		httpapitest.CheckStrictJSON(t, c, rec.Code, rec.Body.Bytes())
	}
	if a := do(t, s, "GET", "/rest/reqs/1/content/100", "demo-wiki-user", ""); a.code != 404 {
		t.Fatalf("page stored: %s", a.raw)
	}
	if _, err := s.reqs.Get(context.Background(), "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"}); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("requirement stored: %v", err)
	}
	// The valid body itself is saved.
	if a := do(t, s, "PUT", "/rest/reqs/1/content/100", "demo-wiki-user", valid); a.code != 200 {
		t.Fatalf("valid body: %d %s", a.code, a.raw)
	}
}
