package trackerlinks_test

import (
	"fmt"
	"slices"
	"testing"
)

// suspectLink is an issue link item's suspect fields.
type suspectLink struct {
	Key          string `json:"key"`
	Suspect      bool   `json:"suspect"`
	SuspectSince string `json:"suspectSince"`
	SuspectCause *struct {
		Fields []string `json:"fields"`
	} `json:"suspectCause"`
}

// TestSuspectMarks: a suspect UPDATED (version 5) marks every issue link
// of the requirement, the page's and the tracker's; an UPDATED without
// suspect marks nothing; a second suspect UPDATED keeps the mark's time
// and adds its fields; a link made later is not suspect; DELETE
// /issuelinks/{issueKey}/suspect clears that issue's mark only (204), for
// the caller's tenant only; its refusals.
func TestSuspectMarks(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	wikiHas(h, "REQ-1")
	h.JSON("PUT", "/rest/reqs/1/api/wiki-1/version", demoAdmin, "5", 200, nil)
	id := 0
	send := func(msg string) {
		t.Helper()
		id++
		h.JSON("POST", "/rest/reqs/1/api", h.Link, fmt.Sprintf(`[{"id":%d,%s}]`, id, msg), 200, nil)
	}
	mark := func(issue string) *suspectLink {
		t.Helper()
		var got []suspectLink
		h.JSON("GET", "/rest/reqs/1/issuelinks/"+issue, demoUser, "", 200, &got)
		if len(got) != 1 || got[0].Key != "REQ-1" {
			t.Fatalf("links of %s: %+v", issue, got)
		}
		if !got[0].Suspect {
			if got[0].SuspectSince != "" || got[0].SuspectCause != nil {
				t.Fatalf("%s: not suspect but %+v", issue, got[0])
			}
			return nil
		}
		if got[0].SuspectSince == "" || got[0].SuspectCause == nil {
			t.Fatalf("%s: suspect without since or cause: %+v", issue, got[0])
		}
		return &got[0]
	}
	send(`"type":"LINKS","spaceKey":"DEMO","key":"REQ-1","baseline":null,"estate":"_","links":[{"objectKey":"PROJ-1","relationship":"implements"}],"version":1`)
	h.JSON("POST", "/rest/reqs/1/issuelinks/PROJ-2", demoUser, "["+item("REQ-1", "tests", "")+"]", 200, nil)
	if mark("PROJ-1") != nil || mark("PROJ-2") != nil {
		t.Fatal("suspect before any change")
	}
	send(`"type":"UPDATED","spaceKey":"DEMO","key":"REQ-1","baseline":null,"estate":"_","newHtmlExcerpt":"<p>a</p>","changedFields":["properties"],"suspect":false`)
	if mark("PROJ-1") != nil || mark("PROJ-2") != nil {
		t.Fatal("an UPDATED with suspect false marked")
	}
	send(`"type":"UPDATED","spaceKey":"DEMO","key":"REQ-1","baseline":null,"estate":"_","newHtmlExcerpt":"<p>b</p>","changedFields":["text"],"suspect":true,"suspectCause":{"fields":["text"]}`)
	m1, m2 := mark("PROJ-1"), mark("PROJ-2")
	if m1 == nil || m2 == nil || !slices.Equal(m1.SuspectCause.Fields, []string{"text"}) || !slices.Equal(m2.SuspectCause.Fields, []string{"text"}) {
		t.Fatalf("after a suspect UPDATED: PROJ-1 %+v, PROJ-2 (the tracker's link) %+v", m1, m2)
	}
	send(`"type":"UPDATED","spaceKey":"DEMO","key":"REQ-1","baseline":null,"estate":"_","newHtmlExcerpt":"<p>c</p>","changedFields":["text","status"],"suspect":true,"suspectCause":{"fields":["status"]}`)
	if m := mark("PROJ-1"); m == nil || m.SuspectSince != m1.SuspectSince || !slices.Equal(m.SuspectCause.Fields, []string{"text", "status"}) {
		t.Fatalf("after a second suspect UPDATED: %+v (since was %s)", m, m1.SuspectSince)
	}
	// A link made after the change is not suspect.
	h.JSON("POST", "/rest/reqs/1/issuelinks/PROJ-3", demoUser, "["+item("REQ-1", "tests", "")+"]", 200, nil)
	if mark("PROJ-3") != nil {
		t.Fatal("a link made after the change is suspect")
	}

	// Clearing: refusals, another tenant, then PROJ-1 only.
	h.Expect("DELETE", "/rest/reqs/1/issuelinks/PROJ%201/suspect", demoUser, "", 400)
	h.Expect("DELETE", "/rest/reqs/1/issuelinks/PROJ-1/suspect", "", "", 401)
	h.Expect("DELETE", "/rest/reqs/1/issuelinks/PROJ-1/suspect", wikiUser, "", 401)
	h.Expect("DELETE", "/rest/reqs/1/issuelinks/PROJ-1/suspect", h.Link, "", 403)
	if rec := h.Do("DELETE", "/rest/reqs/1/issuelinks/PROJ-1/suspect", acmeUser, ""); rec.Code != 204 {
		t.Fatalf("acme clears PROJ-1: %d %s", rec.Code, rec.Body)
	}
	if mark("PROJ-1") == nil {
		t.Fatal("another tenant cleared demo's PROJ-1")
	}
	// Issue keys are exact on the tracker: proj-1 is another issue, with
	// no links (GET answers []), and clearing it clears nothing.
	h.Expect("GET", "/rest/reqs/1/issuelinks/proj-1", demoUser, "", 200, "[]")
	if rec := h.Do("DELETE", "/rest/reqs/1/issuelinks/proj-1/suspect", demoUser, ""); rec.Code != 204 || mark("PROJ-1") == nil {
		t.Fatalf("clear proj-1: %d %q, or PROJ-1 cleared", rec.Code, rec.Body)
	}
	if rec := h.Do("DELETE", "/rest/reqs/1/issuelinks/PROJ-1/suspect", demoUser, ""); rec.Code != 204 || rec.Body.Len() != 0 {
		t.Fatalf("clear PROJ-1: %d %q", rec.Code, rec.Body)
	}
	if mark("PROJ-1") != nil || mark("PROJ-2") == nil {
		t.Fatal("clearing PROJ-1: PROJ-1 should be cleared, PROJ-2 still suspect")
	}
	if rec := h.Do("DELETE", "/rest/reqs/1/issuelinks/PROJ-99/suspect", demoUser, ""); rec.Code != 204 {
		t.Fatalf("an issue without links: %d %s", rec.Code, rec.Body)
	}
}
