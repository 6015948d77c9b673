package convergence_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"
)

const api = "/rest/reqs/1"

// link is one wiki integration and the tracker applink of the same id
// (serviceId = applinkId), with the fault proxy in front of the tracker that
// the integration's rpcUrl names.
type link struct {
	id        string
	tracker   *faultProxy
	wikiToken string // the integration's incomingToken (the tracker's credential on the wiki)
}

// connect registers the wiki at wikiURL on the tenant's tracker and creates
// the integration, both at version, the integration's rpcUrl pointing at a
// new fault proxy in front of the tracker: the three steps of docs/tracker.md.
func (e *env) connect(t testing.TB, tn *tenant, id, wikiURL string, version int) (*link, error) {
	p := newFaultProxy(e.st.TrackerURL, 4*httpTimeout)
	t.Cleanup(p.close)
	W, T := e.st.WikiURL, e.st.TrackerURL
	a, err := do("PUT", T+api+"/api/"+id, tn.trackerAdmin, map[string]any{
		"name": "wiki of " + tn.name, "url": wikiURL, "serviceId": id, "version": version})
	if err != nil || a.status != 200 {
		return nil, fmt.Errorf("register applink %s: %v %s", id, err, a)
	}
	var reg struct{ IncomingToken string }
	if err := json.Unmarshal([]byte(a.body), &reg); err != nil || reg.IncomingToken == "" {
		return nil, fmt.Errorf("applink %s: no incomingToken: %s", id, a)
	}
	a, err = do("POST", W+api+"/integration", tn.wikiAdmin, map[string]any{
		"serviceId": id, "applinkId": id, "label": "tracker " + id, "rpcUrl": p.URL(), "displayUrl": p.URL(),
		"version": version, "token": reg.IncomingToken, "sendErrorsToEmail": "ops@example.com",
		"sendErrorsToEmailThrottle": 0})
	if err != nil || a.status != 200 {
		return nil, fmt.Errorf("create integration %s: %v %s", id, err, a)
	}
	var integ struct{ IncomingToken string }
	if err := json.Unmarshal([]byte(a.body), &integ); err != nil || integ.IncomingToken == "" {
		return nil, fmt.Errorf("integration %s: no incomingToken: %s", id, a)
	}
	a, err = do("PUT", T+api+"/api/"+id, tn.trackerAdmin, map[string]any{
		"name": "wiki of " + tn.name, "url": wikiURL, "serviceId": id, "token": integ.IncomingToken})
	if err != nil || a.status != 200 {
		return nil, fmt.Errorf("give applink %s the wiki token: %v %s", id, err, a)
	}
	return &link{id: id, tracker: p, wikiToken: integ.IncomingToken}, nil
}

func mustConnect(t testing.TB, e *env, tn *tenant, id string, version int) *link {
	t.Helper()
	l, err := e.connect(t, tn, id, e.st.WikiURL, version)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// macro is one jira macro: an issue and the serverId naming its tracker.
type macro struct {
	Issue, Server string
}

// row is one requirement row of a page: its issues by relationship column.
type row struct {
	Key         string
	Implements  []macro
	Tests       []macro
	Description string
}

// pageBody renders rows as a requirements table with the columns Key,
// Description, Implements and Tests.
func pageBody(rows []row) string {
	var b strings.Builder
	b.WriteString(`<table><tbody><tr><th>Key</th><th>Description</th><th>Implements</th><th>Tests</th></tr>`)
	for _, r := range rows {
		b.WriteString(`<tr><td><ac:structured-macro ac:name="requirement"><ac:parameter ac:name="key">` + r.Key +
			`</ac:parameter></ac:structured-macro></td><td><p>` + html.EscapeString(r.Description) + `</p></td><td>`)
		for _, m := range r.Implements {
			b.WriteString(jiraMacro(m))
		}
		b.WriteString(`</td><td>`)
		for _, m := range r.Tests {
			b.WriteString(jiraMacro(m))
		}
		b.WriteString(`</td></tr>`)
	}
	b.WriteString(`</tbody></table>`)
	return b.String()
}

func jiraMacro(m macro) string {
	s := `<ac:structured-macro ac:name="jira"><ac:parameter ac:name="key">` + m.Issue + `</ac:parameter>`
	if m.Server != "" {
		s += `<ac:parameter ac:name="serverId">` + m.Server + `</ac:parameter>`
	}
	return s + `</ac:structured-macro>`
}

// savePage PUTs a page; the answer is returned whatever its status.
func (e *env) savePage(tn *tenant, id, space, title string, rows []row) (answer, error) {
	return do("PUT", e.st.WikiURL+api+"/content/"+id, tn.wikiUser, map[string]any{
		"spaceKey": space, "title": title, "body": pageBody(rows)})
}

// saveAnswer is the part of a page save answer the tests read.
type saveAnswer struct {
	Requirements []struct{ Key, Status string }
	Warnings     []struct{ Key, Message string }
}

// wikiIssue is one item of a requirement's issues.
type wikiIssue struct {
	ServiceID    string `json:"serviceId"`
	IssueKey     string `json:"issueKey"`
	Relationship string `json:"relationship"`
	Origin       string `json:"origin"`
}

// wikiRequirement is the part of a wiki requirement the tests read.
type wikiRequirement struct {
	SpaceKey string      `json:"spaceKey"`
	Key      string      `json:"key"`
	Status   string      `json:"status"`
	Issues   []wikiIssue `json:"issues"`
}

// requirement reads a current requirement from the wiki; found is false on 404.
func (e *env) requirement(tn *tenant, space, key string) (r wikiRequirement, found bool, err error) {
	a, err := do("GET", e.st.WikiURL+api+"/requirement2/"+url.PathEscape(space)+"/"+url.PathEscape(key), tn.wikiUser, nil)
	if err != nil {
		return r, false, err
	}
	switch a.status {
	case 404:
		return r, false, nil
	case 200:
		err = json.Unmarshal([]byte(a.body), &r)
		return r, true, err
	}
	return r, false, fmt.Errorf("GET requirement %s/%s: %s", space, key, a)
}

// trackerLink is one item of GET issuelinks/{issue}.
type trackerLink struct {
	IssueKey       string `json:"issueKey"`
	ApplinkID      string `json:"applinkId"`
	SpaceKey       string `json:"spaceKey"`
	Key            string `json:"key"`
	BaselineNumber *int   `json:"baselineNumber"`
	Relationship   string `json:"relationship"`
	Origin         string `json:"origin"`
}

func (e *env) issueLinks(tn *tenant, issue string) ([]trackerLink, error) {
	a, err := do("GET", e.st.TrackerURL+api+"/issuelinks/"+issue, tn.trackUser, nil)
	if err != nil {
		return nil, err
	}
	if a.status != 200 {
		return nil, fmt.Errorf("GET issuelinks/%s: %s", issue, a)
	}
	var out []trackerLink
	return out, json.Unmarshal([]byte(a.body), &out)
}

// linkItem is one item of a POST/PUT/DELETE issuelinks body.
type linkItem struct {
	ApplinkID      string `json:"applinkId"`
	SpaceKey       string `json:"spaceKey"`
	Key            string `json:"key"`
	BaselineNumber *int   `json:"baselineNumber"`
	Relationship   string `json:"relationship"`
}

// held is a link as both sides can be compared on: issue, relationship and
// origin.
type held struct{ Issue, Rel, Origin string }

func (h held) String() string { return h.Issue + " " + h.Rel + " " + h.Origin }

func sortedHelds(m map[held]bool) []string {
	out := make([]string, 0, len(m))
	for h := range m {
		out = append(out, h.String())
	}
	sort.Strings(out)
	return out
}

func wikiSet(r wikiRequirement, serviceID string) map[held]bool {
	out := map[held]bool{}
	for _, i := range r.Issues {
		if i.ServiceID == serviceID {
			out[held{i.IssueKey, i.Relationship, i.Origin}] = true
		}
	}
	return out
}

// messages lists an integration's outbound queue (admin).
type queued struct {
	ID           string `json:"id"`
	State        string `json:"state"`
	Type         string `json:"type"`
	SpaceKey     string `json:"spaceKey"`
	Key          string `json:"key"`
	LastResponse string `json:"lastResponse"`
}

func (e *env) queue(tn *tenant, id string, includeDone bool) ([]queued, error) {
	u := e.st.WikiURL + api + "/integration/" + id + "/queue/outbound?includeLastRespnse=true&limit=1000"
	if includeDone {
		u += "&includeDone=true"
	}
	a, err := do("GET", u, tn.wikiAdmin, nil)
	if err != nil {
		return nil, err
	}
	if a.status != 200 {
		return nil, fmt.Errorf("GET queue of %s: %s", id, a)
	}
	var out []queued
	return out, json.Unmarshal([]byte(a.body), &out)
}

// sync invokes the Sync function once and fails t on an error.
func (e *env) sync(t testing.TB) time.Duration {
	t.Helper()
	begin := time.Now()
	if err := e.invoke(t.Context(), "Sync"); err != nil {
		t.Fatalf("sync run: %v", err)
	}
	return time.Since(begin)
}

// trackerOutbox invokes the tracker's outbox function once.
func (e *env) trackerOutbox(t testing.TB) {
	t.Helper()
	if !e.has("TrackerOutbox") {
		t.Errorf("no TrackerOutbox function in template.yaml: tracker-side retries cannot run")
		return
	}
	if err := e.invoke(t.Context(), "TrackerOutbox"); err != nil {
		t.Fatalf("TrackerOutbox run: %v", err)
	}
}

// setVersion negotiates version v on both sides of l, as the link dialog
// does: tracker first, then the wiki.
func (e *env) setVersion(tn *tenant, id string, v int) error {
	a, err := do("PUT", e.st.TrackerURL+api+"/api/"+id+"/version", tn.trackerAdmin, fmt.Sprint(v))
	if err != nil || a.status != 200 {
		return fmt.Errorf("tracker version %s: %v %s", id, err, a)
	}
	var tv struct{ Version int }
	if err := json.Unmarshal([]byte(a.body), &tv); err != nil || tv.Version != v {
		return fmt.Errorf("tracker version %s: asked %d, answer %s", id, v, a)
	}
	a, err = do("PUT", e.st.WikiURL+api+"/integration/"+id+"/version", tn.wikiAdmin, fmt.Sprint(v))
	if err != nil || a.status != 200 {
		return fmt.Errorf("wiki version %s: %v %s", id, err, a)
	}
	var wv struct{ Version int }
	if err := json.Unmarshal([]byte(a.body), &wv); err != nil || wv.Version != v {
		return fmt.Errorf("wiki version %s: asked %d, answer %s", id, v, a)
	}
	return nil
}

func (e *env) setStatus(tn *tenant, id, status string) error {
	a, err := do("PUT", e.st.WikiURL+api+"/integration/"+id, tn.wikiAdmin, map[string]any{"status": status})
	if err != nil || a.status != 200 {
		return fmt.Errorf("integration %s status %s: %v %s", id, status, err, a)
	}
	return nil
}

func (e *env) setMode(tn *tenant, id, m string) error {
	a, err := do("PUT", e.st.TrackerURL+api+"/api/"+id+"/mode", tn.trackerAdmin, `"`+m+`"`)
	if err != nil || a.status != 200 {
		return fmt.Errorf("applink %s mode %s: %v %s", id, m, err, a)
	}
	return nil
}
