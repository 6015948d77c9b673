package trackerlinks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/infra/trackertest"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/trackerlinks"
)

// TestRouteAccess: every issue-link route is for any tracker user (which
// routes exist is checked against template.yaml by functions/routes_test.go).
func TestRouteAccess(t *testing.T) {
	t.Parallel()
	rt := httpapi.NewRouter(auth.Tracker, nil)
	(&trackerlinks.Handler{}).Register(rt)
	if len(rt.Routes()) == 0 {
		t.Fatal("no routes")
	}
	for _, r := range rt.Routes() {
		if r.Access != httpapi.Member {
			t.Errorf("%s %s: access %v, want Member", r.Method, r.Path, r.Access)
		}
	}
}

func TestFixedString(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var s string
	h.JSON("GET", "/rest/reqs/1/issuelinks", demoUser, "", 200, &s)
	if s != trackerlinks.NotImplemented {
		t.Errorf("got %q", s)
	}
	h.Expect("GET", "/rest/reqs/1/issuelinks", "", "", 401)
	h.Expect("GET", "/rest/reqs/1/issuelinks", h.Link, "", 403)
}

// link is an issue link as GET answers it.
type link struct {
	IssueKey           string `json:"issueKey"`
	ApplinkID          string `json:"applinkId"`
	SpaceKey           string `json:"spaceKey"`
	Key                string `json:"key"`
	BaselineNumber     *int   `json:"baselineNumber"`
	Relationship       string `json:"relationship"`
	GenericURL         string `json:"genericUrl"`
	HTMLExcerpt        string `json:"htmlExcerpt"`
	RequirementDeleted bool   `json:"requirementDeleted"`
}

func (l link) String() string {
	b := "-"
	if l.BaselineNumber != nil {
		b = fmt.Sprint(*l.BaselineNumber)
	}
	return fmt.Sprintf("%s:%s/%s@%s:%s", l.IssueKey, l.SpaceKey, l.Key, b, l.Relationship)
}

func names(ls []link) string {
	var parts []string
	for _, l := range ls {
		parts = append(parts, l.String())
	}
	return strings.Join(parts, " ")
}

func item(key, rel string, extra string) string {
	return `{"applinkId":"wiki-1","spaceKey":"DEMO","key":"` + key + `","relationship":"` + rel + `"` + extra + `}`
}

func TestIssueLinksCRUD(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	path := "/rest/reqs/1/issuelinks/PROJ-1"
	wikiHas(h, "REQ-1", "REQ-2", "REQ-3", "REQ-4", "REQ-5")
	two := 2
	h.Wiki.Put(trackertest.Requirement{SpaceKey: "DEMO", Key: "REQ-2", Baseline: &two, Status: "ACTIVE"})

	var got []link
	h.JSON("POST", path, demoUser, "["+
		item("REQ-1", "implements", `,"baselineNumber":null,"genericUrl":"/requirements/DEMO/REQ-1","htmlExcerpt":"<p onclick=\"steal()\">Log in<script>alert(1)</script> users &amp; admins</p>"`)+","+
		item("REQ-2", "implements", `,"baselineNumber":2`)+","+
		item("REQ-2", "tests", "")+","+
		item("REQ-1", "implements", "")+"]", 200, &got)
	if n := names(got); n != "PROJ-1:DEMO/REQ-1@-:implements PROJ-1:DEMO/REQ-2@-:tests PROJ-1:DEMO/REQ-2@2:implements" {
		t.Fatalf("after POST: %s", n)
	}
	if got[0].HTMLExcerpt != "<p>Log in users &amp; admins</p>" || got[0].GenericURL != "/requirements/DEMO/REQ-1" || got[0].ApplinkID != "wiki-1" {
		t.Errorf("stored excerpt: %+v", got[0])
	}
	// The same link again: still one.
	h.JSON("POST", path, demoUser, "["+item("REQ-1", "implements", "")+"]", 200, &got)
	if len(got) != 3 {
		t.Errorf("duplicate POST: %s", names(got))
	}

	// Another issue updates REQ-1's excerpt: PROJ-1 sees it.
	h.JSON("POST", "/rest/reqs/1/issuelinks/PROJ-2", demoUser, "["+item("REQ-1", "implements", `,"htmlExcerpt":"<b>New text</b>"`)+"]", 200, nil)
	h.JSON("GET", path+"?relationship=implements", demoUser, "", 200, &got)
	if names(got) != "PROJ-1:DEMO/REQ-1@-:implements PROJ-1:DEMO/REQ-2@2:implements" || got[0].HTMLExcerpt != "<p><b>New text</b></p>" {
		t.Errorf("GET ?relationship=implements: %s %q", names(got), got[0].HTMLExcerpt)
	}

	// PUT limited to a relationship replaces only those links.
	h.JSON("PUT", path+"?relationship=implements", demoUser, "["+item("REQ-3", "implements", "")+"]", 200, &got)
	if n := names(got); n != "PROJ-1:DEMO/REQ-2@-:tests PROJ-1:DEMO/REQ-3@-:implements" {
		t.Errorf("after PUT ?relationship=implements: %s", n)
	}
	// What GET answered can be sent back: PUT without filter replaces all.
	var one []link
	h.JSON("GET", path+"?relationship=implements", demoUser, "", 200, &one)
	body, _ := json.Marshal(one)
	h.JSON("PUT", path, demoUser, string(body), 200, &got)
	if n := names(got); n != "PROJ-1:DEMO/REQ-3@-:implements" {
		t.Errorf("after PUT: %s", n)
	}

	// DELETE takes references; absent ones are fine.
	rec := h.Do("DELETE", path, demoUser, "["+item("REQ-3", "implements", "")+","+item("REQ-9", "implements", "")+"]")
	if rec.Code != 204 || rec.Body.Len() != 0 {
		t.Errorf("DELETE: %d %s", rec.Code, rec.Body)
	}
	h.Expect("GET", path, demoUser, "", 200, "[]")
	// PROJ-2 keeps its link and the shared excerpt.
	h.JSON("GET", "/rest/reqs/1/issuelinks/PROJ-2", demoUser, "", 200, &got)
	if len(got) != 1 || got[0].HTMLExcerpt != "<p><b>New text</b></p>" {
		t.Errorf("PROJ-2: %+v", got)
	}
	// Another tenant sees nothing.
	h.Expect("GET", "/rest/reqs/1/issuelinks/PROJ-2", acmeUser, "", 200, "[]")
}

func TestIssueLinksBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	path := "/rest/reqs/1/issuelinks/PROJ-1"
	good := "[" + item("REQ-1", "implements", "") + "]"
	for _, tc := range []struct {
		method, path, token, body string
		status                    int
		msg                       string
	}{
		{"POST", path, demoUser, `[{"applinkId":"wiki-9","spaceKey":"DEMO","key":"R","relationship":"r"}]`, 404, "wiki-9 not found"},
		{"POST", path, acmeUser, good, 404, "wiki-1 not found"},
		{"DELETE", path, acmeUser, good, 404, "wiki-1 not found"},
		{"POST", path, demoUser, "[" + item("REQ-1", "implements", `,"baselineNumber":"2"`) + "]", 400, "wrong JSON type for baselineNumber"},
		{"POST", path, demoUser, "[" + item("REQ-1", "implements", `,"htmlExcerpt":5`) + "]", 400, "wrong JSON type"},
		{"POST", path, demoUser, item("REQ-1", "implements", ""), 400, "wrong JSON type"},
		{"POST", path, demoUser, `null`, 400, "JSON array"},
		{"POST", path, demoUser, "[" + item("REQ-1", "implements", `,"colour":"red"`) + "]", 400, "unknown field"},
		{"POST", path, demoUser, "[" + item("REQ-1", "implements", `,"issueKey":"PROJ-2"`) + "]", 400, "not the path"},
		{"POST", path, demoUser, "[" + item("REQ-1", "", "") + "]", 400, "item 0: relationship is required"},
		{"POST", path, demoUser, "[" + item("REQ#1", "implements", "") + "]", 400, "invalid key"},
		{"POST", path, demoUser, "[" + item("REQ-1", "implements", `,"baselineNumber":-1`) + "]", 400, "baseline"},
		{"POST", path, demoUser, "[" + item("REQ-1", "implements", `,"genericUrl":"javascript:alert(1)"`) + "]", 400, "genericUrl"},
		{"POST", "/rest/reqs/1/issuelinks/A%23B", demoUser, good, 400, "issueKey"},
		{"PUT", path + "?relationship=a%23b", demoUser, good, 400, "relationship"},
		{"GET", "/rest/reqs/1/issuelinks/A%20B", demoUser, "", 400, "issueKey"},
		{"POST", path, "", good, 401, ""},
		{"POST", path, h.Link, good, 403, ""},
		{"POST", path, wikiUser, good, 401, ""},
		{"POST", path, demoUser, "[" + item("REQ-1", "implements", `,"htmlExcerpt":"`+strings.Repeat("x", 1<<20)+`"`) + "]", 413, ""},
	} {
		rec := h.Do(tc.method, tc.path, tc.token, tc.body)
		if rec.Code != tc.status || !strings.Contains(rec.Body.String(), tc.msg) {
			t.Errorf("%s %s %.80s: %d %.200s, want %d with %q", tc.method, tc.path, tc.body, rec.Code, rec.Body, tc.status, tc.msg)
		}
	}
	if rec := h.DoType("POST", path, demoUser, "text/plain", good); rec.Code != 415 {
		t.Errorf("text/plain: %d", rec.Code)
	}
	h.Expect("GET", path, demoUser, "", 200, "[]")
}

type syncAnswer struct {
	Links []struct {
		IssueKey       string `json:"issueKey"`
		ApplinkID      string `json:"applinkId"`
		SpaceKey       string `json:"spaceKey"`
		Key            string `json:"key"`
		BaselineNumber *int   `json:"baselineNumber"`
		Relationship   string `json:"relationship"`
	} `json:"links"`
	Requirements int `json:"requirements"`
}

func (s syncAnswer) pairs() string {
	var parts []string
	for _, l := range s.Links {
		parts = append(parts, l.IssueKey+":"+l.Key)
	}
	return strings.Join(parts, " ")
}

// setupSyncRule links A to R1 and R2, B to R2 and C to R3, with old texts,
// and gives the wiki new texts.
func setupSyncRule(h *trackertest.Harness) {
	h.T.Helper()
	// The wiki has them (links are checked with it); the sync brings the
	// wiki's excerpts.
	for _, k := range []string{"R1", "R2", "R3"} {
		h.Wiki.SetRequirement("DEMO", k, "<p>new "+k+"</p>")
	}
	for issue, keys := range map[string][]string{"A-1": {"R1", "R2"}, "B-1": {"R2"}, "C-1": {"R3"}} {
		var items []string
		for _, k := range keys {
			items = append(items, item(k, "implements", `,"htmlExcerpt":"<p>old `+k+`</p>"`))
		}
		h.JSON("POST", "/rest/reqs/1/issuelinks/"+issue, demoUser, "["+strings.Join(items, ",")+"]", 200, nil)
	}
}

func TestSyncRule(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	setupSyncRule(h)
	// The links POSTed were sent to the wiki by the tracker-side outbox
	// (at version 4: each requirement's whole set); the sync sends more.
	setup := len(h.Wiki.LinkCalls())

	var res syncAnswer
	h.JSON("PUT", "/rest/reqs/1/sync?issues=A-1", demoUser, "", 200, &res)
	if res.pairs() != "A-1:R1 A-1:R2 B-1:R2" || res.Requirements != 2 {
		t.Errorf("sync answer %+v", res)
	}
	l := res.Links[0]
	if l.ApplinkID != "wiki-1" || l.SpaceKey != "DEMO" || l.BaselineNumber != nil || l.Relationship != "implements" {
		t.Errorf("link %+v", l)
	}
	calls := h.Wiki.LinkCalls()[setup:]
	if len(calls) != 1 {
		t.Fatalf("%d links callbacks, want 1", len(calls))
	}
	var sent []string
	for _, set := range calls[0] {
		for _, l := range set.Links {
			sent = append(sent, l.IssueKey+":"+set.Key)
		}
		if set.Baseline != nil {
			t.Errorf("baseline %v sent for a current version", *set.Baseline)
		}
	}
	if strings.Join(sent, " ") != "A-1:R1 A-1:R2 B-1:R2" {
		t.Errorf("the wiki received %v", sent)
	}
	// B sees R2's new text; C, not synchronised, keeps R3's old one.
	var got []link
	h.JSON("GET", "/rest/reqs/1/issuelinks/B-1", demoUser, "", 200, &got)
	if got[0].HTMLExcerpt != "<p>new R2</p>" {
		t.Errorf("B sees %q", got[0].HTMLExcerpt)
	}
	h.JSON("GET", "/rest/reqs/1/issuelinks/C-1", demoUser, "", 200, &got)
	if got[0].HTMLExcerpt != "<p>old R3</p>" {
		t.Errorf("C sees %q", got[0].HTMLExcerpt)
	}

	// Both spellings of the list.
	h.JSON("PUT", "/rest/reqs/1/sync?issues=C-1&issues=B-1,A-1", demoUser, "", 200, &res)
	if res.pairs() != "A-1:R1 A-1:R2 B-1:R2 C-1:R3" || res.Requirements != 3 {
		t.Errorf("second sync %+v", res)
	}

	// A requirement the wiki lost (after the link was made): flagged, not
	// sent.
	wikiHas(h, "GONE")
	h.JSON("POST", "/rest/reqs/1/issuelinks/A-1", demoUser, "["+item("GONE", "implements", "")+"]", 200, nil)
	h.Wiki.Delete("DEMO", "GONE")
	h.JSON("PUT", "/rest/reqs/1/sync?issues=A-1", demoUser, "", 200, &res)
	if res.pairs() != "A-1:R1 A-1:R2 B-1:R2" {
		t.Errorf("sync with a lost requirement: %s", res.pairs())
	}
	h.JSON("GET", "/rest/reqs/1/issuelinks/A-1", demoUser, "", 200, &got)
	if got[0].Key != "GONE" || !got[0].RequirementDeleted {
		t.Errorf("lost requirement: %+v", got[0])
	}
}

func TestSyncWikiDown(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	setupSyncRule(h)
	setup := len(h.Wiki.LinkCalls())
	h.Wiki.SetDown(true)
	h.Expect("PUT", "/rest/reqs/1/sync?issues=A-1", demoUser, "", 502, "with 503", "nothing was changed")
	h.ExpectWithout("PUT", "/rest/reqs/1/sync?issues=A-1", demoUser, "", 502, "maintenance")
	var got []link
	h.JSON("GET", "/rest/reqs/1/issuelinks/A-1", demoUser, "", 200, &got)
	if got[0].HTMLExcerpt != "<p>old R1</p>" {
		t.Errorf("a failed sync changed the excerpt: %q", got[0].HTMLExcerpt)
	}
	if len(h.Wiki.LinkCalls()) != setup {
		t.Error("links were sent")
	}
}

func TestManualMessagesWaitForSync(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	h.Expect("PUT", "/rest/reqs/1/api/wiki-1/mode", demoAdmin, `"MANUAL"`, 200)
	batch := `[{"id":1,"type":"LINK","spaceKey":"DEMO","key":"R1","objectKey":"A-1","relationship":"implements"},
	           {"id":2,"type":"UPDATED","spaceKey":"DEMO","key":"R1","newHtmlExcerpt":"<p>from message</p>"},
	           {"id":3,"type":"LINK","spaceKey":"DEMO","key":"R7","objectKey":"Z-1","relationship":"implements"}]`
	h.Expect("POST", "/rest/reqs/1/api", h.Link, batch, 200, `"pending"`)
	h.Expect("GET", "/rest/reqs/1/issuelinks/A-1", demoUser, "", 200, "[]")

	h.Wiki.SetRequirement("DEMO", "R1", "<p>from the wiki</p>")
	var res syncAnswer
	h.JSON("PUT", "/rest/reqs/1/sync?issues=A-1", demoUser, "", 200, &res)
	if res.pairs() != "A-1:R1" || res.Requirements != 1 {
		t.Errorf("sync %+v", res)
	}
	var got []link
	h.JSON("GET", "/rest/reqs/1/issuelinks/A-1", demoUser, "", 200, &got)
	if len(got) != 1 || got[0].HTMLExcerpt != "<p>from the wiki</p>" {
		t.Errorf("A after sync: %+v", got)
	}
	// The message about Z is not covered: still pending, Z has no link.
	p, err := h.Store.ListPending(ctx, "demo")
	if err != nil || len(p) != 1 || p[0].Message.ObjectKey != "Z-1" {
		t.Errorf("pending %+v, %v", p, err)
	}
	h.Expect("GET", "/rest/reqs/1/issuelinks/Z-1", demoUser, "", 200, "[]")
}

func TestSyncBadInput(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.Expect("PUT", "/rest/reqs/1/sync", demoUser, "", 400, "issues is required")
	h.Expect("PUT", "/rest/reqs/1/sync?issues=,", demoUser, "", 400, "issues is required")
	h.Expect("PUT", "/rest/reqs/1/sync?issues=A%23B", demoUser, "", 400, "issueKey")
	h.Expect("PUT", "/rest/reqs/1/sync?issues=A-1", "", "", 401)
	h.Expect("PUT", "/rest/reqs/1/sync?issues=A-1", h.Link, "", 403)
	h.Expect("GET", "/rest/reqs/1/sync", demoUser, "", 405)
	// Nothing linked: nothing to send.
	h.Expect("PUT", "/rest/reqs/1/sync?issues=A-1", demoUser, "", 200, `{"links":[],"requirements":0}`)
}

// Relationships are normalised as the wiki does (lower case, spaces to '_'),
// so a column header sent as is by either side names the same relationship.
func TestRelationshipsAreNormalised(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	path := "/rest/reqs/1/issuelinks/PROJ-4"
	wikiHas(h, "REQ-1")
	var got []link
	h.JSON("POST", path, demoUser, "["+item("REQ-1", "Is Implemented  By", "")+"]", 200, &got)
	if len(got) != 1 || got[0].Relationship != "is_implemented_by" {
		t.Fatalf("stored %+v", got)
	}
	h.JSON("GET", path+"?relationship=Is%20Implemented%20By", demoUser, "", 200, &got)
	if len(got) != 1 {
		t.Fatalf("filter by the header form: %+v", got)
	}
	h.Expect("DELETE", path, demoUser, "["+item("REQ-1", "IS IMPLEMENTED BY", "")+"]", 204)
	h.JSON("GET", path, demoUser, "", 200, &got)
	if len(got) != 0 {
		t.Fatalf("delete by the header form left %+v", got)
	}
}

// wikiHas makes the fake wiki serve requirements DEMO/<key>.
func wikiHas(h *trackertest.Harness, keys ...string) {
	for _, k := range keys {
		h.Wiki.SetRequirement("DEMO", k, "<p>"+k+"</p>")
	}
}

// TestConcurrentReplaces runs concurrent PUTs of one issue on DynamoDB
// Local: the issue's links end as exactly one of the sets sent.
func TestConcurrentReplaces(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	wikiHas(h, "C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8")
	path := "/rest/reqs/1/issuelinks/CON-1"
	sets := [][]string{{"C1", "C2", "C3"}, {"C4"}, {"C5", "C6"}, {"C7", "C8", "C1", "C4"}, {"C2", "C5", "C8"}, {"C3", "C6"}}
	for round := range 3 {
		var wg sync.WaitGroup
		codes := make([]int, len(sets))
		for i, keys := range sets {
			wg.Go(func() {
				var items []string
				for _, k := range keys {
					items = append(items, item(k, "implements", ""))
				}
				codes[i] = h.Do("PUT", path, demoUser, "["+strings.Join(items, ",")+"]").Code
			})
		}
		wg.Wait()
		var sent [][]string
		for i, c := range codes {
			switch c {
			case 200:
				s := slices.Clone(sets[i])
				slices.Sort(s)
				sent = append(sent, s)
			case 409: // waited too long for the issue's lease: nothing written
			default:
				t.Fatalf("round %d: PUT %v answered %d", round, sets[i], c)
			}
		}
		var got []link
		h.JSON("GET", path, demoUser, "", 200, &got)
		var keys []string
		for _, l := range got {
			keys = append(keys, l.Key)
		}
		slices.Sort(keys)
		if !slices.ContainsFunc(sent, func(s []string) bool { return slices.Equal(s, keys) }) {
			t.Fatalf("round %d: links %v are none of the sets sent %v", round, keys, sent)
		}
	}
}

// TestLinkOrigins goes through the version-5 rules over HTTP: origins,
// the 409 on removing a page link, POST adding the tracker's hold, the 404
// of a requirement the wiki lacks, and the TRACKER set sent to the wiki.
func TestLinkOrigins(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	wikiHas(h, "REQ-1", "REQ-2")
	h.JSON("PUT", "/rest/reqs/1/api/wiki-1/version", demoAdmin, "5", 200, nil)
	h.JSON("POST", "/rest/reqs/1/api", h.Link, `[{"id":1,"type":"LINKS","spaceKey":"DEMO","key":"REQ-1","baseline":null,"estate":"_",
		"links":[{"objectKey":"PROJ-1","relationship":"implements"}],"version":3,"origin":{"pageId":"123","title":"Specs"}}]`, 200, nil)
	path := "/rest/reqs/1/issuelinks/PROJ-1"
	h.Expect("GET", path, demoUser, "", 200, `"origin":"PAGE"`)
	h.Expect("DELETE", path, demoUser, "["+item("REQ-1", "implements", "")+"]", 409, "defined on wiki page 'Specs' (123): edit the page")
	h.Expect("PUT", path, demoUser, "["+item("REQ-2", "tests", "")+"]", 409, "defined on wiki page 'Specs' (123)")
	var got []link
	h.JSON("GET", path, demoUser, "", 200, &got)
	if names(got) != "PROJ-1:DEMO/REQ-1@-:implements" {
		t.Fatalf("a refused PUT wrote: %s", names(got))
	}
	// The page's link made on the tracker too: both hold it.
	h.JSON("POST", path, demoUser, "["+item("REQ-1", "implements", "")+","+item("REQ-2", "tests", "")+"]", 200, nil)
	calls := h.Wiki.LinkCalls()
	if len(calls) == 0 {
		t.Fatal("the edit sent nothing to the wiki")
	}
	last := calls[len(calls)-1]
	var sentSets []string
	for _, s := range last {
		var issues []string
		for _, l := range s.Links {
			issues = append(issues, l.IssueKey+"/"+l.Relationship)
		}
		sentSets = append(sentSets, s.Key+"="+strings.Join(issues, ","))
	}
	if strings.Join(sentSets, " ") != "REQ-1=PROJ-1/implements REQ-2=PROJ-1/tests" {
		t.Errorf("sent %v", sentSets)
	}
	// The page drops it: the tracker's hold stays.
	h.JSON("POST", "/rest/reqs/1/api", h.Link, `[{"id":2,"type":"LINKS","spaceKey":"DEMO","key":"REQ-1","links":[],"version":4}]`, 200, nil)
	h.Expect("GET", path, demoUser, "", 200, `"key":"REQ-1","baselineNumber":null,"relationship":"implements"`, `"origin":"TRACKER"`)
	// An older LINKS is ignored.
	var res struct {
		Results []struct{ Message string } `json:"results"`
	}
	h.JSON("POST", "/rest/reqs/1/api", h.Link, `[{"id":3,"type":"LINKS","spaceKey":"DEMO","key":"REQ-1","links":[{"objectKey":"PROJ-9","relationship":"implements"}],"version":2}]`, 200, &res)
	if len(res.Results) != 1 || res.Results[0].Message != "ignored: older than version 4" {
		t.Errorf("older LINKS: %+v", res)
	}
	// Requirements the wiki lacks, or a wiki down: nothing written.
	h.Expect("POST", "/rest/reqs/1/issuelinks/PROJ-7", demoUser, "["+item("REQ-1", "tests", "")+","+item("REQ-9", "tests", "")+"]", 404, "requirement DEMO/REQ-9 not found in wiki 'wiki-1'")
	h.Wiki.SetDown(true)
	h.Expect("PUT", "/rest/reqs/1/issuelinks/PROJ-7", demoUser, "["+item("REQ-1", "tests", "")+"]", 502)
	h.Wiki.SetDown(false)
	h.JSON("GET", "/rest/reqs/1/issuelinks/PROJ-7", demoUser, "", 200, &got)
	if len(got) != 0 {
		t.Errorf("refused requests wrote %s", names(got))
	}
	// A wiki refusing the callback (403: DISABLED integration): the edit
	// is done, the set waits in the outbox.
	h.Wiki.SetLinksStatus(403)
	h.JSON("POST", "/rest/reqs/1/issuelinks/PROJ-8", demoUser, "["+item("REQ-2", "tests", "")+"]", 200, nil)
	h.Wiki.SetLinksStatus(0)
	n := len(h.Wiki.LinkCalls())
	rep, err := h.Svc.RunOutbox(context.Background())
	if err != nil || rep.Sent < 1 || len(h.Wiki.LinkCalls()) <= n {
		t.Errorf("outbox run: %+v, %v", rep, err)
	}
}

// TestIssueLinksStrictJSON checks the input rules of issue 15 on POST and
// PUT issuelinks: a duplicate name (also one equal but for case), a field
// name in another case and trailing data are each a 400 naming the member,
// and no link is written.
func TestIssueLinksStrictJSON(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	wikiHas(h, "REQ-1", "REQ-2")
	path := "/rest/reqs/1/issuelinks/PROJ-1"
	valid := "[" + item("REQ-1", "implements", "") + "," + item("REQ-2", "tests", `,"baselineNumber":null`) + "]"
	var cases []httpapitest.StrictJSONCase
	for _, name := range []string{"key", "relationship", "applinkId"} {
		cases = append(cases, httpapitest.StrictJSONCases(valid, name, `"x"`)...)
	}
	cases = append(cases, httpapitest.StrictJSONCases(valid, "baselineNumber", "2")...)
	for _, method := range []string{"POST", "PUT"} {
		for _, c := range cases {
			rec := h.DoType(method, path, demoUser, "application/json", c.Body)
			c.Name = method + " " + c.Name
			httpapitest.CheckStrictJSON(t, c, rec.Code, rec.Body.Bytes())
		}
	}
	h.Expect("GET", path, demoUser, "", 200, "[]")
	h.Expect("POST", path, demoUser, valid, 200, "REQ-1", "REQ-2")
}
