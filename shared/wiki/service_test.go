package wiki_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

const tenant = "demo"

func newService(t *testing.T) (*wiki.Service, *wt.Mem) {
	t.Helper()
	mem := wt.NewMem()
	svc := wiki.New(wiki.Deps{Store: mem})
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	svc.Now = func() time.Time { now = now.Add(time.Second); return now }
	return svc, mem
}

// specs is a requirements table: key, description, priority, implements.
func specs(rows ...string) string {
	return wt.Table(append([]string{wt.TH("Key", "Description", "Priority", "Implements")}, rows...)...)
}

func req(key, text, prio string, extra ...string) string {
	return wt.TR(wt.Def(key), "<p>"+text+"</p>", prio, strings.Join(extra, " "))
}

func save(t *testing.T, svc *wiki.Service, id, space, body string) *wiki.Result {
	t.Helper()
	res, err := svc.SavePage(context.Background(), tenant, "alice", wiki.PageInput{ID: id, SpaceKey: space, Title: "Page " + id, Body: body})
	if err != nil {
		t.Fatalf("save page %s: %v", id, err)
	}
	return res
}

func mustRow(t *testing.T, mem *wt.Mem, space, key string) *requirement.Requirement {
	t.Helper()
	r := mem.Row(tenant, space, key)
	if r == nil {
		t.Fatalf("no row %s/%s", space, key)
	}
	return r
}

func statuses(res *wiki.Result) []string {
	var out []string
	for _, s := range res.Requirements {
		out = append(out, s.SpaceKey+"/"+s.Key+"="+string(s.Status))
	}
	return out
}

func lastCommit(t *testing.T, mem *wt.Mem) *wiki.Change {
	t.Helper()
	if len(mem.Commits) == 0 {
		t.Fatal("no commit")
	}
	return mem.Commits[len(mem.Commits)-1]
}

func TestSaveNewPage(t *testing.T) {
	svc, mem := newService(t)
	res := save(t, svc, "100", "DEMO", specs(
		req("REQ-1", "Log in "+wt.Link("", "REQ-2"), "High", wt.Jira("PROJ-1", "jira-1")),
		req("REQ-2", "Log out", "Low"),
	)+"<p>"+wt.Def("P-1")+" Paragraph requirement</p>")
	if got := statuses(res); !slices.Equal(got, []string{"DEMO/REQ-1=ACTIVE", "DEMO/REQ-2=ACTIVE", "DEMO/P-1=ACTIVE"}) {
		t.Fatalf("statuses %v", got)
	}
	if res.Page.Version != 1 || !slices.Equal(res.Page.Keys, []string{"REQ-1", "REQ-2", "P-1"}) {
		t.Fatalf("page %+v", res.Page)
	}
	r1 := mustRow(t, mem, "DEMO", "REQ-1")
	if r1.Status != requirement.Active || r1.Text != "Log in REQ-2" || r1.Origin != (requirement.PageRef{PageID: "100", Title: "Page 100"}) ||
		!slices.Equal(r1.Properties, []requirement.Property{{Key: "Priority", Value: "High"}}) ||
		!slices.Equal(r1.Dependencies, []requirement.Dependency{{SpaceKey: "DEMO", Key: "REQ-2", Relationship: "dependency"}}) ||
		!slices.Equal(r1.Issues, []requirement.IssueLink{{ServiceID: "jira-1", IssueKey: "PROJ-1", Relationship: "implements", Page: true}}) ||
		r1.LinksVersion != 1 {
		t.Fatalf("REQ-1 %+v", r1)
	}
	r2 := mustRow(t, mem, "DEMO", "REQ-2")
	if !slices.Equal(r2.ReverseDependencies, []requirement.Dependency{{SpaceKey: "DEMO", Key: "REQ-1", Relationship: "dependency"}}) {
		t.Fatalf("REQ-2 rdeps %+v", r2.ReverseDependencies)
	}
	if c := lastCommit(t, mem); len(c.RDeps) != 0 || len(c.Writes) != 3 || c.RegisterSpace != "DEMO" || c.ExpectVersion != 0 {
		t.Fatalf("change %+v", c)
	}
	if got := mem.Spaces(tenant); !slices.Equal(got, []string{"DEMO"}) {
		t.Fatalf("spaces %v", got)
	}
	if mem.Calls["Integrations"] != 1 {
		t.Fatalf("integrations listed %d times", mem.Calls["Integrations"])
	}
}

func TestSaveWritesOnlyChangedRows(t *testing.T) {
	svc, mem := newService(t)
	body := specs(req("REQ-1", "One", "High"), req("REQ-2", "Two", "Low"))
	save(t, svc, "100", "DEMO", body)

	res := save(t, svc, "100", "DEMO", body)
	c := lastCommit(t, mem)
	if res.Page.Version != 2 || c.ExpectVersion != 1 || len(c.Writes) != 0 || len(c.RDeps) != 0 || c.RegisterSpace != "" {
		t.Fatalf("unchanged save: version %d change %+v", res.Page.Version, c)
	}
	if mem.Calls["Integrations"] != 0 {
		t.Fatal("integrations listed although no row changed")
	}

	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High"), req("REQ-2", "Two changed", "Low")))
	c = lastCommit(t, mem)
	if len(c.Writes) != 1 || c.Writes[0].New.Key != "REQ-2" || c.Writes[0].Old.Text != "Two" {
		t.Fatalf("writes %+v", c.Writes)
	}
}

func TestSaveLifeCycle(t *testing.T) {
	svc, mem := newService(t)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High"), req("REQ-2", "Two", "Low")))

	// ACTIVE -> DELETED: the page no longer defines REQ-2; its text stays.
	res := save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High")))
	if got := statuses(res); !slices.Equal(got, []string{"DEMO/REQ-1=ACTIVE", "DEMO/REQ-2=DELETED"}) {
		t.Fatalf("statuses %v", got)
	}
	if r := mustRow(t, mem, "DEMO", "REQ-2"); r.Status != requirement.Deleted || r.Text != "Two" || r.Origin.PageID != "100" {
		t.Fatalf("REQ-2 %+v", r)
	}
	if !slices.Equal(res.Page.Keys, []string{"REQ-1"}) {
		t.Fatalf("keys %v", res.Page.Keys)
	}
	// A second save does not list or write it again.
	res = save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High")))
	if got := statuses(res); !slices.Equal(got, []string{"DEMO/REQ-1=ACTIVE"}) || len(lastCommit(t, mem).Writes) != 0 {
		t.Fatalf("statuses %v writes %d", got, len(lastCommit(t, mem).Writes))
	}

	// DELETED -> ACTIVE: another page defines it now.
	save(t, svc, "200", "DEMO", specs(req("req-2", "Two again", "Low")))
	if r := mustRow(t, mem, "DEMO", "REQ-2"); r.Status != requirement.Active || r.Origin.PageID != "200" || r.Text != "Two again" {
		t.Fatalf("REQ-2 %+v", r)
	}

	// Page delete -> DELETED.
	if err := svc.DeletePage(context.Background(), tenant, "alice", "200"); err != nil {
		t.Fatal(err)
	}
	if r := mustRow(t, mem, "DEMO", "REQ-2"); r.Status != requirement.Deleted {
		t.Fatalf("REQ-2 %+v", r)
	}
	if _, err := svc.Page(context.Background(), tenant, "200"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("deleted page: %v", err)
	}
	if err := svc.DeletePage(context.Background(), tenant, "alice", "200"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestSaveMovesPage(t *testing.T) {
	svc, mem := newService(t)
	mem.AddIntegration(tenant, "jira-1")
	save(t, svc, "100", "DEMO", specs(
		req("REQ-1", "One", "High", wt.Jira("PROJ-1", "jira-1")),
		req("REQ-2", "Two", "Low"),
	))
	before := len(mem.Outbox)

	res := save(t, svc, "100", "OTHER", specs(
		req("REQ-1", "One", "High", wt.Jira("PROJ-1", "jira-1"), wt.Jira("PROJ-2", "jira-1")),
		req("REQ-3", "Three", "Low"),
	))
	want := []string{"OTHER/REQ-1=ACTIVE", "OTHER/REQ-3=ACTIVE", "DEMO/REQ-1=MOVED", "DEMO/REQ-2=DELETED"}
	if got := statuses(res); !slices.Equal(got, want) {
		t.Fatalf("statuses %v, want %v", got, want)
	}
	old := mustRow(t, mem, "DEMO", "REQ-1")
	if old.Status != requirement.Moved || old.NewSpaceKey != "OTHER" || old.NewKey != "REQ-1" || old.Text != "One" {
		t.Fatalf("old row %+v", old)
	}
	if r := mustRow(t, mem, "OTHER", "REQ-1"); r.Status != requirement.Active || r.Origin.PageID != "100" {
		t.Fatalf("new row %+v", r)
	}
	if got := mem.Spaces(tenant); !slices.Equal(got, []string{"DEMO", "OTHER"}) {
		t.Fatalf("spaces %v", got)
	}
	// One MOVED message, and a LINK only for the link that is new: PROJ-1
	// is carried over by the move.
	var got []string
	for _, m := range mem.Outbox[before:] {
		got = append(got, string(m.Type)+" "+m.SpaceKey+"/"+m.Key+" "+m.ObjectKey+" "+m.NewSpaceKey+"/"+m.NewKey+" "+m.NewURL)
	}
	want = []string{"MOVED DEMO/REQ-1  OTHER/REQ-1 /requirements/OTHER/REQ-1", "LINK OTHER/REQ-1 PROJ-2 / /requirements/OTHER/REQ-1"}
	if !slices.Equal(got, want) {
		t.Fatalf("messages\n%v\nwant\n%v", got, want)
	}
}

func TestDuplicatesAcrossPages(t *testing.T) {
	svc, mem := newService(t)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High")))
	res := save(t, svc, "200", "DEMO", specs(req("REQ-1", "Other one", "Low"), req("REQ-9", "Nine", "Low"), req("REQ-9", "Nine again", "")))
	if !slices.Equal(res.Duplicates, []string{"REQ-9", "REQ-1"}) || !slices.Equal(res.Page.Keys, []string{"REQ-9"}) {
		t.Fatalf("duplicates %v keys %v", res.Duplicates, res.Page.Keys)
	}
	if r := mustRow(t, mem, "DEMO", "REQ-1"); r.Origin.PageID != "100" || r.Text != "One" {
		t.Fatalf("REQ-1 taken over: %+v", r)
	}
	// Once page 100 drops it, the next save of page 200 takes it.
	save(t, svc, "100", "DEMO", "<p>nothing</p>")
	save(t, svc, "200", "DEMO", specs(req("REQ-1", "Other one", "Low")))
	if r := mustRow(t, mem, "DEMO", "REQ-1"); r.Status != requirement.Active || r.Origin.PageID != "200" {
		t.Fatalf("REQ-1 %+v", r)
	}
}

func TestReverseDependencies(t *testing.T) {
	svc, mem := newService(t)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High")))
	// Page 200 references REQ-1 (another page) and X-1 (defined nowhere).
	save(t, svc, "200", "DEMO", specs(req("REQ-5", "Five "+wt.Link("", "REQ-1")+" "+wt.Link("OTHER", "X-1"), "")))
	c := lastCommit(t, mem)
	if len(c.RDeps) != 2 {
		t.Fatalf("rdep edits %+v", c.RDeps)
	}
	ref := requirement.Dependency{SpaceKey: "DEMO", Key: "REQ-5", Relationship: "dependency"}
	if r := mustRow(t, mem, "DEMO", "REQ-1"); !slices.Equal(r.ReverseDependencies, []requirement.Dependency{ref}) {
		t.Fatalf("REQ-1 rdeps %+v", r.ReverseDependencies)
	}
	if r := mustRow(t, mem, "OTHER", "X-1"); r.Status != "" || !slices.Equal(r.ReverseDependencies, []requirement.Dependency{ref}) {
		t.Fatalf("stub %+v", r)
	}
	if _, err := svc.Requirement(context.Background(), tenant, "OTHER", "X-1", 0); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("stub readable: %v", err)
	}
	// Saving page 100 again keeps the reverse dependency other pages made.
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One changed", "High")))
	if r := mustRow(t, mem, "DEMO", "REQ-1"); !slices.Equal(r.ReverseDependencies, []requirement.Dependency{ref}) {
		t.Fatalf("REQ-1 rdeps lost: %+v", r.ReverseDependencies)
	}
	// X-1 defined later starts with its reverse dependencies.
	save(t, svc, "300", "OTHER", specs(req("X-1", "Ex", "")))
	if r := mustRow(t, mem, "OTHER", "X-1"); r.Status != requirement.Active || !slices.Equal(r.ReverseDependencies, []requirement.Dependency{ref}) {
		t.Fatalf("X-1 %+v", r)
	}
	refs, err := svc.References(context.Background(), tenant, mustRow(t, mem, "OTHER", "X-1"))
	if err != nil || !slices.Equal(refs, []requirement.PageRef{{PageID: "200", Title: "Page 200"}}) {
		t.Fatalf("references %v %v", refs, err)
	}
	// Changing the relationship removes one member and adds another.
	save(t, svc, "200", "DEMO", wt.Table(wt.TH("Key", "Description", "Refines"), wt.TR(wt.Def("REQ-5"), "Five", wt.Link("", "REQ-1"))))
	want := []requirement.Dependency{{SpaceKey: "DEMO", Key: "REQ-5", Relationship: "refines"}}
	if r := mustRow(t, mem, "DEMO", "REQ-1"); !slices.Equal(r.ReverseDependencies, want) {
		t.Fatalf("REQ-1 rdeps %+v", r.ReverseDependencies)
	}
	if r := mustRow(t, mem, "OTHER", "X-1"); len(r.ReverseDependencies) != 0 {
		t.Fatalf("X-1 rdeps %+v", r.ReverseDependencies)
	}
	// A deleted requirement references nothing.
	if err := svc.DeletePage(context.Background(), tenant, "alice", "200"); err != nil {
		t.Fatal(err)
	}
	if r := mustRow(t, mem, "DEMO", "REQ-1"); len(r.ReverseDependencies) != 0 {
		t.Fatalf("REQ-1 rdeps after delete %+v", r.ReverseDependencies)
	}
}

func TestOutboxMessages(t *testing.T) {
	svc, mem := newService(t)
	mem.AddIntegration(tenant, "jira-1")
	mem.AddIntegration(tenant, "jira-2")
	kinds := func(from int) []string {
		var out []string
		for _, m := range mem.Outbox[from:] {
			out = append(out, string(m.Type)+" "+m.ServiceID+" "+m.Key+" "+m.ObjectKey+" "+m.Relationship)
			if m.State != outbox.New || m.Enqueued || m.ID == "" || m.CreatedAt.IsZero() || m.AuthorKey != "alice" {
				t.Errorf("message %+v", m)
			}
		}
		return out
	}
	body := specs(
		req("REQ-1", "One", "High", wt.Jira("PROJ-1", "jira-1")),
		req("REQ-2", "Two", "Low", wt.Jira("PROJ-2", "")),
		req("REQ-3", "Three", "Low", wt.Jira("PROJ-3", "unknown")),
		req("REQ-4", "Four", "Low"),
	)
	save(t, svc, "100", "DEMO", body)
	want := []string{"LINK jira-1 REQ-1 PROJ-1 implements", "LINK jira-1 REQ-2 PROJ-2 implements", "LINK jira-2 REQ-2 PROJ-2 implements"}
	if got := kinds(0); !slices.Equal(got, want) {
		t.Fatalf("first save\n%v\nwant\n%v", got, want)
	}
	if m := mem.Outbox[0]; m.NewHTMLExcerpt != "<p>One</p>" || m.NewURL != "/requirements/DEMO/REQ-1" || m.SpaceKey != "DEMO" {
		t.Fatalf("LINK message %+v", m)
	}
	// The same page again: nothing new to tell.
	n := len(mem.Outbox)
	save(t, svc, "100", "DEMO", body)
	if got := kinds(n); len(got) != 0 {
		t.Fatalf("second save wrote %v", got)
	}
	// Excerpt changes and a removed requirement.
	save(t, svc, "100", "DEMO", specs(
		req("REQ-1", "One changed", "High", wt.Jira("PROJ-1", "jira-1")),
		req("REQ-3", "Three changed", "Low", wt.Jira("PROJ-3", "unknown")),
		req("REQ-4", "Four changed", "Low"),
	))
	want = []string{"DELETED jira-1 REQ-2  ", "DELETED jira-2 REQ-2  ", "UPDATED jira-1 REQ-1  "}
	if got := kinds(n); !slices.Equal(got, want) {
		t.Fatalf("third save\n%v\nwant\n%v", got, want)
	}
	if m := mem.Outbox[n+2]; m.NewHTMLExcerpt != "<p>One changed</p>" {
		t.Fatalf("UPDATED %+v", m)
	}
	// Each message sits in the write of its requirement.
	for _, w := range lastCommit(t, mem).Writes {
		for _, m := range w.Messages {
			if m.Key != w.New.Key {
				t.Fatalf("message of %s in the write of %s", m.Key, w.New.Key)
			}
		}
	}
}

func TestTrackerLinksSurviveSaves(t *testing.T) {
	svc, mem := newService(t)
	mem.AddIntegration(tenant, "jira-1")
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High", wt.Jira("PROJ-1", "jira-1"), wt.Jira("PROJ-2", ""))))
	// The tracker's links callback added PROJ-7 (the tracker's hold).
	r := mustRow(t, mem, "DEMO", "REQ-1")
	r.Issues = append(r.Issues, requirement.IssueLink{ServiceID: "jira-1", IssueKey: "PROJ-7", Relationship: "implements", Tracker: true})
	mem.PutRow(tenant, r)
	sent := len(mem.Outbox)

	// The page drops both macros: the page's links go (the page is their
	// master), the tracker's link stays (the tracker is its master).
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High")))
	tracked := requirement.IssueLink{ServiceID: "jira-1", IssueKey: "PROJ-7", Relationship: "implements", Tracker: true}
	if got := mustRow(t, mem, "DEMO", "REQ-1").Issues; !slices.Equal(got, []requirement.IssueLink{tracked}) {
		t.Fatalf("issues %+v", got)
	}
	// A version-4 integration cannot hear of the removals: they are counted.
	if got := mem.Removals[tenant]["jira-1"]; got != 2 {
		t.Fatalf("pending removals %d, want 2", got)
	}
	// Showing PROJ-7 on the page too is not news to a version-4 tracker;
	// the link is now held by both.
	sent = len(mem.Outbox)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High", wt.Jira("PROJ-7", "jira-1"))))
	if len(mem.Outbox) != sent {
		t.Fatalf("messages %+v", mem.Outbox[sent:])
	}
	both := tracked
	both.Page = true
	if got := mustRow(t, mem, "DEMO", "REQ-1").Issues; !slices.Equal(got, []requirement.IssueLink{both}) {
		t.Fatalf("issues %+v", got)
	}
	// A move carries the tracker's hold to the new row; the page's goes
	// with the macro.
	save(t, svc, "100", "NEW", specs(req("REQ-1", "One", "High")))
	if got := mustRow(t, mem, "NEW", "REQ-1").Issues; !slices.Equal(got, []requirement.IssueLink{tracked}) {
		t.Fatalf("moved issues %+v", got)
	}
}

// TestLinksMessagesAtVersion5 checks the messages of a version-5
// integration: LINKS with the whole set of the page's links whenever it
// changes (removals included), with a version that grows, never for
// tracker-held links, and UPDATED naming the changed fields.
func TestLinksMessagesAtVersion5(t *testing.T) {
	svc, mem := newService(t)
	mem.AddIntegrationAt(tenant, "jira-1", 5)
	mem.AddIntegration(tenant, "jira-4") // version 4: LINK messages, as before
	msgs := func(from int) []string {
		var out []string
		for _, m := range mem.Outbox[from:] {
			s := string(m.Type) + " " + m.ServiceID + " " + m.Key
			switch m.Type {
			case outbox.Links:
				var links []string
				for _, l := range m.Links {
					links = append(links, l.IssueKey+":"+l.Relationship)
				}
				s += fmt.Sprintf(" v%d [%s] %s/%s", m.LinksVersion, strings.Join(links, " "), m.OriginPageID, m.OriginTitle)
			case outbox.Link:
				s += " " + m.ObjectKey
			case outbox.Updated:
				s += " " + strings.Join(m.ChangedFields, ",")
			}
			out = append(out, s)
		}
		return out
	}
	check := func(from int, want ...string) {
		t.Helper()
		if got := msgs(from); !slices.Equal(got, want) {
			t.Fatalf("messages\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	}
	save(t, svc, "100", "DEMO", specs(
		req("REQ-1", "One", "High", wt.Jira("PROJ-1", "jira-1")+wt.Jira("PROJ-2", "")),
		req("REQ-2", "Two", "Low"),
	))
	check(0,
		"LINKS jira-1 REQ-1 v1 [PROJ-1:implements PROJ-2:implements] 100/Page 100",
		"LINK jira-4 REQ-1 PROJ-2")
	// The tracker holds PROJ-9 (callback); the page drops PROJ-1.
	r := mustRow(t, mem, "DEMO", "REQ-1")
	r.Issues = append(r.Issues, requirement.IssueLink{ServiceID: "jira-1", IssueKey: "PROJ-9", Relationship: "tests", Tracker: true})
	mem.PutRow(tenant, r)
	n := len(mem.Outbox)
	save(t, svc, "100", "DEMO", specs(
		req("REQ-1", "One", "High", wt.Jira("PROJ-2", "")),
		req("REQ-2", "Two", "Low"),
	))
	check(n, "LINKS jira-1 REQ-1 v2 [PROJ-2:implements] 100/Page 100")
	if got := mem.Removals[tenant]; got["jira-1"] != 0 || got["jira-4"] != 0 {
		t.Fatalf("pending removals %v: jira-1 heard of it, jira-4 never had PROJ-1", got)
	}
	// Same links, other text and properties: UPDATED only, with its fields.
	n = len(mem.Outbox)
	save(t, svc, "100", "DEMO", specs(
		req("REQ-1", "One changed", "Low", wt.Jira("PROJ-2", "")),
		req("REQ-2", "Two", "Low"),
	))
	check(n, "UPDATED jira-1 REQ-1 text,properties", "UPDATED jira-4 REQ-1 ")
	if v := mustRow(t, mem, "DEMO", "REQ-1").LinksVersion; v != 2 {
		t.Fatalf("links version %d after a save that kept the links", v)
	}
	// Every link gone: an empty LINKS (the tracker must drop its PAGE
	// links), and none for the tracker's own PROJ-9, which stays.
	n = len(mem.Outbox)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One changed", "Low"), req("REQ-2", "Two", "Low")))
	check(n, "LINKS jira-1 REQ-1 v3 [] 100/Page 100")
	if got := mustRow(t, mem, "DEMO", "REQ-1").Issues; len(got) != 1 || got[0].IssueKey != "PROJ-9" || !got[0].Tracker || got[0].Page {
		t.Fatalf("issues %+v", got)
	}
	if got := mem.Removals[tenant]["jira-4"]; got != 1 {
		t.Fatalf("jira-4 pending removals %d, want 1 (PROJ-2)", got)
	}
}

func TestSaveWarnsOfUnknownIntegrations(t *testing.T) {
	svc, mem := newService(t)
	res := save(t, svc, "100", "DEMO", specs(
		req("REQ-1", "One", "High", wt.Jira("PROJ-1", "jira-9")),
		req("REQ-2", "Two", "Low", wt.Jira("PROJ-2", "")),
	))
	want := []wiki.Warning{
		{Key: "REQ-1", Message: "no integration 'jira-9' for issue PROJ-1"},
		{Key: "REQ-2", Message: "no integration for issue PROJ-2: the wiki has none yet"},
	}
	if !slices.Equal(res.Warnings, want) {
		t.Fatalf("warnings %+v", res.Warnings)
	}
	// The links are the page's all the same: they reach the integration
	// once it exists (reconcile), without the page being saved again.
	if got := mustRow(t, mem, "DEMO", "REQ-1").Issues; len(got) != 1 || !got[0].Page {
		t.Fatalf("issues %+v", got)
	}
	mem.AddIntegration(tenant, "jira-9")
	res = save(t, svc, "100", "DEMO", specs(
		req("REQ-1", "One", "High", wt.Jira("PROJ-1", "jira-9")),
		req("REQ-2", "Two", "Low", wt.Jira("PROJ-2", "")),
	))
	if len(res.Warnings) != 0 {
		t.Fatalf("warnings %+v once jira-9 exists", res.Warnings)
	}
}

func TestNoIntegrationNoMessage(t *testing.T) {
	svc, mem := newService(t)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High", wt.Jira("PROJ-1", ""))))
	if len(mem.Outbox) != 0 {
		t.Fatalf("messages %+v", mem.Outbox)
	}
}

func TestSaveRejectsBadInput(t *testing.T) {
	svc, mem := newService(t)
	long := strings.Repeat("t", wiki.MaxTitle+1)
	cases := []struct {
		name string
		in   wiki.PageInput
		msg  string
	}{
		{"bad id", wiki.PageInput{ID: "1/2", SpaceKey: "DEMO", Title: "x"}, "invalid contentId"},
		{"long id", wiki.PageInput{ID: strings.Repeat("1", 65), SpaceKey: "DEMO", Title: "x"}, "invalid contentId"},
		{"no space", wiki.PageInput{ID: "1", Title: "x"}, "spaceKey is required"},
		{"bad space", wiki.PageInput{ID: "1", SpaceKey: "DE MO", Title: "x"}, "invalid spaceKey"},
		{"blank title", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: "  "}, "title is required"},
		{"long title", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: long}, "at most 255"},
		{"bad parent", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: "x", ParentID: "a-b"}, "invalid parentId"},
		{"own parent", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: "x", ParentID: "1"}, "parentId"},
		{"title with NUL", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: "x\x00y"}, "title: must not contain control characters"},
		{"title with LF", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: "x\ny"}, "title: must not contain control characters"},
		{"title with DEL", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: "x\x7f"}, "title: must not contain control characters"},
		{"body with NUL", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: "x", Body: "<p>a\x00b</p>"}, "body: must not contain control characters"},
		{"body with ESC", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: "x", Body: "<p>a\x1bb</p>"}, "body: must not contain control characters"},
		{"malformed", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: "x", Body: "<p><b>x</p>"}, ""},
		{"bad key", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: "x", Body: "<p>" + wt.Def("bad key") + " x</p>"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := svc.SavePage(context.Background(), tenant, "alice", c.in)
			e := apperr.As(err)
			if e == nil || e.Code != apperr.Invalid || !strings.Contains(e.Message, c.msg) {
				t.Fatalf("got %v, want invalid containing %q", err, c.msg)
			}
		})
	}
	if len(mem.Commits) != 0 || mem.Calls["Page"] != 0 {
		t.Fatalf("bad input reached the store: %v", mem.Calls)
	}
}

func TestSaveConflict(t *testing.T) {
	svc, mem := newService(t)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High")))
	mem.Fail = func(*wiki.Change) error { return apperr.Conflictf("page 100 changed concurrently") }
	_, err := svc.SavePage(context.Background(), tenant, "alice", wiki.PageInput{ID: "100", SpaceKey: "DEMO", Title: "x"})
	if !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("got %v", err)
	}
}

func TestTenantIsolation(t *testing.T) {
	svc, _ := newService(t)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High")))
	ctx := context.Background()
	if _, err := svc.Page(ctx, "acme", "100"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("page: %v", err)
	}
	if _, err := svc.Requirement(ctx, "acme", "DEMO", "REQ-1", 0); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("requirement: %v", err)
	}
	if _, err := svc.ViewPage(ctx, "acme", "bob", "DEMO", "100"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("view: %v", err)
	}
}

// publisher is a fake wiki.Publisher.
type publisher struct {
	publish func(tenant string, msgs []*outbox.Message) error
}

func (p publisher) Publish(_ context.Context, tenant string, msgs []*outbox.Message) error {
	return p.publish(tenant, msgs)
}

func TestPublishAfterCommit(t *testing.T) {
	svc, mem := newService(t)
	mem.AddIntegration(tenant, "jira-1")
	var got []string
	fail := false
	svc.Publisher = publisher{publish: func(tn string, msgs []*outbox.Message) error {
		if len(mem.Outbox) == 0 {
			t.Error("published before the commit")
		}
		for _, m := range msgs {
			got = append(got, tn+" "+string(m.Type)+" "+m.Key)
		}
		if fail {
			return errors.New("sqs down")
		}
		return nil
	}}
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High", wt.Jira("PROJ-1", "jira-1")), req("REQ-2", "Two", "")))
	if !slices.Equal(got, []string{"demo LINK REQ-1"}) {
		t.Fatalf("published %v", got)
	}
	// No message, no publish; a failed publish does not fail the save.
	got, fail = nil, true
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High", wt.Jira("PROJ-1", "jira-1"))))
	if len(got) != 0 {
		t.Fatalf("published %v", got)
	}
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One changed", "High", wt.Jira("PROJ-1", "jira-1"))))
	if !slices.Equal(got, []string{"demo UPDATED REQ-1"}) {
		t.Fatalf("published %v", got)
	}
	// A failed commit publishes nothing.
	got = nil
	mem.Fail = func(*wiki.Change) error { return apperr.Conflictf("page 100 changed concurrently") }
	if _, err := svc.SavePage(context.Background(), tenant, "alice", wiki.PageInput{ID: "100", SpaceKey: "DEMO", Title: "x"}); err == nil || len(got) != 0 {
		t.Fatalf("err %v published %v", err, got)
	}
}

// An unknown page is a not-found whose whole text (what the log prints)
// names the page once, whatever the store's own message.
func TestUnknownPageNamedOnce(t *testing.T) {
	t.Parallel()
	svc, _ := newService(t)
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"page":   func() error { _, err := svc.Page(ctx, tenant, "400"); return err },
		"delete": func() error { return svc.DeletePage(ctx, tenant, "alice", "400") },
		"reindex": func() error {
			_, err := svc.Reindex(ctx, tenant, "alice", "400")
			return err
		},
	} {
		err := call()
		if !errors.Is(err, apperr.ErrNotFound) || err.Error() != "page 400 not found" {
			t.Errorf("%s: %v, want exactly \"page 400 not found\"", name, err)
		}
	}
}

// A commit that fails after recording what it may write hands it to the
// next operation on the page, which reconciles it: a row of the page its
// body does not define becomes DELETED (Lease.Leftover), and a reverse
// dependency no row of the page justifies is removed (LeftoverEdges),
// whether the next operation is a save, a reindex or a delete.
func TestLeftoverOfAFailedCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, next := range []string{"save", "reindex", "delete"} {
		t.Run(next, func(t *testing.T) {
			t.Parallel()
			svc, mem := newService(t)
			save(t, svc, "2", "DEMO", specs(req("X", "x", "")))
			save(t, svc, "1", "DEMO", specs(req("A", "a", "High"), req("B", "b", "High")))
			mem.Fail = func(*wiki.Change) error { return errors.New("injected") }
			if _, err := svc.SavePage(ctx, tenant, "alice", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: "Page 1",
				Body: specs(req("A", "a", "High"), req("B", "b", "High"), req("C", "c "+wt.Link("", "X"), "High"))}); err == nil {
				t.Fatal("the failing save succeeded")
			}
			if got := len(mem.Commits); got != 2 {
				t.Fatalf("%d commits applied, want the first two saves' only", got)
			}
			mem.Fail = nil
			// What the failed commit wrote before failing: its additions
			// (X referenced by C), not C's row.
			x := mem.Row(tenant, "DEMO", "X")
			x.ReverseDependencies = []requirement.Dependency{{SpaceKey: "DEMO", Key: "C", Relationship: "dependency"}}
			mem.PutRow(tenant, x)
			switch next {
			case "save":
				save(t, svc, "1", "DEMO", specs(req("A", "a", "High"), req("B", "b", "Low")))
			case "reindex":
				if _, err := svc.Reindex(ctx, tenant, "alice", "1"); err != nil {
					t.Fatal(err)
				}
			case "delete":
				if err := svc.DeletePage(ctx, tenant, "alice", "1"); err != nil {
					t.Fatal(err)
				}
			}
			if r := mem.Row(tenant, "DEMO", "X"); len(r.ReverseDependencies) != 0 {
				t.Fatalf("after a %s, X is still referenced by %v", next, r.ReverseDependencies)
			}
			// Reconciled: the next lease has no leftover.
			l, err := mem.LeasePage(ctx, tenant, "1", pageVersion(t, svc, next))
			if err != nil {
				t.Fatal(err)
			}
			if len(l.Leftover) != 0 || len(l.LeftoverEdges) != 0 {
				t.Errorf("leftover after a %s: %v, %v", next, l.Leftover, l.LeftoverEdges)
			}
		})
	}
}

// pageVersion is page 1's version, 0 once deleted.
func pageVersion(t *testing.T, svc *wiki.Service, op string) int {
	t.Helper()
	pg, err := svc.Page(context.Background(), tenant, "1")
	if op == "delete" {
		if err == nil {
			t.Fatal("page 1 still exists")
		}
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return pg.Version
}

// A row the failed commit wrote, which no key list names, becomes DELETED.
func TestLeftoverRowOfAFailedCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, mem := newService(t)
	save(t, svc, "1", "DEMO", specs(req("A", "a", "High")))
	mem.Fail = func(*wiki.Change) error { return errors.New("injected") }
	if _, err := svc.SavePage(ctx, tenant, "alice", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: "Page 1",
		Body: specs(req("A", "a", "High"), req("C", "c", "High"))}); err == nil {
		t.Fatal("the failing save succeeded")
	}
	mem.Fail = nil
	pg, err := svc.Page(ctx, tenant, "1")
	if err != nil {
		t.Fatal(err)
	}
	mem.PutRow(tenant, &requirement.Requirement{SpaceKey: "DEMO", Key: "C", Status: requirement.Active, Origin: pg.Ref()})
	save(t, svc, "1", "DEMO", specs(req("A", "a", "Low")))
	if r := mem.Row(tenant, "DEMO", "C"); r == nil || r.Status != requirement.Deleted {
		t.Fatalf("C is %+v, want DELETED", r)
	}
}

// A move A → B fails after writing its rows (B/K ACTIVE, A/K MOVED to B),
// then the page is saved in C: B/K moves on to C like a moved row, and
// C/K's issue links are not new to the trackers.
func TestLeftoverOfAFailedMove(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, mem := newService(t)
	mem.AddIntegration(tenant, "jira-1")
	body := specs(req("K", "k", "High", wt.Jira("PROJ-1", "jira-1")))
	save(t, svc, "1", "A", body)
	mem.Fail = func(*wiki.Change) error { return errors.New("injected") }
	if _, err := svc.SavePage(ctx, tenant, "alice", wiki.PageInput{ID: "1", SpaceKey: "B", Title: "Page 1", Body: body}); err == nil {
		t.Fatal("the failing save succeeded")
	}
	mem.Fail = nil
	pg, err := svc.Page(ctx, tenant, "1")
	if err != nil {
		t.Fatal(err)
	}
	// What the failed move wrote: B/K as the move makes it, A/K MOVED.
	b := mem.Row(tenant, "A", "K").Clone()
	b.SpaceKey = "B"
	mem.PutRow(tenant, b)
	a := mem.Row(tenant, "A", "K").Clone()
	a.Status, a.NewSpaceKey, a.NewKey, a.Origin = requirement.Moved, "B", "K", pg.Ref()
	mem.PutRow(tenant, a)
	before := len(mem.Outbox)
	save(t, svc, "1", "C", body)
	// The save first redoes the stored version (space A): B/K, which the
	// failed move wrote, moves back to A; then A/K moves to C. Each MOVED
	// row leads to the requirement's current row.
	if b := mem.Row(tenant, "B", "K"); b.Status != requirement.Moved || b.NewSpaceKey != "A" {
		t.Fatalf("B/K is %s to %q, want MOVED to A", b.Status, b.NewSpaceKey)
	}
	if a := mem.Row(tenant, "A", "K"); a.Status != requirement.Moved || a.NewSpaceKey != "C" {
		t.Fatalf("A/K is %s to %q, want MOVED to C", a.Status, a.NewSpaceKey)
	}
	if c := mem.Row(tenant, "C", "K"); c.Status != requirement.Active {
		t.Fatalf("C/K is %s", c.Status)
	}
	for _, m := range mem.Outbox[before:] {
		if m.Type != outbox.Moved {
			t.Errorf("message %s for %s/%s: the links of a moved requirement are not new", m.Type, m.SpaceKey, m.Key)
		}
	}
}

// A failed save may write the row a link targets without the row that
// links (both rows of the page): the next save sets the target's reverse
// dependencies as the rows say, whether the failed save added the link
// (the extra entry goes) or removed it (the missing entry comes back).
func TestLeftoverInPageEdge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	linked := specs(req("A", "a "+wt.Link("", "B"), "High"), req("B", "b", "High"))
	unlinked := specs(req("A", "a", "High"), req("B", "b", "High"))
	for _, tc := range []struct {
		name           string
		v1, failed, v3 string
		want           int // B's reverse dependencies after v3
	}{
		{"extra", unlinked, linked, unlinked, 0},
		{"missing", linked, unlinked, linked, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svc, mem := newService(t)
			save(t, svc, "1", "DEMO", tc.v1)
			var failed *wiki.Change
			mem.Fail = func(c *wiki.Change) error { failed = c; return errors.New("injected") }
			if _, err := svc.SavePage(ctx, tenant, "alice", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: "Page 1", Body: tc.failed}); err == nil {
				t.Fatal("the failing save succeeded")
			}
			mem.Fail = nil
			// What the failed commit wrote: B's row, not A's.
			for _, w := range failed.Writes {
				if w.New.Key == "B" {
					mem.PutRow(tenant, w.New)
				}
			}
			save(t, svc, "1", "DEMO", tc.v3)
			if got := mem.Row(tenant, "DEMO", "B").ReverseDependencies; len(got) != tc.want {
				t.Fatalf("B's reverse dependencies %v, want %d", got, tc.want)
			}
		})
	}
}

// TestTrackerHoldsOfBothRowsOfAMove checks that a requirement moved back
// into a space keeps the tracker's holds of both its rows: the row it
// replaces and the row stored under its key (a tracker that re-keys a
// moved requirement's links merges them into the new key's).
func TestTrackerHoldsOfBothRowsOfAMove(t *testing.T) {
	svc, mem := newService(t)
	mem.AddIntegrationAt(tenant, "jira-1", 5)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High")))
	save(t, svc, "100", "NEW", specs(req("REQ-1", "One", "High")))
	// The tracker linked both rows meanwhile (links callback).
	for _, sp := range []string{"DEMO", "NEW"} {
		r := mustRow(t, mem, sp, "REQ-1")
		r.Issues = append(r.Issues, requirement.IssueLink{ServiceID: "jira-1", IssueKey: "PROJ-" + sp, Relationship: "tests", Tracker: true})
		mem.PutRow(tenant, r)
	}
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High")))
	var got []string
	for _, l := range mustRow(t, mem, "DEMO", "REQ-1").Issues {
		got = append(got, fmt.Sprintf("%s:%v", l.IssueKey, l.Tracker))
	}
	slices.Sort(got)
	if strings.Join(got, " ") != "PROJ-DEMO:true PROJ-NEW:true" {
		t.Fatalf("issues after moving back: %v", got)
	}
}

// TestMoveOntoADeletedKeySendsItsLinks checks the LINKS of a requirement
// moved onto a key whose deleted row's links the tracker still holds: the
// tracker merges both when it applies the MOVED, so the set is sent again.
func TestMoveOntoADeletedKeySendsItsLinks(t *testing.T) {
	svc, mem := newService(t)
	mem.AddIntegrationAt(tenant, "jira-1", 5)
	save(t, svc, "100", "SPB", specs(req("B-1", "Old", "High", wt.Jira("PROJ-4", "jira-1"))))
	if err := svc.DeletePage(context.Background(), tenant, "alice", "100"); err != nil {
		t.Fatal(err)
	}
	save(t, svc, "200", "SPA", specs(req("B-1", "New", "High", wt.Jira("PROJ-6", "jira-1"))))
	n := len(mem.Outbox)
	save(t, svc, "200", "SPB", specs(req("B-1", "New", "High", wt.Jira("PROJ-6", "jira-1"))))
	var got []string
	for _, m := range mem.Outbox[n:] {
		s := string(m.Type) + " " + m.SpaceKey + "/" + m.Key
		for _, l := range m.Links {
			s += " " + l.IssueKey
		}
		got = append(got, s)
	}
	want := []string{"MOVED SPA/B-1", "LINKS SPB/B-1 PROJ-6"}
	if !slices.Equal(got, want) {
		t.Fatalf("messages %v, want %v", got, want)
	}
	if m := mem.Outbox[len(mem.Outbox)-1]; m.LinksVersion < 2 {
		t.Fatalf("LINKS version %d: must exceed the versions of both rows", m.LinksVersion)
	}
}

// A requirement defined again after its page dropped it (DELETED) is told
// to every integration with an UPDATED message even when its excerpt and
// links are the same: the message is what clears the tracker's deleted
// flag (version 4: UPDATED; version 5: UPDATED with changedFields status).
func TestRestoredRequirementIsToldUpdated(t *testing.T) {
	t.Parallel()
	svc, mem := newService(t)
	mem.AddIntegrationAt(tenant, "jira-4", 4)
	mem.AddIntegrationAt(tenant, "jira-5", 5)
	r := req("R", "r", "High", wt.Jira("PROJ-1", ""))
	other := req("S", "s", "High")
	save(t, svc, "1", "A", specs(r, other))
	save(t, svc, "1", "A", specs(other))
	before := len(mem.Outbox)
	save(t, svc, "1", "A", specs(r, other))
	told := map[string]bool{}
	for _, m := range mem.Outbox[before:] {
		if m.Key != "R" {
			continue
		}
		switch {
		case m.Type == outbox.Updated && m.ServiceID == "jira-4":
			told["jira-4"] = true
		case m.Type == outbox.Updated && m.ServiceID == "jira-5" && slices.Contains(m.ChangedFields, "status"):
			told["jira-5"] = true
		}
	}
	if !told["jira-4"] || !told["jira-5"] {
		t.Errorf("restored R told %v; messages %+v", told, mem.Outbox[before:])
	}
}
