package wikirequirements_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikibaselines"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikicontent"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikirequirements"
	"github.com/reqtrace/reqtrace/shared/search"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// wikiServer serves the wiki's content, requirement and baseline route
// groups on one router, wired as their functions are, on DynamoDB Local:
// pages are saved, moved, reindexed and deleted through the API.
func wikiServer(t *testing.T) (http.Handler, *dynamo.CallCounter) {
	t.Helper()
	env := testenv.AWS(t)
	calls := dynamo.NewCallCounter()
	db := dynamodb.NewFromConfig(env.Config, calls.Options)
	svc := wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(db, env.WikiTable)})
	store := wikitable.NewSearchStore(db, env.WikiTable)
	bl := wikitable.NewBaselineStore(db, env.WikiTable)
	rt := httpapi.NewRouter(auth.Wiki, auth.NewAuthenticator(devTokens, time.Minute))
	rt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	(&wikirequirements.Handler{Requirements: svc, Search: search.New(search.Deps{Store: store, Settings: store}), External: svc}).Register(rt)
	(&wikicontent.Handler{Pages: svc}).Register(rt)
	(&wikibaselines.Handler{Baselines: baseline.New(baseline.Deps{Store: bl, Source: bl})}).Register(rt)
	return rt, calls
}

// call sends a request with a JSON body (none when body is "") and decodes
// the JSON answer.
func call(t *testing.T, h http.Handler, method, path, token, body string) answer {
	t.Helper()
	ctype := ""
	if body != "" {
		ctype = "application/json"
	}
	rec := httpapitest.Do(h, method, path, token, ctype, body)
	a := answer{code: rec.Code, header: rec.Header(), raw: rec.Body.String()}
	if rec.Code == http.StatusNoContent {
		return a
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &a.body); err != nil {
		t.Fatalf("%s %s: %v in %q", method, path, err, a.raw)
	}
	return a
}

func mustCall(t *testing.T, h http.Handler, method, path, token, body string) answer {
	t.Helper()
	a := call(t, h, method, path, token, body)
	if a.code != 200 && a.code != 204 {
		t.Fatalf("%s %s: %d %s", method, path, a.code, a.raw)
	}
	return a
}

// putPage saves a page through PUT /rest/reqs/1/content/{id}.
func putPage(t *testing.T, h http.Handler, id, space, body string) {
	t.Helper()
	in, _ := json.Marshal(map[string]string{"spaceKey": space, "title": "Page " + id, "body": body})
	mustCall(t, h, "PUT", "/rest/reqs/1/content/"+id, "demo-wiki-user", string(in))
}

const extPath = "/rest/reqs/1/requirement2/%s/%s/external"

// propsOf renders the properties of a Requirement answer as
// key=value/TYPE.
func propsOf(t *testing.T, body map[string]any) []string {
	t.Helper()
	list, ok := body["properties"].([]any)
	if !ok {
		t.Fatalf("no properties in %v", body)
	}
	out := []string{}
	for _, p := range list {
		m := p.(map[string]any)
		out = append(out, fmt.Sprintf("%v=%v/%v", m["key"], m["value"], m["type"]))
	}
	return out
}

func wantPropsOf(t *testing.T, what string, body map[string]any, want ...string) {
	t.Helper()
	if want == nil {
		want = []string{}
	}
	if got := propsOf(t, body); !slices.Equal(got, want) {
		t.Fatalf("%s: properties %q, want %q", what, got, want)
	}
}

func extSpecs(rows ...string) string {
	return wt.Table(append([]string{wt.TH("Key", "Description", "Priority")}, rows...)...)
}

func extRow(key, text, prio string) string { return wt.TR(wt.Def(key), "<p>"+text+"</p>", prio) }

// TestExternalPropertiesRoute: PUT .../{key}/external sets and removes
// (null) external properties and answers the Requirement, whose page
// properties say INLINE and the external ones EXTERNAL; GET shows them
// with its one read; bad bodies, tokens and targets are refused.
func TestExternalPropertiesRoute(t *testing.T) {
	t.Parallel()
	h, calls := wikiServer(t)
	putPage(t, h, "123", "DEMO", extSpecs(extRow("REQ-1", "Log in", "High"), extRow("REQ-2", "Log out", "Low"))+
		"<p>"+wt.Link("", "GHOST")+"</p>"+extSpecs(wt.TR(wt.Def("REQ-3"), "<p>Uses "+wt.Link("", "GHOST")+"</p>", "")))
	putPage(t, h, "200", "OTHER", extSpecs(extRow("O-1", "Other", "")))
	putPage(t, h, "200", "MOVED", extSpecs(extRow("O-1", "Other", ""))) // OTHER/O-1 is MOVED
	putPage(t, h, "300", "DEMO", extSpecs(extRow("GONE", "Gone", "")))
	mustCall(t, h, "DELETE", "/rest/reqs/1/content/300", "demo-wiki-user", "") // DEMO/GONE is DELETED

	path := fmt.Sprintf(extPath, "DEMO", "req-1")
	a := mustCall(t, h, "PUT", path, "demo-wiki-user", `{"Cost": "12", "Owner": "bob", "Flag": ""}`)
	wantPropsOf(t, "set", a.body, "Priority=High/INLINE", "Cost=12/EXTERNAL", "Flag=/EXTERNAL", "Owner=bob/EXTERNAL")
	if a.body["key"] != "REQ-1" || a.body["status"] != "ACTIVE" {
		t.Fatalf("answer %s", a.raw)
	}
	calls.Reset()
	a = mustCall(t, h, "GET", "/rest/reqs/1/requirement2/DEMO/REQ-1", "demo-link", "")
	wantPropsOf(t, "get", a.body, "Priority=High/INLINE", "Cost=12/EXTERNAL", "Flag=/EXTERNAL", "Owner=bob/EXTERNAL")
	if c := calls.Counts(); len(c) != 1 || c["GetItem"] != 1 {
		t.Fatalf("GET requirement: DynamoDB calls %v, want one GetItem", c)
	}

	// null removes; names compare ignoring case (the new spelling stays);
	// an admin is a wiki user too.
	a = mustCall(t, h, "PUT", path, "demo-wiki-admin", `{"Owner": null, "cost": "13", "Nope": null, "Flag": null}`)
	wantPropsOf(t, "change", a.body, "Priority=High/INLINE", "cost=13/EXTERNAL")
	// An empty object changes nothing and answers the requirement.
	calls.Reset()
	a = mustCall(t, h, "PUT", path, "demo-wiki-user", `{}`)
	wantPropsOf(t, "no change", a.body, "Priority=High/INLINE", "cost=13/EXTERNAL")
	if c := calls.Counts(); c["TransactWriteItems"] != 0 || c["BatchWriteItem"] != 0 {
		t.Fatalf("nothing to change wrote: %v", c)
	}

	for _, tc := range []struct {
		body, field, want string
	}{
		{`{"Cost": 12}`, "Cost", "must be a string (to set it) or null (to remove it), got a number"},
		{`{"Cost": "1", "Owner": true}`, "Owner", "got true or false"},
		{`{"Cost": {"v": "1"}}`, "Cost", "got an object"},
		{`{"Cost": ["1"]}`, "Cost", "got an array"},
		{`{"Cost": "1", "COST": "2"}`, "COST", "duplicate name: equal but for case"}, // refused by the strict decoder, before the service
		{`{"Co\u0001st": "1"}`, "Co\u0001st", "control characters"},
		{`{"Cost": "a\nb"}`, "Cost", "control characters"},
		{`{" Cost": "1"}`, " Cost", "white space"},
		{`{"Cost": "` + strings.Repeat("v", 2049) + `"}`, "Cost", "2048 bytes"},
		{`{"` + strings.Repeat("n", 256) + `": "1"}`, strings.Repeat("n", 256), "255 bytes"},
	} {
		a := call(t, h, "PUT", path, "demo-wiki-user", tc.body)
		errs, _ := a.body["errors"].(map[string]any)
		if a.code != 400 || errs == nil || !strings.Contains(fmt.Sprint(errs[tc.field]), tc.want) {
			t.Errorf("%.60s: %d %.300s, want 400 naming %q: %q", tc.body, a.code, a.raw, tc.field, tc.want)
		}
	}
	for _, body := range []string{`["Cost"]`, `"Cost"`, `null`, `12`, `{"Cost": "1"`, `{"Cost": "1"} {}`, `{"": "1"}`} {
		if a := call(t, h, "PUT", path, "demo-wiki-user", body); a.code != 400 {
			t.Errorf("body %s: %d %s, want 400", body, a.code, a.raw)
		}
	}
	if rec := httpapitest.Do(h, "PUT", path, "demo-wiki-user", "text/plain", `{"Cost": "1"}`); rec.Code != 415 {
		t.Errorf("text/plain: %d %s", rec.Code, rec.Body)
	}
	// More than 100 properties on one requirement.
	var many []string
	for i := range 101 {
		many = append(many, fmt.Sprintf(`"P%03d": "v"`, i))
	}
	if a := call(t, h, "PUT", path, "demo-wiki-user", "{"+strings.Join(many, ", ")+"}"); a.code != 400 || !strings.Contains(a.raw, "at most 100") {
		t.Errorf("101 properties: %d %.300s", a.code, a.raw)
	}

	// Tokens: none or unknown 401, the integration's Link credential 403.
	for token, code := range map[string]int{"": 401, "nope": 401, "demo-link": 403} {
		if a := call(t, h, "PUT", path, token, `{"Cost": "1"}`); a.code != code {
			t.Errorf("token %q: %d %s, want %d", token, a.code, a.raw, code)
		}
	}
	// Targets that are not an ACTIVE requirement of the caller's tenant.
	for _, tc := range []struct{ space, key, token, want string }{
		{"DEMO", "NOPE", "demo-wiki-user", "requirement DEMO/NOPE not found"},
		{"DEMO", "GHOST", "demo-wiki-user", "requirement DEMO/GHOST not found"}, // a stub
		{"DEMO", "GONE", "demo-wiki-user", "it is DELETED"},
		{"OTHER", "O-1", "demo-wiki-user", "it moved to MOVED/O-1"},
		{"DEMO", "REQ-1", "acme-wiki-user", "requirement DEMO/REQ-1 not found"}, // another tenant's
	} {
		a := call(t, h, "PUT", fmt.Sprintf(extPath, tc.space, tc.key), tc.token, `{"Cost": "1"}`)
		if a.code != 404 || !strings.Contains(fmt.Sprint(a.body["message"]), tc.want) {
			t.Errorf("%s/%s as %s: %d %s, want 404 %q", tc.space, tc.key, tc.token, a.code, a.raw, tc.want)
		}
	}
	if a := call(t, h, "PUT", fmt.Sprintf(extPath, "DE%20MO", "REQ-1"), "demo-wiki-user", `{"Cost": "1"}`); a.code != 400 {
		t.Errorf("bad space key: %d %s", a.code, a.raw)
	}
	// The other tenant's row is untouched, and acme sees nothing of demo's.
	wantPropsOf(t, "after refusals", mustCall(t, h, "GET", "/rest/reqs/1/requirement2/DEMO/REQ-1", "demo-wiki-user", "").body,
		"Priority=High/INLINE", "cost=13/EXTERNAL")
	if a := call(t, h, "GET", "/rest/reqs/1/requirement2/DEMO/REQ-1", "acme-wiki-user", ""); a.code != 404 {
		t.Errorf("acme reads demo's: %d", a.code)
	}
}

// TestExternalPropertiesLifeCycle, through the API: external properties
// survive page saves that change the page's properties, the reindex and a
// move (they follow the requirement to its new space), are frozen into a
// baseline (GET ...?v=N shows them), and go when the requirement is
// deleted (the page deleted, or the key dropped from it).
func TestExternalPropertiesLifeCycle(t *testing.T) {
	t.Parallel()
	h, _ := wikiServer(t)
	get := func(space, key, query string) map[string]any {
		t.Helper()
		return mustCall(t, h, "GET", "/rest/reqs/1/requirement2/"+space+"/"+key+query, "demo-wiki-user", "").body
	}
	putPage(t, h, "123", "DEMO", extSpecs(extRow("REQ-1", "Log in", "High"), extRow("REQ-2", "Log out", "Low")))
	mustCall(t, h, "PUT", fmt.Sprintf(extPath, "DEMO", "REQ-1"), "demo-wiki-user", `{"Cost": "12", "Owner": "bob"}`)
	mustCall(t, h, "PUT", fmt.Sprintf(extPath, "DEMO", "REQ-2"), "demo-wiki-user", `{"Cost": "7"}`)

	putPage(t, h, "123", "DEMO", extSpecs(extRow("REQ-1", "Log in fast", "Low"), extRow("REQ-2", "Log out", "Low")))
	wantPropsOf(t, "after a save", get("DEMO", "REQ-1", ""), "Priority=Low/INLINE", "Cost=12/EXTERNAL", "Owner=bob/EXTERNAL")
	mustCall(t, h, "POST", "/rest/reqs/1/helpers/reindex/123", "demo-wiki-user", "")
	wantPropsOf(t, "after a reindex", get("DEMO", "REQ-1", ""), "Priority=Low/INLINE", "Cost=12/EXTERNAL", "Owner=bob/EXTERNAL")

	// A move: the new space's row has them, the MOVED row not.
	putPage(t, h, "123", "NEW", extSpecs(extRow("REQ-1", "Log in fast", "Low"), extRow("REQ-2", "Log out", "Low")))
	wantPropsOf(t, "after a move", get("NEW", "REQ-1", ""), "Priority=Low/INLINE", "Cost=12/EXTERNAL", "Owner=bob/EXTERNAL")
	moved := get("DEMO", "REQ-1", "")
	wantPropsOf(t, "the MOVED row", moved, "Priority=Low/INLINE")
	if moved["status"] != "MOVED" {
		t.Fatalf("status %v", moved["status"])
	}

	// Frozen into a baseline: later changes do not reach the copy.
	b := mustCall(t, h, "POST", "/rest/reqs/1/baseline/NEW/1/create-instant", "demo-wiki-user", `{"name": "v1", "fromCeo": "123"}`)
	n := int(b.body["number"].(float64))
	mustCall(t, h, "PUT", fmt.Sprintf(extPath, "NEW", "REQ-1"), "demo-wiki-user", `{"Cost": "99", "Owner": null}`)
	copyOf := get("NEW", "REQ-1", fmt.Sprintf("?v=%d", n))
	wantPropsOf(t, "the baseline copy", copyOf, "Priority=Low/INLINE", "Cost=12/EXTERNAL", "Owner=bob/EXTERNAL")
	if copyOf["status"] != "ARCHIVED" {
		t.Fatalf("copy status %v", copyOf["status"])
	}
	wantPropsOf(t, "current after the baseline", get("NEW", "REQ-1", ""), "Priority=Low/INLINE", "Cost=99/EXTERNAL")
	// The baseline's copies are searched with includeArchived.
	q := "/rest/reqs/1/requirement2/NEW?includeArchived=true&q=" + url.QueryEscape(`ext@Cost = '12'`)
	if got := keysOf(t, mustCall(t, h, "GET", q, "demo-wiki-user", "").body); !slices.Equal(got, []string{fmt.Sprintf("NEW/REQ-1@%d", n)}) {
		t.Fatalf("archived search %v", got)
	}

	// The key dropped from the page: DELETED without them, for good.
	putPage(t, h, "123", "NEW", extSpecs(extRow("REQ-1", "Log in fast", "Low")))
	deleted := get("NEW", "REQ-2", "")
	wantPropsOf(t, "a DELETED row", deleted, "Priority=Low/INLINE")
	putPage(t, h, "123", "NEW", extSpecs(extRow("REQ-1", "Log in fast", "Low"), extRow("REQ-2", "Log out", "Low")))
	wantPropsOf(t, "defined again", get("NEW", "REQ-2", ""), "Priority=Low/INLINE")

	// The page deleted.
	mustCall(t, h, "DELETE", "/rest/reqs/1/content/123", "demo-wiki-user", "")
	wantPropsOf(t, "page deleted", get("NEW", "REQ-1", ""), "Priority=Low/INLINE")
	q = "/rest/reqs/1/requirement2/NEW?q=" + url.QueryEscape(`ext@Cost IS NOT NULL`)
	if got := keysOf(t, mustCall(t, h, "GET", q, "demo-wiki-user", "").body); len(got) != 0 {
		t.Fatalf("deleted requirements still found: %v", got)
	}
}

// keysOf lists the results of a search answer as SPACE/KEY[@baseline].
func keysOf(t *testing.T, body map[string]any) []string {
	t.Helper()
	out := []string{}
	results, ok := body["results"].([]any)
	if !ok {
		t.Fatalf("no results in %v", body)
	}
	for _, r := range results {
		m := r.(map[string]any)
		k := fmt.Sprintf("%v/%v", m["spaceKey"], m["key"])
		if b, ok := m["baseline"].(float64); ok {
			k += fmt.Sprintf("@%d", int(b))
		}
		out = append(out, k)
	}
	return out
}

// TestExternalPropertiesSearch: ext@Name with every operator a property
// takes, through the search API; @Name and ext@Name are different fields.
func TestExternalPropertiesSearch(t *testing.T) {
	t.Parallel()
	h, calls := wikiServer(t)
	putPage(t, h, "1", "DEMO", extSpecs(
		extRow("R-1", "One", "High"), extRow("R-2", "Two", "12"), extRow("R-3", "Three", ""), extRow("R-4", "Four", "")))
	putPage(t, h, "2", "OTHER", extSpecs(extRow("R-1", "Other one", "")))
	for space, bodies := range map[string]map[string]string{
		"DEMO":  {"R-1": `{"Cost": "12", "Main Owner": "Bob"}`, "R-2": `{"cost": "9.5"}`, "R-3": `{"Cost": "100", "Priority": "Low"}`},
		"OTHER": {"R-1": `{"Cost": "12"}`},
	} {
		for key, body := range bodies {
			mustCall(t, h, "PUT", fmt.Sprintf(extPath, space, key), "demo-wiki-user", body)
		}
	}
	search := func(space, q string) []string {
		t.Helper()
		return keysOf(t, mustCall(t, h, "GET", "/rest/reqs/1/requirement2/"+space+"?spaceKey="+space+"&q="+url.QueryEscape(q), "demo-wiki-user", "").body)
	}
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{`ext@Cost = '12'`, []string{"DEMO/R-1"}},
		{`EXT@cost == 12`, []string{"DEMO/R-1"}},
		{`ext@Cost != '12'`, []string{"DEMO/R-2", "DEMO/R-3"}},
		{`ext@Cost <> '12'`, []string{"DEMO/R-2", "DEMO/R-3"}},
		{`ext@Cost ~ '1%'`, []string{"DEMO/R-1", "DEMO/R-3"}},
		{`ext@Cost < 12`, []string{"DEMO/R-2"}},
		{`ext@Cost <= 12`, []string{"DEMO/R-1", "DEMO/R-2"}},
		{`ext@Cost > 12`, []string{"DEMO/R-3"}},
		{`ext@Cost >= '12'`, []string{"DEMO/R-1", "DEMO/R-3"}},
		{`ext@Cost IN ('9.5', '100')`, []string{"DEMO/R-2", "DEMO/R-3"}},
		{`ext@Cost NOT IN ('9.5')`, []string{"DEMO/R-1", "DEMO/R-3"}},
		{`ext@Cost IS NULL`, []string{"DEMO/R-4"}},
		{`ext@Cost IS NOT NULL`, []string{"DEMO/R-1", "DEMO/R-2", "DEMO/R-3"}},
		{`NOT ext@Cost = '12'`, []string{"DEMO/R-2", "DEMO/R-3", "DEMO/R-4"}},
		{`ext@Main\ Owner = 'Bob'`, []string{"DEMO/R-1"}},
		{`ext@main\ owner = 'bob'`, nil},
		// A page property and an external one of the same name differ.
		{`@Priority = 'Low'`, nil},
		{`ext@Priority = 'Low'`, []string{"DEMO/R-3"}},
		{`@Priority = '12'`, []string{"DEMO/R-2"}},
		{`ext@Priority = '12' OR @Cost = '12'`, nil},
		{`ext@Cost = '12' AND @Priority = 'High'`, []string{"DEMO/R-1"}},
	} {
		got := search("DEMO", tc.q)
		if tc.want == nil {
			tc.want = []string{}
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.q, got, tc.want)
		}
	}
	// Equality is read from the index: one Query of its partition, then the
	// rows it names (the settings' GetItem of a tenant-wide search aside).
	calls.Reset()
	q := "/rest/reqs/1/requirement2/DEMO?q=" + url.QueryEscape(`ext@Cost = '12' AND space IN ('DEMO', 'OTHER')`)
	if got := keysOf(t, mustCall(t, h, "GET", q, "demo-wiki-user", "").body); !slices.Equal(got, []string{"DEMO/R-1", "OTHER/R-1"}) {
		t.Fatalf("two spaces: %v", got)
	}
	if c := calls.Counts(); c["Query"] != 1 || c["BatchGetItem"] != 1 {
		t.Fatalf("calls %v, want one index Query and one BatchGetItem", c)
	}
}
