package trackerapi_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/infra/trackertest"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// TestListApplinks: GET /rest/reqs/1/applinks (tracker admin) answers the
// tenant's applinks in id order as GET .../api/{applinkId} answers each,
// never a token.
func TestListApplinks(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	var docs applinkOut
	h.JSON("PUT", "/rest/reqs/1/api/docs", demoAdmin, `{"name":"Docs","url":"https://docs.example.com/","token":"s3cret-docs"}`, 200, &docs)
	var acme applinkOut
	h.JSON("PUT", "/rest/reqs/1/api/acme-wiki", acmeAdmin, `{"url":"http://acme.test"}`, 200, &acme)

	h.Expect("GET", "/rest/reqs/1/applinks", "", "", 401)
	h.Expect("GET", "/rest/reqs/1/applinks", wikiUser, "", 401) // the other application's token
	h.Expect("GET", "/rest/reqs/1/applinks", demoUser, "", 403)
	h.Expect("GET", "/rest/reqs/1/applinks", h.Link, "", 403)

	rec := h.Do("GET", "/rest/reqs/1/applinks", demoAdmin, "")
	var list []applinkOut
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &list) != nil {
		t.Fatalf("list = %d %s", rec.Code, rec.Body)
	}
	want := []applinkOut{
		{ApplinkID: "docs", Name: "Docs", URL: "https://docs.example.com", ServiceID: "docs", Mode: "AUTO", Version: 4, HasToken: true},
		{ApplinkID: "wiki-1", Name: "Demo wiki", URL: h.WikiURL, ServiceID: "jira-1", Mode: "AUTO", Version: 4, HasToken: true},
	}
	if len(list) != len(want) || list[0] != want[0] || list[1] != want[1] {
		t.Fatalf("list\n%+v\nwant\n%+v", list, want)
	}
	// Each item is what GET of the applink answers.
	for _, a := range list {
		var one applinkOut
		h.JSON("GET", "/rest/reqs/1/api/"+a.ApplinkID, demoAdmin, "", 200, &one)
		if one != a {
			t.Errorf("GET %s = %+v, listed %+v", a.ApplinkID, one, a)
		}
	}
	for _, secret := range []string{"s3cret-docs", trackertest.WikiToken, docs.IncomingToken, h.Link, "incomingToken", "wikiToken", "Hash"} {
		if strings.Contains(rec.Body.String(), secret) {
			t.Errorf("the list shows %q: %s", secret, rec.Body)
		}
	}
	// Another tenant sees its own only; a tenant without applinks gets [].
	h.JSON("GET", "/rest/reqs/1/applinks", acmeAdmin, "", 200, &list)
	if len(list) != 1 || list[0].ApplinkID != "acme-wiki" {
		t.Errorf("acme's list %+v", list)
	}
	h.Expect("DELETE", "/rest/reqs/1/api/acme-wiki", acmeAdmin, "", 204)
	if rec := h.Do("GET", "/rest/reqs/1/applinks", acmeAdmin, ""); rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != "[]" {
		t.Errorf("empty list = %d %s", rec.Code, rec.Body)
	}
}

// TestDeleteApplink: DELETE /rest/reqs/1/api/{applinkId} (tracker admin)
// removes the applink with its incoming credential, its issue links, the
// requirement excerpts and link states kept for it, its tracker outbox
// marks and its pending messages; another applink's links and another
// tenant's applink of the same id stay; the id can be registered again
// and starts with no links.
func TestDeleteApplink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	var docs, acme applinkOut
	h.JSON("PUT", "/rest/reqs/1/api/docs", demoAdmin, `{"name":"Docs","url":"https://docs.example.com/"}`, 200, &docs)
	h.JSON("PUT", "/rest/reqs/1/api/wiki-1", acmeAdmin, `{"url":"http://acme.test"}`, 200, &acme)
	link := func(token string, id int, space, key, issue, rel string) {
		t.Helper()
		body := `[{"id":` + strconv.Itoa(id) + `,"type":"LINK","spaceKey":"` + space + `","key":"` + key +
			`","objectKey":"` + issue + `","relationship":"` + rel + `","newHtmlExcerpt":"<p>` + key + `</p>"}]`
		h.Expect("POST", "/rest/reqs/1/api", token, body, 200, `"OK"`)
	}
	link(h.Link, 1, "DEMO", "REQ-1", "PROJ-1", "implements")
	link(h.Link, 2, "DEMO", "REQ-2", "PROJ-2", "tests")
	link(h.Link, 3, "DEMO", "REQ-2", "PROJ-1", "tests")
	link(docs.IncomingToken, 1, "DOCS", "D-1", "PROJ-1", "implements")
	link(acme.IncomingToken, 1, "DEMO", "REQ-1", "PROJ-1", "implements")
	// A pending (MANUAL) message and a tracker outbox mark of wiki-1.
	h.Expect("PUT", "/rest/reqs/1/api/wiki-1/mode", demoAdmin, `"MANUAL"`, 200)
	link(h.Link, 4, "DEMO", "REQ-3", "PROJ-3", "implements")
	if p, err := h.Store.ListPending(ctx, "demo"); err != nil || len(p) != 1 {
		t.Fatalf("pending %d, %v", len(p), err)
	}
	marked := tracker.ReqRef{ApplinkID: "wiki-1", SpaceKey: "DEMO", Key: "REQ-9"}
	st := tracker.EmptyLinkState(marked)
	next := st.Clone()
	next.Set(tracker.IssueRelationship{IssueKey: "PROJ-9", Relationship: "tests"}, tracker.TrackerHold)
	if err := h.Store.WriteLinks(ctx, "demo", []tracker.LinkWrite{{Old: st, New: next, Mark: true}}); err != nil {
		t.Fatal(err)
	}

	path := "/rest/reqs/1/api/wiki-1"
	h.Expect("DELETE", path, "", "", 401)
	h.Expect("DELETE", path, wikiUser, "", 401)
	h.Expect("DELETE", path, demoUser, "", 403)
	h.Expect("DELETE", path, h.Link, "", 403) // its own credential may not delete it
	h.Expect("DELETE", "/rest/reqs/1/api/nope", demoAdmin, "", 404, "nope not found")
	h.Expect("DELETE", "/rest/reqs/1/api/docs", acmeAdmin, "", 404) // demo's
	h.Expect("DELETE", "/rest/reqs/1/api/a%20b", demoAdmin, "", 400, "applinkId")

	if rec := h.Do("DELETE", path, demoAdmin, ""); rec.Code != 204 || rec.Body.Len() != 0 {
		t.Fatalf("DELETE = %d %q", rec.Code, rec.Body)
	}
	h.Expect("GET", path, demoAdmin, "", 404)
	h.Expect("DELETE", path, demoAdmin, "", 404)
	var list []applinkOut
	h.JSON("GET", "/rest/reqs/1/applinks", demoAdmin, "", 200, &list)
	if len(list) != 1 || list[0].ApplinkID != "docs" {
		t.Fatalf("list after delete %+v", list)
	}
	// Its credential is gone: the wiki's calls answer 401.
	h.Expect("POST", "/rest/reqs/1/api", h.Link, `[]`, 401)
	h.Expect("PUT", path+"/version", h.Link, `5`, 401)

	// Its links went with it; docs' link and acme's stay.
	issueLinks := func(tenant, issue string) []string {
		t.Helper()
		views, err := h.Svc.IssueLinks(ctx, tenant, issue, "")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, v := range views {
			out = append(out, v.Req.String()+" "+v.Relationship)
		}
		return out
	}
	if got := issueLinks("demo", "PROJ-1"); len(got) != 1 || got[0] != "docs:DOCS/D-1 implements" {
		t.Errorf("demo PROJ-1 after delete: %v", got)
	}
	for _, issue := range []string{"PROJ-2", "PROJ-3", "PROJ-9"} {
		if got := issueLinks("demo", issue); len(got) != 0 {
			t.Errorf("demo %s after delete: %v", issue, got)
		}
	}
	if got := issueLinks("acme", "PROJ-1"); len(got) != 1 || got[0] != "wiki-1:DEMO/REQ-1 implements" {
		t.Errorf("acme PROJ-1 after demo's delete: %v", got)
	}
	// Its requirements, link states, pending messages and marks too.
	refs := []tracker.ReqRef{{ApplinkID: "wiki-1", SpaceKey: "DEMO", Key: "REQ-1"}, {ApplinkID: "wiki-1", SpaceKey: "DEMO", Key: "REQ-2"}, marked}
	if reqs, err := h.Store.GetRequirements(ctx, "demo", refs); err != nil || len(reqs) != 0 {
		t.Errorf("requirements after delete: %+v, %v", reqs, err)
	}
	states, err := h.Store.LinkStates(ctx, "demo", refs)
	if err != nil {
		t.Fatal(err)
	}
	for r, st := range states {
		if len(st.Links()) != 0 || st.Rev != 0 {
			t.Errorf("link state of %s after delete: %+v", r, st)
		}
	}
	if p, err := h.Store.ListPending(ctx, "demo"); err != nil || len(p) != 0 {
		t.Errorf("pending after delete: %+v, %v", p, err)
	}
	marks, err := h.Store.PendingMarks(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range marks {
		if m.Tenant == "demo" && m.Ref.ApplinkID == "wiki-1" {
			t.Errorf("mark left: %+v", m)
		}
	}
	if reqs, err := h.Store.GetRequirements(ctx, "acme", refs[:1]); err != nil || len(reqs) != 1 {
		t.Errorf("acme's requirement after demo's delete: %+v, %v", reqs, err)
	}

	// Registered again: a new credential, no links.
	var again applinkOut
	h.JSON("PUT", path, demoAdmin, `{"url":"`+h.WikiURL+`","serviceId":"jira-1"}`, 200, &again)
	if again.IncomingToken == "" || again.IncomingToken == h.Link || again.Mode != "AUTO" || again.Version != 4 || again.HasToken {
		t.Fatalf("registered again: %+v", again)
	}
	if got := issueLinks("demo", "PROJ-2"); len(got) != 0 {
		t.Errorf("PROJ-2 after registering again: %v", got)
	}
	h.Expect("POST", "/rest/reqs/1/api", again.IncomingToken, `[]`, 200)
}

// TestRegisterPurgesLeftovers: links an applink id holds while no applink
// of that id exists (left by an edit racing its deletion) are dropped when
// an applink of that id is created.
func TestRegisterPurgesLeftovers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h := newHarness(t)
	ref := tracker.ReqRef{ApplinkID: "old", SpaceKey: "DEMO", Key: "REQ-1"}
	st := tracker.EmptyLinkState(ref)
	next := st.Clone()
	next.Set(tracker.IssueRelationship{IssueKey: "PROJ-1", Relationship: "implements"}, tracker.TrackerHold)
	if err := h.Store.WriteLinks(ctx, "demo", []tracker.LinkWrite{{Old: st, New: next}}); err != nil {
		t.Fatal(err)
	}
	if views, _ := h.Svc.IssueLinks(ctx, "demo", "PROJ-1", ""); len(views) != 1 {
		t.Fatalf("setup: %+v", views)
	}
	h.JSON("PUT", "/rest/reqs/1/api/old", demoAdmin, `{"url":"http://old.test"}`, 200, nil)
	if views, _ := h.Svc.IssueLinks(ctx, "demo", "PROJ-1", ""); len(views) != 0 {
		t.Errorf("a new applink starts with the links of an old one: %+v", views)
	}
}
