package convergence_test

import (
	"encoding/json"
	"fmt"
	"html"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// Suspect links through the HTTP APIs of the local stack:
// the suspectFields setting, a change in each kind of field (text,
// @Name, status, properties, dependencies) and in one that is not set, a
// chain, the query, a save that changes nothing, delivery to a version-5
// tracker (and none to a version-4 one), and clearing on both sides (on
// the tracker, per issue).

// specRow is a requirement row of the suspect tests' pages: columns Key,
// Description, Priority, Owner, Refines (requirement links) and
// Implements (issues).
type specRow struct {
	Key, Text, Priority, Owner string
	Refines                    []string
	Implements                 []macro
}

func specBody(rows ...specRow) string {
	var b strings.Builder
	b.WriteString(`<table><tbody><tr><th>Key</th><th>Description</th><th>Priority</th><th>Owner</th><th>Refines</th><th>Implements</th></tr>`)
	for _, r := range rows {
		b.WriteString(`<tr><td><ac:structured-macro ac:name="requirement"><ac:parameter ac:name="key">` + r.Key +
			`</ac:parameter></ac:structured-macro></td><td><p>` + html.EscapeString(r.Text) + `</p></td><td>` +
			html.EscapeString(r.Priority) + `</td><td>` + html.EscapeString(r.Owner) + `</td><td>`)
		for _, k := range r.Refines {
			b.WriteString(`<ac:structured-macro ac:name="requirement"><ac:parameter ac:name="key">` + k +
				`</ac:parameter><ac:parameter ac:name="type">LINK</ac:parameter></ac:structured-macro>`)
		}
		b.WriteString(`</td><td>`)
		for _, m := range r.Implements {
			b.WriteString(jiraMacro(m))
		}
		b.WriteString(`</td></tr>`)
	}
	b.WriteString(`</tbody></table>`)
	return b.String()
}

type suspectItem struct {
	SpaceKey, Key, IssueKey string
	Suspect                 *bool
	SuspectSince            string
	SuspectCause            *struct{ Fields []string }
}

type suspectReq struct {
	Key          string
	Dependencies []suspectItem
	Issues       []suspectItem
}

func TestSuspectLinksThroughTheAPIs(t *testing.T) {
	e := startStack(t)
	tn := e.newTenant(t, "suspect")
	W, T := e.st.WikiURL+api, e.st.TrackerURL+api
	want(t, call(t, "PUT", W+"/admin/settings", tn.wikiAdmin, map[string]any{"suspectFields": []string{"@Bogus", "nope"}}), 400, "unknown suspect field")
	a := want(t, call(t, "PUT", W+"/admin/settings", tn.wikiAdmin, map[string]any{"suspectFields": []string{"text", "@Priority", "status"}}), 200, "settings")
	if !strings.Contains(a.body, `"suspectFields":["text","@Priority","status"]`) {
		t.Fatalf("settings answer %s", a)
	}
	mustConnect(t, e, tn, "jira-1", 5)
	mustConnect(t, e, tn, "jira-4", 4)

	// C on page 200 with D (same page) refining it; B on page 100 refines
	// C, A refines B.
	c := specRow{Key: "C", Text: "Store logs.", Priority: "High", Owner: "ann", Implements: []macro{{"PROJ-1", "jira-1"}, {"PROJ-4", "jira-4"}}}
	d := specRow{Key: "D", Text: "Rotate logs.", Refines: []string{"C"}}
	save := func(id string, rows ...specRow) {
		t.Helper()
		want(t, call(t, "PUT", W+"/content/"+id, tn.wikiUser, map[string]any{"spaceKey": "DEMO", "title": "Page " + id, "body": specBody(rows...)}), 200, "save "+id)
	}
	save("200", c, d)
	save("100", specRow{Key: "A", Text: "Audit.", Refines: []string{"B"}}, specRow{Key: "B", Text: "Keep logs.", Refines: []string{"C"}})
	e.sync(t)

	get := func(key string) suspectReq {
		t.Helper()
		var r suspectReq
		if err := json.Unmarshal([]byte(want(t, call(t, "GET", W+"/requirement2/DEMO/"+key, tn.wikiUser, nil), 200, "get "+key).body), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	depMark := func(from, to string) *suspectItem {
		t.Helper()
		for _, it := range get(from).Dependencies {
			if it.Key == to {
				if it.Suspect == nil {
					t.Fatalf("%s → %s has no suspect field", from, to)
				}
				if *it.Suspect {
					return &it
				}
				return nil
			}
		}
		t.Fatalf("%s has no dependency on %s", from, to)
		return nil
	}
	search := func(q string) []string {
		t.Helper()
		var res struct{ Results []struct{ Key string } }
		a := want(t, call(t, "GET", W+"/requirement2/DEMO?q="+url.QueryEscape(q), tn.wikiUser, nil), 200, "search "+q)
		if err := json.Unmarshal([]byte(a.body), &res); err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, r := range res.Results {
			keys = append(keys, r.Key)
		}
		slices.Sort(keys)
		return keys
	}
	trackerMark := func(issue, key string) *trackerSuspect {
		t.Helper()
		var links []trackerSuspect
		if err := json.Unmarshal([]byte(want(t, call(t, "GET", T+"/issuelinks/"+issue, tn.trackUser, nil), 200, "issue links").body), &links); err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if l.Key == key {
				if l.Suspect {
					return &l
				}
				return nil
			}
		}
		t.Fatalf("issue %s has no link to %s", issue, key)
		return nil
	}

	// A field that is not in suspectFields (Owner, a property) marks
	// nothing, and neither does a save that changes nothing.
	c.Owner = "bob"
	save("200", c, d)
	save("200", c, d)
	if got := search("suspect IS TRUE"); len(got) != 0 {
		t.Fatalf("suspect after a change of Owner: %v", got)
	}

	// Each suspect field: text, then @Priority, then status.
	c.Text = "Store logs for a year."
	save("200", c, d)
	m := depMark("B", "C")
	if m == nil || m.SuspectSince == "" || m.SuspectCause == nil || !slices.Equal(m.SuspectCause.Fields, []string{"text"}) {
		t.Fatalf("B → C after C's text changed: %+v", m)
	}
	if depMark("D", "C") == nil {
		t.Fatal("D → C (same page as C) is not suspect")
	}
	if depMark("A", "B") != nil {
		t.Fatal("A → B is suspect: only links to the changed requirement are")
	}
	if got := search("suspect IS TRUE"); !slices.Equal(got, []string{"B", "C", "D"}) {
		t.Fatalf("suspect IS TRUE = %v, want B, C (its issue links), D", got)
	}
	if got := search("suspect IS NOT TRUE"); !slices.Equal(got, []string{"A"}) {
		t.Fatalf("suspect IS NOT TRUE = %v, want A", got)
	}
	if got := search("suspect IS FALSE OR key = 'B'"); !slices.Equal(got, []string{"A", "B"}) {
		t.Fatalf("suspect IS FALSE OR key = 'B' = %v", got)
	}
	// The wiki's outbound queue shows what the version-5 tracker will
	// receive: the UPDATED of the Owner change without suspect, that of the
	// text change with it and its cause.
	var queue []struct {
		Type, Key     string
		ChangedFields []string
		Suspect       *bool
		SuspectCause  *struct{ Fields []string }
	}
	if err := json.Unmarshal([]byte(want(t, call(t, "GET", W+"/integration/jira-1/queue/outbound", tn.wikiAdmin, nil), 200, "queue").body), &queue); err != nil {
		t.Fatal(err)
	}
	var updated []string
	for _, q := range queue {
		if q.Type == "UPDATED" && q.Key == "C" {
			suspect := q.Suspect != nil && *q.Suspect && q.SuspectCause != nil
			updated = append(updated, fmt.Sprintf("%v suspect=%v", q.ChangedFields, suspect))
			if suspect && !slices.Equal(q.SuspectCause.Fields, []string{"text"}) {
				t.Errorf("suspectCause %v", q.SuspectCause.Fields)
			}
		}
	}
	if !slices.Equal(updated, []string{"[properties] suspect=false", "[text] suspect=true"}) {
		t.Fatalf("UPDATED messages of C in jira-1's queue: %v", updated)
	}
	since := m.SuspectSince
	c.Priority = "Low"
	save("200", c, d)
	if m := depMark("B", "C"); m == nil || m.SuspectSince != since || !slices.Equal(m.SuspectCause.Fields, []string{"text", "@Priority"}) {
		t.Fatalf("B → C after C's Priority changed too: %+v (since was %s)", m, since)
	}

	// The version-5 tracker hears it, the version-4 one does not.
	e.sync(t)
	if tm := trackerMark("PROJ-1", "C"); tm == nil || tm.SuspectCause == nil || len(tm.SuspectCause.Fields) == 0 {
		t.Fatalf("PROJ-1 → C on the tracker: %+v", tm)
	}
	if tm := trackerMark("PROJ-4", "C"); tm != nil {
		t.Fatalf("a version-4 tracker got a suspect link: %+v", tm)
	}

	// Clearing: on the wiki by query, on the tracker per issue.
	a = want(t, call(t, "POST", W+"/suspects/DEMO/clear", tn.wikiUser, map[string]any{"q": "key = 'B'"}), 200, "clear B")
	if a.body != `{"cleared":1}` && !strings.Contains(a.body, `"cleared":1`) {
		t.Fatalf("clear B: %s", a)
	}
	if depMark("B", "C") != nil || depMark("D", "C") == nil {
		t.Fatal("clearing B cleared the wrong links")
	}
	if got := search("suspect IS TRUE"); !slices.Equal(got, []string{"C", "D"}) {
		t.Fatalf("after clearing B: suspect IS TRUE = %v", got)
	}
	want(t, call(t, "DELETE", T+"/issuelinks/PROJ-1/suspect", tn.trackUser, nil), 204, "clear PROJ-1")
	if tm := trackerMark("PROJ-1", "C"); tm != nil {
		t.Fatalf("PROJ-1 → C still suspect after clearing: %+v", tm)
	}
	a = want(t, call(t, "POST", W+"/suspects/DEMO/clear", tn.wikiUser, map[string]any{"q": "suspect IS TRUE"}), 200, "clear all")
	if !strings.Contains(a.body, `"cleared":3`) { // D → C, C's two issue links
		t.Fatalf("clear all: %s", a)
	}
	if got := search("suspect IS TRUE"); len(got) != 0 {
		t.Fatalf("after clearing all: %v", got)
	}

	// Status (deleting C from its page) marks D's and B's links again;
	// a reindex marks nothing.
	save("200", d)
	if depMark("B", "C") == nil {
		t.Fatal("B → C is not suspect after C was deleted (status is a suspect field)")
	}
	want(t, call(t, "POST", W+"/suspects/DEMO/clear", tn.wikiUser, map[string]any{"q": ""}), 200, "clear everything")
	want(t, call(t, "POST", W+"/helpers/reindex/100", tn.wikiUser, nil), 200, "reindex")
	if got := search("suspect IS TRUE"); len(got) != 0 {
		t.Fatalf("after a reindex: %v", got)
	}

	// properties, then dependencies, each alone in the setting (a change
	// of issue links or of the text then marks nothing); the tracker's
	// clear is per issue: A's other issue stays suspect.
	setFields := func(f ...string) {
		t.Helper()
		want(t, call(t, "PUT", W+"/admin/settings", tn.wikiAdmin, map[string]any{"suspectFields": f}), 200, "settings")
	}
	cause := func(from, to string, fields ...string) {
		t.Helper()
		if m := depMark(from, to); m == nil || m.SuspectSince == "" || m.SuspectCause == nil || !slices.Equal(m.SuspectCause.Fields, fields) {
			t.Fatalf("%s → %s: %+v, want suspect because of %v", from, to, m, fields)
		}
	}
	setFields("properties")
	pa := specRow{Key: "A", Text: "Audit.", Refines: []string{"B"}, Implements: []macro{{"PROJ-7", "jira-1"}, {"PROJ-8", "jira-1"}}}
	pb := specRow{Key: "B", Text: "Keep logs.", Refines: []string{"C"}}
	save("100", pa, pb)
	if got := search("suspect IS TRUE"); len(got) != 0 {
		t.Fatalf("issue links added (not in suspectFields [properties]): suspect %v", got)
	}
	e.sync(t)
	pa.Owner, pb.Owner = "carol", "carol"
	save("100", pa, pb)
	cause("A", "B", "properties")
	e.sync(t)
	for _, issue := range []string{"PROJ-7", "PROJ-8"} {
		if tm := trackerMark(issue, "A"); tm == nil || tm.SuspectSince == "" || tm.SuspectCause == nil || !slices.Equal(tm.SuspectCause.Fields, []string{"properties"}) {
			t.Fatalf("%s → A on the tracker after A's Owner changed: %+v", issue, tm)
		}
	}
	want(t, call(t, "DELETE", T+"/issuelinks/PROJ-7/suspect", tn.trackUser, nil), 204, "clear PROJ-7")
	if trackerMark("PROJ-7", "A") != nil || trackerMark("PROJ-8", "A") == nil {
		t.Fatal("clearing PROJ-7 on the tracker: PROJ-7 → A should be cleared, PROJ-8 → A still suspect")
	}
	want(t, call(t, "POST", W+"/suspects/DEMO/clear", tn.wikiUser, map[string]any{"q": ""}), 200, "clear everything")
	setFields("dependencies")
	pb.Text = "Keep logs longer."
	save("100", pa, pb)
	if got := search("suspect IS TRUE"); len(got) != 0 {
		t.Fatalf("B's text changed (not in suspectFields [dependencies]): suspect %v", got)
	}
	pb.Refines = []string{"D"}
	save("100", pa, pb)
	cause("A", "B", "dependencies")

	// Another tenant sees none of it, and may not clear this one's.
	other := e.newTenant(t, "other")
	a = want(t, call(t, "POST", W+"/suspects/DEMO/clear", other.wikiUser, map[string]any{"q": ""}), 200, "other tenant")
	if !strings.Contains(a.body, `"cleared":0`) {
		t.Fatalf("other tenant cleared %s", a)
	}
}

type trackerSuspect struct {
	Key          string
	Suspect      bool
	SuspectSince string
	SuspectCause *struct{ Fields []string }
}
