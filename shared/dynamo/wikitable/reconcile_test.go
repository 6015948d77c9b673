package wikitable_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/outbox"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// rcEnv is a wiki store with a real integration store and reconciler.
type rcEnv struct {
	*saveEnv
	integ *wikitable.IntegrationStore
	ob    *wikitable.OutboxStore
	rec   *integration.Reconcile
}

func rcNew(t *testing.T) *rcEnv {
	t.Helper()
	e := saveNew(t)
	integ := wikitable.NewIntegrationStore(e.db, e.env.WikiTable)
	d := integration.Deps{Store: integ, Now: time.Now}
	return &rcEnv{saveEnv: e, integ: integ, ob: wikitable.NewOutboxStore(e.db, e.env.WikiTable), rec: integration.NewReconciler(d, integ)}
}

func (e *rcEnv) create(t *testing.T, tenant, serviceID string, version int) {
	t.Helper()
	d := &integration.Descriptor{ServiceID: serviceID, RPCURL: "https://t.example.com", Endpoint: integration.DefaultEndpoint,
		Version: version, Status: integration.Active, SendErrorsToEmailThrottle: 60}
	if err := e.integ.Create(context.Background(), tenant, d); err != nil {
		t.Fatal(err)
	}
}

// messages renders the NEW messages of an integration's queue.
func (e *rcEnv) messages(t *testing.T, tenant, serviceID string) []string {
	t.Helper()
	msgs, err := e.ob.List(context.Background(), tenant, serviceID, "", 1000, false)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		s := string(m.Type) + " " + m.Key
		switch m.Type {
		case outbox.Links:
			var links []string
			for _, l := range m.Links {
				links = append(links, l.IssueKey+":"+l.Relationship)
			}
			s += fmt.Sprintf(" v%d [%s]", m.LinksVersion, strings.Join(links, " "))
		case outbox.Link:
			s += " " + m.ObjectKey
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// TestReconcileFindsEveryPageLink checks the service index reconcile
// reads: links of pages saved before the integration existed, links of
// macros naming no integration, and requirements whose page dropped its
// links (an empty set, so the tracker drops them too); never DELETED
// requirements, never another integration's or another tenant's.
func TestReconcileFindsEveryPageLink(t *testing.T) {
	t.Parallel()
	e := rcNew(t)
	ctx := context.Background()
	// Saved before any integration exists: the save warns, nothing is sent.
	res := e.save(t, "demo", "100", "DEMO", saveSpecs(
		saveReq("REQ-1", "One", "High", wt.Jira("PROJ-1", "jira-5")),
		saveReq("REQ-2", "Two", "Low", wt.Jira("PROJ-2", "")),
		saveReq("REQ-3", "Three", "Low", wt.Jira("PROJ-3", "jira-5")),
		saveReq("REQ-4", "Four", "Low", wt.Jira("PROJ-4", "other")),
		saveReq("REQ-5", "Five", "Low"),
	))
	if len(res.Warnings) != 4 {
		t.Fatalf("warnings %+v", res.Warnings)
	}
	e.save(t, "acme", "100", "DEMO", saveSpecs(saveReq("REQ-1", "Acme", "High", wt.Jira("ACME-1", "jira-5"))))
	// REQ-3 drops its link; REQ-2 moves to another page (deleted here).
	e.save(t, "demo", "100", "DEMO", saveSpecs(
		saveReq("REQ-1", "One", "High", wt.Jira("PROJ-1", "jira-5")),
		saveReq("REQ-3", "Three", "Low"),
		saveReq("REQ-4", "Four", "Low", wt.Jira("PROJ-4", "other")),
		saveReq("REQ-5", "Five", "Low"),
	))
	e.create(t, "demo", "jira-5", 5)
	e.calls.Reset()
	n, err := e.rec.Run(ctx, "demo", "jira-5", "admin")
	if err != nil || n != 2 {
		t.Fatalf("Run = %d, %v", n, err)
	}
	// One Query per service index partition (jira-5 and macros naming
	// none), one BatchGetItem of the rows, one BatchWriteItem of the
	// messages, the integration read and the pendingRemovals reset.
	want := map[string]int{"GetItem": 1, "Query": 2, "BatchGetItem": 1, "BatchWriteItem": 1, "UpdateItem": 1}
	if c := e.calls.Counts(); !saveMapsEqual(c, want) {
		t.Errorf("calls %v, want %v", c, want)
	}
	got := e.messages(t, "demo", "jira-5")
	if w := []string{"LINKS REQ-1 v1 [PROJ-1:implements]", "LINKS REQ-3 v2 []"}; !slices.Equal(got, w) {
		t.Fatalf("messages\n%v\nwant\n%v", got, w)
	}
	// At version 4 the same integration gets LINKs (removals cannot be sent).
	e.create(t, "demo", "jira-4", 4)
	e.save(t, "demo", "200", "DEMO", saveSpecs(saveReq("REQ-2", "Two again", "Low", wt.Jira("PROJ-2", ""), wt.Jira("PROJ-7", "jira-4"))))
	before := len(e.messages(t, "demo", "jira-4"))
	if n, err := e.rec.Run(ctx, "demo", "jira-4", "admin"); err != nil || n != 2 {
		t.Fatalf("Run v4 = %d, %v", n, err)
	}
	if got := e.messages(t, "demo", "jira-4")[before:]; len(got) != 2 {
		t.Fatalf("v4 messages %v", got)
	}
	if _, err := e.rec.Run(ctx, "demo", "nope", "admin"); err == nil {
		t.Fatal("reconcile of an unknown integration")
	}
}

// TestReconcileFlags checks the flags the sync run works through: set by
// Flag, listed across tenants, cleared by RunFlagged for ACTIVE
// integrations (after queueing), kept for DISABLED ones, and a flag set
// again while a run works is not lost.
func TestReconcileFlags(t *testing.T) {
	t.Parallel()
	e := rcNew(t)
	ctx := context.Background()
	e.save(t, "demo", "100", "DEMO", saveSpecs(saveReq("REQ-1", "One", "High", wt.Jira("PROJ-1", "j1"))))
	e.save(t, "acme", "100", "DEMO", saveSpecs(saveReq("REQ-1", "One", "High", wt.Jira("PROJ-1", "j2"))))
	e.create(t, "demo", "j1", 5)
	e.create(t, "acme", "j2", 5)
	e.create(t, "acme", "off", 5)
	d, _ := e.integ.Get(ctx, "acme", "off")
	d.Status = integration.Disabled
	if err := e.integ.Update(ctx, "acme", d); err != nil {
		t.Fatal(err)
	}
	for _, f := range [][2]string{{"demo", "j1"}, {"acme", "j2"}, {"acme", "off"}, {"demo", "absent"}} {
		if err := e.rec.Flag(ctx, f[0], f[1]); err != nil {
			t.Fatal(err)
		}
	}
	flagged := func() []string {
		var out []string
		if err := e.integ.Flagged(ctx, func(fs []integration.Flag) (bool, error) {
			for _, f := range fs {
				if f.Tenant == "demo" || f.Tenant == "acme" {
					out = append(out, f.Tenant+"/"+f.ServiceID)
				}
			}
			return true, nil
		}); err != nil {
			t.Fatal(err)
		}
		slices.Sort(out)
		return out
	}
	// An absent integration is never flagged.
	if got := flagged(); !slices.Equal(got, []string{"acme/j2", "acme/off", "demo/j1"}) {
		t.Fatalf("flagged %v", got)
	}
	n, err := e.rec.RunFlagged(ctx)
	if err != nil || n < 2 {
		t.Fatalf("RunFlagged = %d, %v", n, err)
	}
	if got := flagged(); !slices.Equal(got, []string{"acme/off"}) {
		t.Fatalf("after the run: %v", got)
	}
	if got := e.messages(t, "acme", "j2"); !slices.Equal(got, []string{"LINKS REQ-1 v1 [PROJ-1:implements]"}) {
		t.Fatalf("acme messages %v", got)
	}
	// A flag cleared on a stale value stays.
	var stale integration.Flag
	if err := e.integ.Flagged(ctx, func(fs []integration.Flag) (bool, error) {
		for _, f := range fs {
			if f.Tenant == "acme" && f.ServiceID == "off" {
				stale = f
			}
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Millisecond)
	if err := e.rec.Flag(ctx, "acme", "off"); err != nil {
		t.Fatal(err)
	}
	if err := e.integ.ClearReconcile(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if got := flagged(); !slices.Equal(got, []string{"acme/off"}) {
		t.Fatalf("a newer flag was cleared: %v", got)
	}
}

// TestReconcileFollowsMoves checks that a requirement whose page moved
// to another space is reconciled under its new key (the tracker re-keyed
// its links there), even when its new row's page holds no link.
func TestReconcileFollowsMoves(t *testing.T) {
	t.Parallel()
	e := rcNew(t)
	ctx := context.Background()
	e.save(t, "demo", "100", "DEMO", saveSpecs(saveReq("REQ-1", "One", "High", wt.Jira("PROJ-1", "j"))))
	e.save(t, "demo", "100", "DEMO", saveSpecs(saveReq("REQ-1", "One", "High")))
	e.save(t, "demo", "100", "NEW", saveSpecs(saveReq("REQ-1", "One", "High")))
	e.save(t, "demo", "100", "LAST", saveSpecs(saveReq("REQ-1", "One", "High")))
	e.create(t, "demo", "j", 5)
	if n, err := e.rec.Run(ctx, "demo", "j", "admin"); err != nil || n != 1 {
		t.Fatalf("Run = %d, %v", n, err)
	}
	msgs, err := e.ob.List(ctx, "demo", "j", "", 10, false)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("messages %v, %v", msgs, err)
	}
	if m := msgs[0]; m.Type != outbox.Links || m.SpaceKey != "LAST" || m.Key != "REQ-1" || len(m.Links) != 0 {
		t.Fatalf("message %+v, want the empty LINKS of LAST/REQ-1", m)
	}
}
