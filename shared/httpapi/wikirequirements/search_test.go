package wikirequirements_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/requirement"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

func (s *server) isolate(t *testing.T, tenant string, on bool) {
	t.Helper()
	if err := s.settings.Put(context.Background(), tenant, integration.Settings{IsolateSpaces: on}); err != nil {
		t.Fatal(err)
	}
}

// searchAnswer is a decoded JSON answer of the search.
type searchAnswer struct {
	code int
	raw  string
	body struct {
		Results []struct {
			SpaceKey string `json:"spaceKey"`
			Key      string `json:"key"`
			Baseline *int   `json:"baseline"`
			Status   string `json:"status"`
			Text     string `json:"text"`
		} `json:"results"`
		Offset   *int   `json:"offset"`
		Limit    *int   `json:"limit"`
		Count    *int   `json:"count"`
		HasMore  *bool  `json:"hasMore"`
		Status   int    `json:"status"`
		Message  string `json:"message"`
		Position *int   `json:"position"`
	}
}

// keys renders the results as SPACE/KEY[@baseline].
func (a searchAnswer) keys() []string {
	out := []string{}
	for _, r := range a.body.Results {
		k := r.SpaceKey + "/" + r.Key
		if r.Baseline != nil {
			k += fmt.Sprintf("@%d", *r.Baseline)
		}
		out = append(out, k)
	}
	return out
}

// search calls the search with raw query parameters.
func search2(t *testing.T, h http.Handler, token, pathSpace string, params url.Values) searchAnswer {
	t.Helper()
	target := "/rest/reqs/1/requirement2/" + url.PathEscape(pathSpace)
	if len(params) > 0 {
		target += "?" + params.Encode()
	}
	req := httptest.NewRequest(http.MethodGet, target, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	a := searchAnswer{code: rec.Code, raw: rec.Body.String()}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: content type %q", target, ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &a.body); err != nil {
		t.Fatalf("%s: %v in %q", target, err, a.raw)
	}
	if a.code >= 400 && (a.body.Status != a.code || a.body.Message == "") {
		t.Fatalf("%s: error body %s", target, a.raw)
	}
	if a.code == 200 && (a.body.Count == nil || *a.body.Count != len(a.body.Results) || a.body.Offset == nil || a.body.Limit == nil ||
		a.body.HasMore == nil) {
		t.Fatalf("%s: answer %s", target, a.raw)
	}
	return a
}

func params(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Add(kv[i], kv[i+1])
	}
	return v
}

// seed stores DEMO (REQ-1 … REQ-3, REQ-3 then deleted, REQ-1 archived in
// baseline 1), OTHER (REQ-1, O-1) for demo, and the same keys with other
// texts for acme.
func seed(t *testing.T, s *server) {
	t.Helper()
	s.save(t, "demo", "1", "DEMO", specs(
		wt.TR(wt.Def("REQ-1"), "<p>Log in users.</p>", "High", "", wt.Jira("PROJ-1", "")),
		wt.TR(wt.Def("REQ-2"), "<p>Log out users.</p>", "Low", wt.Link("", "REQ-1"), ""),
		wt.TR(wt.Def("REQ-3"), "<p>Report.</p>", "High", "", ""),
	))
	s.save(t, "demo", "1", "DEMO", specs(
		wt.TR(wt.Def("REQ-1"), "<p>Log in users.</p>", "High", "", wt.Jira("PROJ-1", "")),
		wt.TR(wt.Def("REQ-2"), "<p>Log out users.</p>", "Low", wt.Link("", "REQ-1"), ""),
	))
	s.save(t, "demo", "2", "OTHER", specs(
		wt.TR(wt.Def("REQ-1"), "<p>Other one.</p>", "High", "", ""),
		wt.TR(wt.Def("O-1"), "<p>Other.</p>", "", wt.Link("DEMO", "REQ-2"), ""),
	))
	cp, err := s.reqs.Get(context.Background(), "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"})
	if err != nil {
		t.Fatal(err)
	}
	cp.Baseline, cp.Status = 1, requirement.Archived
	// Baseline 2 is never committed (a freeze still running): its copy
	// must never appear.
	hidden := *cp
	hidden.Baseline = 2
	if err := s.reqs.Put(context.Background(), "demo", []*requirement.Requirement{cp, &hidden}); err != nil {
		t.Fatal(err)
	}
	httpapitest.CommitBaseline(t, s.bl, "demo", "DEMO", 1)
	s.save(t, "acme", "1", "DEMO", specs(
		wt.TR(wt.Def("REQ-1"), "<p>Acme secret.</p>", "High", "", wt.Jira("PROJ-1", "")),
		wt.TR(wt.Def("ACME-1"), "<p>Acme only.</p>", "High", "", ""),
	))
}

func TestSearchParameters(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seed(t, s)
	const user = "demo-wiki-user"
	tests := []struct {
		name   string
		params url.Values
		code   int
		keys   []string
		limit  int
		offset int
		msg    string // part of the error message
		pos    int    // position of a syntax error, -1 none
	}{
		{name: "defaults", code: 200, limit: 50, keys: []string{"OTHER/O-1", "DEMO/REQ-1", "OTHER/REQ-1", "DEMO/REQ-2"}, pos: -1},
		{name: "limit clamped", params: params("limit", "1000"), code: 200, limit: 500, keys: []string{"OTHER/O-1", "DEMO/REQ-1", "OTHER/REQ-1", "DEMO/REQ-2"}, pos: -1},
		{name: "offset and limit", params: params("offset", "1", "limit", "2"), code: 200, offset: 1, limit: 2, keys: []string{"DEMO/REQ-1", "OTHER/REQ-1"}, pos: -1},
		{name: "offset past the end", params: params("offset", "10"), code: 200, offset: 10, limit: 50, keys: []string{}, pos: -1},
		{name: "q", params: params("q", "@priority = 'High' AND space = 'DEMO'"), code: 200, limit: 50, keys: []string{"DEMO/REQ-1"}, pos: -1},
		{name: "full text", params: params("q", "'log'"), code: 200, limit: 50, keys: []string{"DEMO/REQ-1", "DEMO/REQ-2"}, pos: -1},
		// REQKEY DESC reverses key and space alike (a later SPACEKEY
		// never decides); SPACEKEY first groups by space.
		{name: "order", params: params("order", "REQKEY DESC, SPACEKEY"), code: 200, limit: 50, keys: []string{"DEMO/REQ-2", "OTHER/REQ-1", "DEMO/REQ-1", "OTHER/O-1"}, pos: -1},
		{name: "order by space", params: params("order", "SPACEKEY, REQKEY DESC"), code: 200, limit: 50, keys: []string{"DEMO/REQ-2", "DEMO/REQ-1", "OTHER/REQ-1", "OTHER/O-1"}, pos: -1},
		// The default order keeps each requirement's versions together:
		// key, space, then the current version and its baselines.
		{name: "includeArchived", params: params("includeArchived", "TRUE", "q", "key ~ 'REQ-%'"), code: 200, limit: 50,
			keys: []string{"DEMO/REQ-1", "DEMO/REQ-1@1", "OTHER/REQ-1", "DEMO/REQ-2", "DEMO/REQ-3"}, pos: -1},
		{name: "includeArchived false", params: params("includeArchived", "false", "q", "status = 'DELETED'"), code: 200, limit: 50, keys: []string{}, pos: -1},
		{name: "empty spaceKey is absent", params: params("spaceKey", ""), code: 200, limit: 50, keys: []string{"OTHER/O-1", "DEMO/REQ-1", "OTHER/REQ-1", "DEMO/REQ-2"}, pos: -1},

		{name: "limit not a number", params: params("limit", "ten"), code: 400, msg: "limit must be an integer", pos: -1},
		{name: "limit zero", params: params("limit", "0"), code: 400, msg: "limit must be at least 1", pos: -1},
		{name: "limit negative", params: params("limit", "-5"), code: 400, msg: "limit must be at least 1", pos: -1},
		{name: "offset negative", params: params("offset", "-1"), code: 400, msg: "offset must be at least 0", pos: -1},
		{name: "offset fraction", params: params("offset", "1.5"), code: 400, msg: "offset must be an integer", pos: -1},
		{name: "offset huge", params: params("offset", "99999999999999999999999"), code: 400, msg: "offset must be an integer", pos: -1},
		{name: "includeArchived not a boolean", params: params("includeArchived", "yes"), code: 400, msg: "includeArchived must be true or false", pos: -1},
		{name: "baselineCondition", params: params("baselineCondition", "baseline = 1"), code: 400, msg: "baselineCondition must not be used", pos: -1},
		{name: "suggest", params: params("suggest", "true"), code: 400, msg: "suggest must not be used", pos: -1},
		{name: "suggest empty", params: params("suggest", ""), code: 400, msg: "suggest must not be used", pos: -1},
		{name: "invalid spaceKey", params: params("spaceKey", "DEMO'--"), code: 400, msg: "invalid spaceKey", pos: -1},

		{name: "order unknown column", params: params("order", "REQKEY, password"), code: 400, msg: "invalid order: unknown order column", pos: 8},
		{name: "order SQL", params: params("order", "REQKEY; DELETE FROM requirements"), code: 400, msg: "invalid order", pos: 6},
		{name: "order subquery", params: params("order", "(SELECT 1)"), code: 400, msg: "invalid order", pos: 0},
		{name: "order too long", params: params("order", strings.Repeat("REQKEY, ", 40)), code: 400, msg: "invalid order", pos: 256},

		{name: "q tautology", params: params("q", "key = 'x' OR 1=1"), code: 400, msg: "invalid q", pos: 13},
		{name: "q quote and drop", params: params("q", "'; DROP TABLE requirements"), code: 400, msg: "invalid q", pos: 0},
		{name: "q statement", params: params("q", "REQKEY; DELETE"), code: 400, msg: "invalid q", pos: 6},
		{name: "q lone parenthesis", params: params("q", ")"), code: 400, msg: "invalid q", pos: 0},
		{name: "q too long", params: params("q", "key = '"+strings.Repeat("x", 5000)+"'"), code: 400, msg: "longer than", pos: 4096},
		{name: "q unicode", params: params("q", "@Priorité = 'Élevée' OR text ~ '%日本%'"), code: 200, limit: 50, keys: []string{}, pos: -1},
		{name: "q unicode key", params: params("q", "key = 'REQ‐1'"), code: 200, limit: 50, keys: []string{}, pos: -1},
		{name: "q SQL quote doubling is not an escape", params: params("q", `key = 'x'' OR 1=1 --'`), code: 400, msg: "invalid q", pos: 9},
		{name: "q injection in a value is a value", params: params("q", `key = 'x\' OR 1=1 --'`), code: 200, limit: 50, keys: []string{}, pos: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := search2(t, s, user, "DEMO", tt.params)
			if a.code != tt.code {
				t.Fatalf("%d %s, want %d", a.code, a.raw, tt.code)
			}
			if tt.code != 200 {
				if !strings.Contains(a.body.Message, tt.msg) {
					t.Errorf("message %q, want %q", a.body.Message, tt.msg)
				}
				switch {
				case tt.pos < 0 && a.body.Position != nil:
					t.Errorf("position %d, want none", *a.body.Position)
				case tt.pos >= 0 && (a.body.Position == nil || *a.body.Position != tt.pos):
					t.Errorf("position %v, want %d (%s)", a.body.Position, tt.pos, a.raw)
				}
				return
			}
			if *a.body.Limit != tt.limit || *a.body.Offset != tt.offset {
				t.Errorf("offset %d limit %d, want %d %d", *a.body.Offset, *a.body.Limit, tt.offset, tt.limit)
			}
			if got := a.keys(); !slices.Equal(got, tt.keys) {
				t.Errorf("results %v, want %v", got, tt.keys)
			}
		})
	}
}

// TestSearchJSON checks the answer's shape: the requirement JSON of
// the wiki API (shared/openapi/wiki.yaml), null baseline for current rows.
func TestSearchJSON(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seed(t, s)
	a := search2(t, s, "demo-wiki-user", "DEMO", params("q", "key = 'req-2' AND space = 'DEMO'"))
	var got map[string]any
	if err := json.Unmarshal([]byte(a.raw), &got); err != nil {
		t.Fatal(err)
	}
	want := `{"results":[{"spaceKey":"DEMO","key":"REQ-2","baseline":null,"status":"ACTIVE","text":"Log out users.",
	 "htmlExcerpt":"<p>Log out users.</p>","htmlNeedsUpdating":false,"properties":[{"key":"Priority","value":"Low","type":"INLINE"}],
	 "origin":{"pageId":"1","title":"Page 1"},"dependencies":[{"spaceKey":"DEMO","key":"REQ-1","relationship":"refines","suspect":false}],
	 "reverseDependencies":[{"spaceKey":"OTHER","key":"O-1","relationship":"refines"}],"issues":[],
	 "genericUrl":"/requirements/DEMO/REQ-2"}],"offset":0,"limit":50,"count":1,"hasMore":false}`
	var wantBody map[string]any
	if err := json.Unmarshal([]byte(want), &wantBody); err != nil {
		t.Fatal(err)
	}
	g, _ := json.Marshal(got)
	w, _ := json.Marshal(wantBody)
	if string(g) != string(w) {
		t.Fatalf("got\n%s\nwant\n%s", g, w)
	}
	// An empty answer has an empty list, not null.
	if a := search2(t, s, "demo-wiki-user", "DEMO", params("q", "key = 'NOPE'")); !strings.Contains(a.raw, `"results":[]`) {
		t.Fatalf("empty answer %s", a.raw)
	}
}

func TestSearchAccess(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seed(t, s)
	if a := search2(t, s, "", "DEMO", nil); a.code != 401 {
		t.Fatalf("anonymous: %d", a.code)
	}
	if a := search2(t, s, "demo-tracker-user", "DEMO", nil); a.code != 401 {
		t.Fatalf("tracker token: %d", a.code)
	}
	// The integration's incomingToken searches like a user.
	if a := search2(t, s, "demo-link", "DEMO", params("q", "jira = 'PROJ-1'")); a.code != 200 || !slices.Equal(a.keys(), []string{"DEMO/REQ-1"}) {
		t.Fatalf("link: %d %s", a.code, a.raw)
	}
}

// TestScopeRule: the path's spaceKey limits the search only when the
// tenant isolates spaces and no spaceKey parameter is given.
func TestScopeRule(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seed(t, s)
	const user = "demo-wiki-user"
	q := params("q", "key ~ 'REQ-1%'")
	all := []string{"DEMO/REQ-1", "OTHER/REQ-1"}
	check := func(name string, path string, p url.Values, want []string) {
		t.Helper()
		a := search2(t, s, user, path, p)
		if a.code != 200 || !slices.Equal(a.keys(), want) {
			t.Fatalf("%s: %d %v, want %v", name, a.code, a.keys(), want)
		}
	}
	check("off: tenant-wide", "DEMO", q, all)
	check("off: the path has no effect", "NOSUCHSPACE", q, all)
	withSpace := params("q", "key ~ 'REQ-1%'", "spaceKey", "OTHER")
	check("off: spaceKey parameter", "DEMO", withSpace, []string{"OTHER/REQ-1"})

	s.isolate(t, "demo", true)
	check("on: the path's space", "DEMO", q, []string{"DEMO/REQ-1"})
	check("on: another path", "OTHER", q, []string{"OTHER/REQ-1"})
	check("on: spaceKey parameter wins", "DEMO", withSpace, []string{"OTHER/REQ-1"})
	check("on: unknown space", "NOSUCHSPACE", q, []string{})
	if a := search2(t, s, user, "BAD SPACE", q); a.code != 400 {
		t.Fatalf("on: invalid path space: %d %s", a.code, a.raw)
	}
	// acme's setting is its own.
	if a := search2(t, s, "acme-wiki-user", "OTHER", q); !slices.Equal(a.keys(), []string{"DEMO/REQ-1"}) {
		t.Fatalf("acme: %v", a.keys())
	}
}

// TestTenantIsolation: acme never sees demo's requirements, whatever the
// query, plan or scope, and the reverse.
func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seed(t, s)
	for _, p := range []url.Values{
		nil, params("q", "key = 'REQ-1'"), params("q", "key ~ 'REQ%'"), params("q", "@Priority = 'High'"),
		params("q", "jira = 'PROJ-1'"), params("q", "page = 1"), params("q", "page = 2"), params("q", "to = 'DEMO/REQ-1'"),
		params("q", "from = 'REQ-2'"), params("q", "parent = 'DEMO/REQ-1'"), params("q", "baseline = 1", "includeArchived", "true"),
		params("includeArchived", "true"), params("spaceKey", "OTHER"), params("order", "TEXT"), params("q", "'o'"),
		params("q", "page = 'Page 1'"), params("q", "page ~ 1"), params("q", "page ~ 'page 2' OR page != 'Page 1'"),
	} {
		a := search2(t, s, "acme-wiki-user", "DEMO", p)
		for _, r := range a.body.Results {
			if !strings.HasPrefix(r.Text, "Acme") {
				t.Fatalf("acme %v sees %s/%s %q", p, r.SpaceKey, r.Key, r.Text)
			}
		}
		a = search2(t, s, "demo-wiki-user", "DEMO", p)
		for _, r := range a.body.Results {
			if strings.HasPrefix(r.Text, "Acme") {
				t.Fatalf("demo %v sees acme's %s/%s", p, r.SpaceKey, r.Key)
			}
		}
	}
}

// TestPagingStability pages through every match and gets each exactly
// once, in the order of one big page, for the key order (read in order)
// and another order (sorted in memory).
func TestPagingStability(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	rows := []string{}
	for i := range 40 {
		// Keys that differ in case across spaces, and equal texts.
		rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("req-%02d", i)), "<p>Same text.</p>", []string{"High", "Low"}[i%2], "", ""))
	}
	s.save(t, "demo", "1", "A", specs(rows...))
	s.save(t, "demo", "2", "B", strings.ReplaceAll(specs(rows...), "req-", "REQ-"))
	for _, order := range []string{"", "TEXT", "STATUS DESC, TEXT", "REQKEY DESC", "SPACEKEY DESC"} {
		for _, q := range []string{"", "@Priority = 'High'", "key ~ 'REQ-1%'"} {
			full := search2(t, s, "demo-wiki-user", "A", params("q", q, "order", order, "limit", "500"))
			var paged []string
			for off := 0; ; off += 7 {
				a := search2(t, s, "demo-wiki-user", "A", params("q", q, "order", order, "limit", "7", "offset", fmt.Sprint(off)))
				paged = append(paged, a.keys()...)
				// hasMore is true exactly when a next page has results.
				if more := off+7 < len(full.keys()); *a.body.HasMore != more {
					t.Fatalf("q=%q order=%q offset %d: hasMore %v, want %v", q, order, off, *a.body.HasMore, more)
				}
				if !*a.body.HasMore {
					break
				}
			}
			if !slices.Equal(paged, full.keys()) || len(paged) == 0 {
				t.Fatalf("q=%q order=%q: pages %v, one page %v", q, order, paged, full.keys())
			}
		}
	}
}

// TestSearchHasMore: hasMore says whether the next page has results, at
// exact page boundaries too (a last page that is full), in key order (read
// in order, stopped early), through an index and sorted in memory.
func TestSearchHasMore(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	rows := []string{}
	for i := range 6 {
		rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("REQ-%02d", i)), "<p>Text.</p>", []string{"High", "Low"}[i%2], "", ""))
	}
	s.save(t, "demo", "1", "A", specs(rows...))
	for _, q := range []string{"", "@Priority = 'High' OR @Priority = 'Low'", "key ~ 'REQ-%'", "text ~ '%Text%'"} {
		for _, order := range []string{"", "TEXT", "REQKEY DESC"} {
			for _, tc := range []struct {
				offset, limit, results int
				more                   bool
			}{
				{0, 6, 6, false}, // the whole answer in one full page
				{0, 5, 5, true},  // one left
				{0, 3, 3, true},  // two full pages
				{3, 3, 3, false}, // the second of them
				{4, 2, 2, false},
				{5, 1, 1, false},
				{4, 1, 1, true},
				{6, 1, 0, false}, // just past the end
				{9, 50, 0, false},
				{0, 500, 6, false},
			} {
				a := search2(t, s, "demo-wiki-user", "A", params("q", q, "order", order,
					"offset", fmt.Sprint(tc.offset), "limit", fmt.Sprint(tc.limit)))
				if a.code != 200 || len(a.body.Results) != tc.results || *a.body.HasMore != tc.more {
					t.Errorf("q=%q order=%q offset=%d limit=%d: %d, %d results, hasMore %v; want %d results, hasMore %v",
						q, order, tc.offset, tc.limit, a.code, len(a.body.Results), *a.body.HasMore, tc.results, tc.more)
				}
			}
		}
	}
	// A tenant's hasMore never counts another tenant's requirements.
	s.save(t, "acme", "1", "A", specs(rows...))
	if a := search2(t, s, "demo-wiki-user", "A", params("limit", "6")); a.code != 200 || *a.body.HasMore {
		t.Errorf("demo with acme's rows: %s", a.raw)
	}
}

// TestSearchReadBound: a search that would read more rows and index items
// than the service's bound is answered 400 "query too broad", naming q, and
// a narrower one in the same space still answers.
func TestSearchReadBound(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	rows := []string{}
	for i := range 30 {
		rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("REQ-%02d", i)), "<p>Text.</p>", []string{"High", "Low"}[i%2], "", ""))
	}
	s.save(t, "demo", "1", "A", specs(rows...))
	s.search.MaxRead = 20
	for _, p := range []url.Values{
		params("q", "text ~ '%zzz%'"),    // a scan of 30 rows, nothing found
		params("order", "TEXT"),          // sorted in memory: all 30
		params("q", "@Priority = 'Low'"), // 15 index items and 15 rows
	} {
		a := search2(t, s, "demo-wiki-user", "A", p)
		if a.code != 400 || !strings.Contains(a.body.Message, "query too broad") || !strings.Contains(a.raw, `"errors":{"q":`) {
			t.Errorf("%v: %d %s, want 400 query too broad on q", p, a.code, a.raw)
		}
	}
	if a := search2(t, s, "demo-wiki-user", "A", params("q", "@Priority = 'Low'", "limit", "5")); a.code != 200 || len(a.body.Results) != 5 {
		t.Errorf("first page of 5: %d %s", a.code, a.raw)
	}
}

// TestNeverInternalError sends random, often malformed, q and order values:
// the answer is 200 or 400, never 500.
func TestNeverInternalError(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seed(t, s)
	rnd := rand.New(rand.NewPCG(1, 2))
	atoms := []string{"key", "text", "space", "status", "page", "baseline", "jira@x", "to", "from", "parent", "child", "@P",
		"@Main\\ Category", "=", "==", "!=", "<>", "~", "<", "<=", ">", ">=", "IN", "NOT", "IS", "NULL", "AND", "OR", "(", ")",
		",", "'a'", "'%'", "'\\''", "'REQ-1'", "'DEMO/REQ-1'", "1", "-2.5", "'", "\\", ";", "--", "/*", "é", "日本", "\x00",
		"\xff", "'" + strings.Repeat("z", 1200) + "'", "REQKEY", "ASC", "DESC", "SELECT", "*"}
	for i := range 400 {
		var b []string
		for range 1 + rnd.IntN(8) {
			b = append(b, atoms[rnd.IntN(len(atoms))])
		}
		p := params("q", strings.Join(b, " "))
		if i%3 == 0 {
			p = params("order", strings.Join(b, " "))
		}
		if i%5 == 0 {
			p.Set("includeArchived", "true")
		}
		if a := search2(t, s, "demo-wiki-user", "DEMO", p); a.code != 200 && a.code != 400 {
			t.Fatalf("%v: %d %s", p, a.code, a.raw)
		}
	}
}
