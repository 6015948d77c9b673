package localstack_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/infra/localstack"
	"github.com/reqtrace/reqtrace/infra/scheduler"
)

// pageBody is a page defining REQ-001 with text, implemented by issue PROJ-1
// of the integration jira-1.
func pageBody(text string) string {
	return `<table><tbody><tr><th>Key</th><th>Description</th><th>Implements</th></tr><tr>` +
		`<td><ac:structured-macro ac:name="requirement"><ac:parameter ac:name="key">REQ-001</ac:parameter></ac:structured-macro></td>` +
		`<td><p>` + text + `</p></td>` +
		`<td><ac:structured-macro ac:name="jira"><ac:parameter ac:name="key">PROJ-1</ac:parameter><ac:parameter ac:name="serverId">jira-1</ac:parameter></ac:structured-macro></td>` +
		`</tr></tbody></table>`
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func mustStatus(t *testing.T, a answer, want int) answer {
	t.Helper()
	if a.status != want {
		t.Fatalf("status %d, want %d: %s", a.status, want, a.body)
	}
	return a
}

func field(t *testing.T, body, name string) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatalf("not a JSON object: %s", body)
	}
	s, _ := m[name].(string)
	if s == "" {
		t.Fatalf("no %q in %s", name, body)
	}
	return s
}

// runSync invokes the Sync function the way the EventBridge schedule does.
func runSync(t *testing.T, st *localstack.Stack) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := st.Invoke(ctx, "Sync", scheduler.ScheduledEvent("Sync-Schedule", time.Now())); err != nil {
		t.Fatalf("sync run: %v", err)
	}
}

type issueLink struct {
	IssueKey     string `json:"issueKey"`
	ApplinkID    string `json:"applinkId"`
	SpaceKey     string `json:"spaceKey"`
	Key          string `json:"key"`
	Relationship string `json:"relationship"`
	HTMLExcerpt  string `json:"htmlExcerpt"`
}

func issueLinks(t *testing.T, st *localstack.Stack, issue string) []issueLink {
	t.Helper()
	a := mustStatus(t, call(t, "GET", st.TrackerURL+"/rest/reqs/1/issuelinks/"+issue, "demo-tracker-user", ""), 200)
	var links []issueLink
	if err := json.Unmarshal([]byte(a.body), &links); err != nil {
		t.Fatalf("issue links: %s", a.body)
	}
	return links
}

// TestWikiAndTrackerRoundTrip runs both applications through the local
// gateway with their real bootstraps: link the two sides, save a page with a
// jira macro, let the sync function deliver, change the text, resync.
func TestWikiAndTrackerRoundTrip(t *testing.T) {
	st := startStack(t)
	W, T := st.WikiURL, st.TrackerURL

	// 1. The tracker admin registers the wiki; its incomingToken is what the
	// wiki will send.
	a := mustStatus(t, call(t, "PUT", T+"/rest/reqs/1/api/wiki-1", "demo-tracker-admin",
		`{"name":"Demo wiki","url":"`+W+`","serviceId":"jira-1"}`), 200)
	trackerToken := field(t, a.body, "incomingToken")

	// 2. The wiki admin creates the integration with it.
	a = mustStatus(t, call(t, "POST", W+"/rest/reqs/1/integration", "demo-wiki-admin",
		`{"serviceId":"jira-1","applinkId":"jira-1","label":"Demo tracker","rpcUrl":"`+T+`","displayUrl":"`+T+`","version":4,"token":`+jsonString(trackerToken)+`}`), 200)
	wikiToken := field(t, a.body, "incomingToken")
	if strings.Contains(a.body, trackerToken) {
		t.Fatal("the integration answer leaks the write-only token")
	}

	// 3. The tracker admin gives the applink the wiki's token.
	mustStatus(t, call(t, "PUT", T+"/rest/reqs/1/api/wiki-1", "demo-tracker-admin",
		`{"name":"Demo wiki","url":"`+W+`","serviceId":"jira-1","token":`+jsonString(wikiToken)+`}`), 200)

	// 4. A page defines REQ-001, implemented by PROJ-1.
	mustStatus(t, call(t, "PUT", W+"/rest/reqs/1/content/100", "demo-wiki-user",
		`{"spaceKey":"DEMO","title":"Specs","body":`+jsonString(pageBody("The system shall log in users."))+`}`), 200)
	found := mustStatus(t, call(t, "GET", W+"/rest/reqs/1/requirement2/DEMO?q=jira%20%3D%20'PROJ-1'", "demo-wiki-user", ""), 200)
	if !strings.Contains(found.body, `"count":1`) || !strings.Contains(found.body, "REQ-001") {
		t.Fatalf("search jira = 'PROJ-1': %s", found.body)
	}
	q := mustStatus(t, call(t, "GET", W+"/rest/reqs/1/integration/jira-1/queue/outbound", "demo-wiki-admin", ""), 200)
	if !strings.Contains(q.body, `"LINK"`) || !strings.Contains(q.body, "PROJ-1") {
		t.Fatalf("no LINK message queued: %s", q.body)
	}

	// 5. The scheduled sync delivers it: the tracker has the link and excerpt.
	runSync(t, st)
	links := issueLinks(t, st, "PROJ-1")
	if len(links) != 1 || links[0].Key != "REQ-001" || links[0].ApplinkID != "wiki-1" || links[0].Relationship != "implements" ||
		!strings.Contains(links[0].HTMLExcerpt, "log in users") {
		t.Fatalf("tracker links of PROJ-1 after sync: %+v", links)
	}
	q = mustStatus(t, call(t, "GET", W+"/rest/reqs/1/integration/jira-1/queue/outbound?includeDone=true", "demo-wiki-admin", ""), 200)
	if strings.Contains(q.body, `"NEW"`) {
		t.Fatalf("messages still NEW after the sync run: %s", q.body)
	}

	// 6. Another issue links REQ-001 on the tracker; the text changes on the
	// wiki; after the next sync every linked issue shows the new excerpt.
	mustStatus(t, call(t, "POST", T+"/rest/reqs/1/issuelinks/PROJ-2", "demo-tracker-user",
		`[{"applinkId":"wiki-1","spaceKey":"DEMO","key":"REQ-001","baselineNumber":null,"relationship":"tests"}]`), 200)
	mustStatus(t, call(t, "PUT", W+"/rest/reqs/1/content/100", "demo-wiki-user",
		`{"spaceKey":"DEMO","title":"Specs","body":`+jsonString(pageBody("The system shall log in users with SSO."))+`}`), 200)
	runSync(t, st)
	for _, issue := range []string{"PROJ-1", "PROJ-2"} {
		links := issueLinks(t, st, issue)
		if len(links) != 1 || !strings.Contains(links[0].HTMLExcerpt, "with SSO") {
			t.Fatalf("%s does not show the new excerpt: %+v", issue, links)
		}
	}

	// 7. PUT /sync on the tracker sends the wiki the full link set of REQ-001.
	a = mustStatus(t, call(t, "PUT", T+"/rest/reqs/1/sync?issues=PROJ-1", "demo-tracker-user", ""), 200)
	var synced struct {
		Links []issueLink `json:"links"`
	}
	if err := json.Unmarshal([]byte(a.body), &synced); err != nil || len(synced.Links) != 2 {
		t.Fatalf("sync answer: %s", a.body)
	}
	a = mustStatus(t, call(t, "GET", W+"/rest/reqs/1/requirement2/DEMO/REQ-001", "demo-wiki-user", ""), 200)
	var req struct {
		Issues []struct {
			ServiceID, IssueKey, Relationship string
		} `json:"issues"`
	}
	if err := json.Unmarshal([]byte(a.body), &req); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range req.Issues {
		got[l.IssueKey] = fmt.Sprintf("%s/%s", l.ServiceID, l.Relationship)
	}
	if got["PROJ-1"] != "jira-1/implements" || got["PROJ-2"] != "jira-1/tests" {
		t.Fatalf("wiki issues of REQ-001 after the tracker's sync: %s", a.body)
	}

	// 8. Tenant isolation across the gateway: acme sees none of it.
	mustStatus(t, call(t, "GET", W+"/rest/reqs/1/requirement2/DEMO/REQ-001", "acme-wiki-user", ""), 404)
	mustStatus(t, call(t, "GET", T+"/rest/reqs/1/api/wiki-1", "acme-tracker-admin", ""), 404)
}
