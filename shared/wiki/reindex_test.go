package wiki_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// The spec's requirement status table (§3), row by row.

// Row 1: any state, POST reindex, page exists -> ACTIVE or DELETED per the
// page's content; flagged 'Needs excerpt'; only status and flag change.
func TestReindexStatusOnly(t *testing.T) {
	ctx := context.Background()
	svc, mem := newService(t)
	mem.AddIntegration(tenant, "jira-1")
	// REQ-1 stays as saved; REQ-2 is defined by page 100 first, so page 200's
	// definition is a duplicate until page 100 drops it.
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High"), req("REQ-2", "Two by 100", "Low")))
	save(t, svc, "200", "DEMO", specs(req("REQ-2", "Two by 200", "High"), req("REQ-3", "Three", "Low", wt.Jira("PROJ-3", "jira-1"))))
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High")))
	if r := mustRow(t, mem, "DEMO", "REQ-2"); r.Status != requirement.Deleted {
		t.Fatalf("REQ-2 %+v", r)
	}
	// Drift between the stored index and page 200's body: REQ-3's stored
	// text differs, REQ-4 is in the body but has no row, GONE is in the
	// page's key list but not in the body.
	pg, err := svc.Page(ctx, tenant, "200")
	if err != nil {
		t.Fatal(err)
	}
	pg.Body = specs(req("REQ-2", "Two by 200", "High"), req("REQ-3", "Three", "Low", wt.Jira("PROJ-3", "jira-1")), req("REQ-4", "Four", "Low"))
	pg.Keys = append(pg.Keys, "GONE")
	mem.PutPage(tenant, pg)
	r3 := mustRow(t, mem, "DEMO", "REQ-3")
	r3.Text = "Three, as an older parser saw it"
	mem.PutRow(tenant, r3)
	mem.PutRow(tenant, &requirement.Requirement{SpaceKey: "DEMO", Key: "GONE", Status: requirement.Active, Text: "Gone",
		Origin: requirement.PageRef{PageID: "200", Title: "Page 200"}, Issues: []requirement.IssueLink{{ServiceID: "jira-1", IssueKey: "PROJ-9", Relationship: "implements"}}})
	sent := len(mem.Outbox)

	res, err := svc.Reindex(ctx, tenant, "alice", "200")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range res.Requirements {
		flag := ""
		if s.HTMLNeedsUpdating {
			flag = " flagged"
		}
		got = append(got, s.Key+"="+string(s.Status)+flag)
	}
	want := []string{"REQ-2=ACTIVE flagged", "REQ-3=ACTIVE flagged", "REQ-4=ACTIVE flagged", "GONE=DELETED"}
	if !slices.Equal(got, want) {
		t.Fatalf("reindex %v, want %v", got, want)
	}
	// Only status and flag changed: texts are what was stored.
	if r := mustRow(t, mem, "DEMO", "REQ-2"); r.Status != requirement.Active || !r.HTMLNeedsUpdating || r.Text != "Two by 100" || r.Origin.PageID != "200" {
		t.Fatalf("REQ-2 %+v", r)
	}
	if r := mustRow(t, mem, "DEMO", "REQ-3"); !r.HTMLNeedsUpdating || r.Text != "Three, as an older parser saw it" {
		t.Fatalf("REQ-3 %+v", r)
	}
	if r := mustRow(t, mem, "DEMO", "REQ-4"); r.Status != requirement.Active || !r.HTMLNeedsUpdating || r.Text != "" {
		t.Fatalf("REQ-4 %+v", r)
	}
	if r := mustRow(t, mem, "DEMO", "GONE"); r.Status != requirement.Deleted || r.Text != "Gone" {
		t.Fatalf("GONE %+v", r)
	}
	if r := mustRow(t, mem, "DEMO", "REQ-1"); r.HTMLNeedsUpdating || r.Status != requirement.Active {
		t.Fatalf("REQ-1 of another page touched: %+v", r)
	}
	if pg, _ := svc.Page(ctx, tenant, "200"); !slices.Equal(pg.Keys, []string{"REQ-2", "REQ-3", "REQ-4"}) || pg.Version != 1 {
		t.Fatalf("page keys %v version %d", pg.Keys, pg.Version)
	}
	if len(mem.Outbox) != sent+1 || mem.Outbox[sent].Type != "DELETED" || mem.Outbox[sent].Key != "GONE" {
		t.Fatalf("messages %+v", mem.Outbox[sent:])
	}

	// A reindex of an index that matches the body changes nothing.
	commits := len(mem.Commits)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High")))
	if _, err := svc.Reindex(ctx, tenant, "alice", "100"); err != nil {
		t.Fatal(err)
	}
	if c := lastCommit(t, mem); len(mem.Commits) != commits+2 || len(c.Writes) != 0 || c.PutPage != nil {
		t.Fatalf("no-op reindex wrote %+v", c)
	}

	// Condition: the page exists.
	if _, err := svc.Reindex(ctx, tenant, "alice", "999"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("unknown page: %v", err)
	}
}

// Row 2: flagged 'Needs excerpt', a user views the page -> same status;
// excerpts saved as text and properties; flag cleared.
func TestViewGathersFlaggedExcerpts(t *testing.T) {
	ctx := context.Background()
	svc, mem := newService(t)
	mem.AddIntegration(tenant, "jira-1")
	save(t, svc, "200", "DEMO", specs(req("REQ-1", "One", "High", wt.Jira("PROJ-1", "jira-1")), req("REQ-2", "Two", "Low")))
	// The stored index drifted from the body (as after a parser change).
	r1 := mustRow(t, mem, "DEMO", "REQ-1")
	r1.Text, r1.HTMLExcerpt, r1.Properties = "old", "<p>old</p>", nil
	mem.PutRow(tenant, r1)
	if _, err := svc.Reindex(ctx, tenant, "alice", "200"); err != nil {
		t.Fatal(err)
	}
	if r := mustRow(t, mem, "DEMO", "REQ-1"); !r.HTMLNeedsUpdating || r.Text != "old" {
		t.Fatalf("not flagged: %+v", r)
	}
	sent := len(mem.Outbox)

	rows, err := svc.ViewPage(ctx, tenant, "bob", "DEMO", "200")
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Key != "REQ-1" || rows[1].Key != "REQ-2" {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range []*requirement.Requirement{rows[0], mustRow(t, mem, "DEMO", "REQ-1")} {
		if r.HTMLNeedsUpdating || r.Status != requirement.Active || r.Text != "One" || r.HTMLExcerpt != "<p>One</p>" ||
			!slices.Equal(r.Properties, []requirement.Property{{Key: "Priority", Value: "High"}}) {
			t.Fatalf("REQ-1 after view %+v", r)
		}
	}
	if len(mem.Outbox) != sent+1 || mem.Outbox[sent].Type != "UPDATED" || mem.Outbox[sent].NewHTMLExcerpt != "<p>One</p>" {
		t.Fatalf("messages %+v", mem.Outbox[sent:])
	}
	if c := lastCommit(t, mem); len(c.Writes) != 1 || c.PutPage != nil {
		t.Fatalf("view change %+v", c)
	}

	// Nothing flagged: a view reads and writes nothing.
	commits := len(mem.Commits)
	if _, err := svc.ViewPage(ctx, tenant, "bob", "DEMO", "200"); err != nil {
		t.Fatal(err)
	}
	if len(mem.Commits) != commits {
		t.Fatal("view of an up-to-date page committed")
	}
	if _, err := svc.ViewPage(ctx, tenant, "bob", "OTHER", "200"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("wrong space: %v", err)
	}
}

// Row 3: ACTIVE, baseline creation -> copy archived in the new baseline; the
// ACTIVE requirement stays current. Freezing belongs to the baselines
// package; this checks the read side: v=N gives the copy, no v the current.
func TestReadBaselineCopy(t *testing.T) {
	ctx := context.Background()
	svc, mem := newService(t)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "One", "High")))
	cp := mustRow(t, mem, "DEMO", "REQ-1")
	cp.Baseline, cp.Status, cp.Text = 3, requirement.Archived, "One (frozen)"
	mem.PutRow(tenant, cp)

	cur, err := svc.Requirement(ctx, tenant, "DEMO", "REQ-1", 0)
	if err != nil || cur.Status != requirement.Active || cur.Baseline != 0 || cur.Text != "One" {
		t.Fatalf("current %+v %v", cur, err)
	}
	got, err := svc.Requirement(ctx, tenant, "DEMO", "req-1", 3)
	if err != nil || got.Status != requirement.Archived || got.Baseline != 3 || got.Text != "One (frozen)" {
		t.Fatalf("copy %+v %v", got, err)
	}
	if _, err := svc.Requirement(ctx, tenant, "DEMO", "REQ-2", 3); apperr.As(err) == nil || apperr.As(err).Message != "requirement DEMO/REQ-2 not found in baseline 3" {
		t.Fatalf("missing copy: %v", err)
	}
	if _, err := svc.Requirement(ctx, tenant, "DEMO", "REQ-1", 4); apperr.As(err) == nil || apperr.As(err).Message != "baseline 4 not found in space DEMO" {
		t.Fatalf("missing baseline: %v", err)
	}
	// A copy of a baseline without its record (freezing, failed, left
	// over) is invisible.
	mem.DropBaseline(tenant, "DEMO", 3)
	if _, err := svc.Requirement(ctx, tenant, "DEMO", "REQ-1", 3); apperr.As(err) == nil || apperr.As(err).Message != "baseline 3 not found in space DEMO" {
		t.Fatalf("uncommitted baseline: %v", err)
	}
	for _, c := range []struct{ space, key string }{{"DE MO", "REQ-1"}, {"DEMO", "REQ 1"}} {
		if _, err := svc.Requirement(ctx, tenant, c.space, c.key, 0); !errors.Is(err, apperr.ErrInvalid) {
			t.Fatalf("%q/%q: %v", c.space, c.key, err)
		}
	}
	// One read each (current, copy, missing copy, missing baseline,
	// uncommitted), plus the baseline check of the four archived reads.
	if mem.Calls["Requirement"] != 5 || mem.Calls["BaselineExists"] != 4 {
		t.Fatalf("store reads %d, baseline checks %d", mem.Calls["Requirement"], mem.Calls["BaselineExists"])
	}
}

func TestRequirementNotFoundMessage(t *testing.T) {
	svc, _ := newService(t)
	_, err := svc.Requirement(context.Background(), tenant, "DEMO", "REQ-9", 0)
	if e := apperr.As(err); e == nil || e.Message != "requirement DEMO/REQ-9 not found" {
		t.Fatalf("got %v", err)
	}
}
