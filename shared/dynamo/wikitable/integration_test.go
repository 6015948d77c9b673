package wikitable_test

// Tests of IntegrationStore, OutboxStore and SettingsStore on DynamoDB
// Local through infra/testenv (no TestMain here: see tracker_test.go).

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

type integrationEnv struct {
	db       *dynamodb.Client
	table    string
	calls    *dynamo.CallCounter
	integ    *wikitable.IntegrationStore
	outbox   *wikitable.OutboxStore
	settings *wikitable.SettingsStore
	reqs     *wikitable.RequirementStore
}

func integrationNew(t *testing.T) *integrationEnv {
	t.Helper()
	env := testenv.AWS(t)
	calls := dynamo.NewCallCounter()
	db := dynamodb.NewFromConfig(env.Config, calls.Options)
	return &integrationEnv{db: db, table: env.WikiTable, calls: calls, integ: wikitable.NewIntegrationStore(db, env.WikiTable), outbox: wikitable.NewOutboxStore(db, env.WikiTable),
		settings: wikitable.NewSettingsStore(db, env.WikiTable), reqs: wikitable.NewRequirementStore(db, env.WikiTable)}
}

func integrationDescriptor(id string) *integration.Descriptor {
	d := &integration.Descriptor{ServiceID: id, ApplinkID: id, RPCURL: "https://jira.example.com", Version: 4, Token: "secret",
		SendErrorsToEmail: "ops@example.com", SendErrorsToEmailThrottle: 30, IncomingTokenHash: "abc", CreatedAt: time.Now(), UpdatedAt: time.Now()}
	d.Normalize()
	return d
}

func TestIntegrationStoreCRUD(t *testing.T) {
	t.Parallel()
	e := integrationNew(t)
	ctx := context.Background()
	d := integrationDescriptor("jira-1")
	if err := e.integ.Create(ctx, "demo", d); err != nil || d.Rev != 1 {
		t.Fatalf("Create: %v (rev %d)", err, d.Rev)
	}
	if err := e.integ.Create(ctx, "demo", integrationDescriptor("jira-1")); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("duplicate Create = %v", err)
	}
	if err := e.integ.Create(ctx, "demo", integrationDescriptor("jira-0")); err != nil {
		t.Fatal(err)
	}
	got, err := e.integ.Get(ctx, "demo", "jira-1")
	if err != nil || got.Token != "secret" || got.Endpoint != integration.DefaultEndpoint || got.Status != integration.Active || got.SendErrorsToEmailThrottle != 30 {
		t.Fatalf("Get = %+v, %v", got, err)
	}
	if _, err := e.integ.Get(ctx, "acme", "jira-1"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("other tenant Get = %v", err)
	}
	list, err := e.integ.List(ctx, "demo")
	if err != nil || len(list) != 2 || list[0].ServiceID != "jira-0" {
		t.Fatalf("List = %v, %v", list, err)
	}

	// Sync bookkeeping survives a descriptor update.
	if err := e.integ.SetSweepFrom(ctx, "demo", "jira-1", "0000abc"); err != nil {
		t.Fatal(err)
	}
	got.Label, got.Status = "Jira", integration.Disabled
	if err := e.integ.Update(ctx, "demo", got); err != nil || got.Rev != 2 {
		t.Fatalf("Update: %v (rev %d)", err, got.Rev)
	}
	stale := *got
	stale.Rev = 1
	if err := e.integ.Update(ctx, "demo", &stale); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("stale Update = %v", err)
	}
	missing := integrationDescriptor("nope")
	if err := e.integ.Update(ctx, "demo", missing); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("Update of a missing integration = %v", err)
	}
	got, _ = e.integ.Get(ctx, "demo", "jira-1")
	if got.Label != "Jira" || got.Status != integration.Disabled || got.SweepFrom != "0000abc" {
		t.Fatalf("after Update %+v", got)
	}
}

func TestIntegrationStoreMailClaimAndLease(t *testing.T) {
	t.Parallel()
	e := integrationNew(t)
	ctx := context.Background()
	if err := e.integ.Create(ctx, "demo", integrationDescriptor("j")); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i, tt := range []struct {
		at   time.Time
		want bool
	}{{now, true}, {now.Add(time.Minute), false}, {now.Add(59 * time.Minute), false}, {now.Add(60 * time.Minute), true}} {
		ok, err := e.integ.ClaimErrorMail(ctx, "demo", "j", tt.at, time.Hour)
		if err != nil || ok != tt.want {
			t.Fatalf("claim %d = %v, %v; want %v", i, ok, err, tt.want)
		}
	}
	if ok, err := e.integ.ClaimErrorMail(ctx, "acme", "j", now, 0); ok || err != nil {
		t.Fatalf("claim on a missing integration = %v, %v", ok, err)
	}

	if ok, _ := e.integ.AcquireLease(ctx, "demo", "j", "run-1", now, now.Add(time.Minute)); !ok {
		t.Fatal("first lease refused")
	}
	if ok, _ := e.integ.AcquireLease(ctx, "demo", "j", "run-2", now.Add(time.Second), now.Add(time.Minute)); ok {
		t.Fatal("second owner got a held lease")
	}
	if ok, _ := e.integ.AcquireLease(ctx, "demo", "j", "run-1", now, now.Add(time.Minute)); !ok {
		t.Fatal("owner could not renew")
	}
	if ok, _ := e.integ.AcquireLease(ctx, "demo", "j", "run-2", now.Add(2*time.Minute), now.Add(3*time.Minute)); !ok {
		t.Fatal("expired lease not taken over")
	}
	if err := e.integ.ReleaseLease(ctx, "demo", "j", "run-1"); err != nil {
		t.Fatal(err) // not the owner any more: nothing happens
	}
	if err := e.integ.ReleaseLease(ctx, "demo", "j", "run-2"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := e.integ.AcquireLease(ctx, "demo", "j", "run-3", now, now.Add(time.Minute)); !ok {
		t.Fatal("released lease not available")
	}
}

func outboxMessages(sid string, n int, at time.Time) []*outbox.Message {
	msgs := make([]*outbox.Message, n)
	for i := range msgs {
		msgs[i] = &outbox.Message{ID: outbox.NewID(at.Add(time.Duration(i))), ServiceID: sid, State: outbox.New, CreatedAt: at,
			Type: outbox.Link, SpaceKey: "DEMO", Key: fmt.Sprintf("REQ-%04d", i), ObjectKey: "PROJ-1", Relationship: "tests"}
	}
	return msgs
}

func outboxRefs(tenant string, msgs []*outbox.Message) []integration.Ref {
	refs := make([]integration.Ref, len(msgs))
	for i, m := range msgs {
		refs[i] = integration.RefOf(tenant, m)
	}
	return refs
}

func TestOutboxStore(t *testing.T) {
	t.Parallel()
	e := integrationNew(t)
	ctx := context.Background()
	old := time.Now().Add(-10 * time.Minute)
	msgs := outboxMessages("j", 150, old)
	if err := e.outbox.Put(ctx, "demo", msgs); err != nil {
		t.Fatal(err)
	}
	if err := e.outbox.Put(ctx, "acme", outboxMessages("j", 3, old.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}

	if n, err := e.outbox.CountNew(ctx, "demo", "j", ""); err != nil || n != 150 {
		t.Fatalf("CountNew = %d, %v", n, err)
	}
	list, err := e.outbox.List(ctx, "demo", "j", "", 10, false)
	if err != nil || len(list) != 10 || list[0].ID != msgs[0].ID || list[9].ID != msgs[9].ID || list[0].Key != "REQ-0000" {
		t.Fatalf("List = %d, %v", len(list), err)
	}

	// Pending: every NEW message not yet in SQS, across tenants, oldest first.
	var pending []integration.Pending
	err = e.outbox.Pending(ctx, time.Now(), func(p []integration.Pending) (bool, error) {
		pending = append(pending, p...)
		return true, nil
	})
	if err != nil || len(pending) != 153 {
		t.Fatalf("Pending = %d, %v", len(pending), err)
	}
	// Stopping: once fn says stop, no page of any partition follows.
	calls := 0
	if err := e.outbox.Pending(ctx, time.Now(), func([]integration.Pending) (bool, error) {
		calls++
		return false, nil
	}); err != nil || calls != 1 {
		t.Fatalf("Pending told to stop: %d calls, %v", calls, err)
	}
	if err := e.outbox.Pending(ctx, old.Add(-time.Second), func([]integration.Pending) (bool, error) {
		t.Fatal("messages newer than the cutoff are pending")
		return false, nil
	}); err != nil {
		t.Fatal(err)
	}
	// Enqueued: out of the pending partition (120 > one transaction of 100).
	if err := e.outbox.MarkEnqueued(ctx, outboxRefs("demo", msgs[:120])); err != nil {
		t.Fatal(err)
	}
	pending = nil
	_ = e.outbox.Pending(ctx, time.Now(), func(p []integration.Pending) (bool, error) {
		pending = append(pending, p...)
		return true, nil
	})
	// Oldest first within an integration (each integration's messages sit
	// in one of the pending partitions, whose pages come in order; the
	// partitions are read 8 at a time).
	var demo []string
	for _, p := range pending {
		if p.Tenant == "demo" {
			demo = append(demo, p.Message.ID)
		}
	}
	if len(pending) != 33 || len(demo) != 30 || demo[0] != msgs[120].ID || !slices.IsSorted(demo) {
		t.Fatalf("Pending after MarkEnqueued = %d (demo %d)", len(pending), len(demo))
	}

	// Done, with per-message responses; a deleted one is skipped.
	if err := e.outbox.Delete(ctx, "demo", "j", msgs[1].ID); err != nil {
		t.Fatal(err)
	}
	if err := e.outbox.Delete(ctx, "demo", "j", msgs[1].ID); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("second Delete = %v", err)
	}
	outcomes := []integration.Outcome{}
	for i, r := range outboxRefs("demo", msgs[:105]) {
		outcomes = append(outcomes, integration.Outcome{Ref: r, LastResponse: fmt.Sprintf("HTTP 200: OK %d", i)})
	}
	if err := e.outbox.MarkDone(ctx, outcomes); err != nil {
		t.Fatal(err)
	}
	if _, err := e.outbox.Get(ctx, "demo", "j", msgs[1].ID); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("MarkDone resurrected a deleted message: %v", err)
	}
	m, err := e.outbox.Get(ctx, "demo", "j", msgs[104].ID)
	if err != nil || m.State != outbox.Done || m.LastResponse != "HTTP 200: OK 104" {
		t.Fatalf("Get = %+v, %v", m, err)
	}
	if n, _ := e.outbox.CountNew(ctx, "demo", "j", ""); n != 45 {
		t.Fatalf("CountNew after done = %d", n)
	}
	// The listing: NEW only by default, DONE too on request; oldest first.
	list, _ = e.outbox.List(ctx, "demo", "j", "", 1000, false)
	if len(list) != 45 || list[0].ID != msgs[105].ID {
		t.Fatalf("NEW listing = %d", len(list))
	}
	list, _ = e.outbox.List(ctx, "demo", "j", "", 1000, true)
	if len(list) != 149 || list[0].ID != msgs[0].ID || list[0].State != outbox.Done {
		t.Fatalf("full listing = %d", len(list))
	}
	// From an id prefix.
	if n, _ := e.outbox.CountNew(ctx, "demo", "j", msgs[140].ID[:16]); n != 10 {
		t.Fatalf("CountNew from = %d", n)
	}

	// A failure is recorded on NEW messages only.
	if err := e.outbox.RecordFailure(ctx, outboxRefs("demo", msgs[100:110]), "HTTP 500"); err != nil {
		t.Fatal(err)
	}
	got, err := e.outbox.GetMany(ctx, outboxRefs("demo", msgs[100:110]))
	if err != nil || len(got) != 10 {
		t.Fatalf("GetMany = %d, %v", len(got), err)
	}
	for i, m := range msgs[100:110] {
		g := got[integration.RefOf("demo", m)]
		want := "HTTP 500"
		if i < 5 {
			want = fmt.Sprintf("HTTP 200: OK %d", 100+i)
		}
		if g.LastResponse != want {
			t.Fatalf("message %d last response %q, want %q", 100+i, g.LastResponse, want)
		}
	}

	// ScanNew pages through NEW messages in order.
	var scanned []string
	err = e.outbox.ScanNew(ctx, "demo", "j", "", func(p []*outbox.Message) (bool, error) {
		for _, m := range p {
			scanned = append(scanned, m.ID)
		}
		return true, nil
	})
	if err != nil || len(scanned) != 45 || !slices.IsSorted(scanned) {
		t.Fatalf("ScanNew = %d, %v", len(scanned), err)
	}
	// Another tenant's message is another key.
	if _, err := e.outbox.Get(ctx, "acme", "j", msgs[120].ID); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("cross-tenant Get = %v", err)
	}
}

func TestOutboxStoreCallCounts(t *testing.T) {
	t.Parallel()
	e := integrationNew(t)
	ctx := context.Background()
	msgs := outboxMessages("j", 1000, time.Now())
	if err := e.outbox.Put(ctx, "demo", msgs); err != nil {
		t.Fatal(err)
	}
	e.calls.Reset()
	outcomes := make([]integration.Outcome, len(msgs))
	for i, r := range outboxRefs("demo", msgs) {
		outcomes[i] = integration.Outcome{Ref: r, LastResponse: "HTTP 200: OK"}
	}
	if err := e.outbox.MarkDone(ctx, outcomes); err != nil {
		t.Fatal(err)
	}
	// Conditional PartiQL UPDATEs, 25 per BatchExecuteStatement (1 write
	// unit each; a transaction cost 2), no transaction.
	if n := e.calls.Count("BatchExecuteStatement"); n != 40 || e.calls.Total() != 40 {
		t.Fatalf("MarkDone of 1000 used %v", e.calls.Counts())
	}
}

func TestSettingsStore(t *testing.T) {
	t.Parallel()
	e := integrationNew(t)
	ctx := context.Background()
	if s, err := e.settings.Get(ctx, "demo"); err != nil || s.IsolateSpaces {
		t.Fatalf("default settings = %+v, %v", s, err)
	}
	if err := e.settings.Put(ctx, "demo", integration.Settings{IsolateSpaces: true}); err != nil {
		t.Fatal(err)
	}
	if s, _ := e.settings.Get(ctx, "demo"); !s.IsolateSpaces {
		t.Fatal("isolateSpaces not stored")
	}
	if s, _ := e.settings.Get(ctx, "acme"); s.IsolateSpaces {
		t.Fatal("settings leaked to another tenant")
	}
}

func TestReplaceIssueLinks(t *testing.T) {
	t.Parallel()
	e := integrationNew(t)
	ctx := context.Background()
	reqs := []*requirement.Requirement{
		{SpaceKey: "DEMO", Key: "REQ-1", Status: requirement.Active, Issues: []requirement.IssueLink{
			{IssueKey: "PROJ-1", Relationship: "implements", Page: true}, {ServiceID: "j", IssueKey: "PROJ-2", Relationship: "tests", Tracker: true}}},
		{SpaceKey: "DEMO", Key: "REQ-2", Status: requirement.Deleted},
		{SpaceKey: "DEMO", Key: "REQ-1", Baseline: 3, Status: requirement.Archived},
	}
	if err := e.reqs.Put(ctx, "demo", reqs); err != nil {
		t.Fatal(err)
	}
	// The page indexing wrote the index items of REQ-1's links.
	for _, k := range []string{"PROJ-1", "PROJ-2"} {
		if err := integrationPutIndex(ctx, e, k); err != nil {
			t.Fatal(err)
		}
	}
	sets := func(s ...integration.LinkSet) []integration.LinkSet { return s }
	link := func(k, rel string) requirement.IssueLink {
		return requirement.IssueLink{ServiceID: "j", IssueKey: k, Relationship: rel}
	}
	_, err := e.integ.ReplaceIssueLinks(ctx, "demo", "j", sets(
		integration.LinkSet{SpaceKey: "DEMO", Key: "REQ-1", Links: []requirement.IssueLink{link("PROJ-3", "tests")}},
		integration.LinkSet{SpaceKey: "DEMO", Key: "REQ-9"}))
	if !errors.Is(err, apperr.ErrNotFound) || !strings.Contains(err.Error(), "DEMO/REQ-9") {
		t.Fatalf("unknown requirement = %v", err)
	}
	if r, _ := e.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"}); len(r.Issues) != 2 {
		t.Fatal("a refused callback wrote")
	}
	// A requirement that the links would take past the size a row may
	// take: 413, and nothing written, not even the other requirement's
	// links or index items.
	many := make([]requirement.IssueLink, 30_000)
	for i := range many {
		many[i] = link(fmt.Sprintf("BULK-%d", i), "implements")
	}
	_, err = e.integ.ReplaceIssueLinks(ctx, "demo", "j", sets(
		integration.LinkSet{SpaceKey: "DEMO", Key: "REQ-1", Links: []requirement.IssueLink{link("PROJ-9", "tests")}},
		integration.LinkSet{SpaceKey: "DEMO", Key: "REQ-2", Links: many}))
	if !errors.Is(err, apperr.ErrTooLarge) || !strings.Contains(err.Error(), "DEMO/REQ-2") {
		t.Fatalf("links too large for a row = %v", err)
	}
	if r, _ := e.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"}); len(r.Issues) != 2 {
		t.Fatal("a refused callback wrote")
	}
	if err := e.reqs.QueryIssueIndex(ctx, "demo", "PROJ-9", "", 0, func(id requirement.ID) bool {
		t.Errorf("a refused callback indexed %v", id)
		return true
	}); err != nil {
		t.Fatal(err)
	}

	n, err := e.integ.ReplaceIssueLinks(ctx, "demo", "j", sets(
		integration.LinkSet{SpaceKey: "DEMO", Key: "req-1", Links: []requirement.IssueLink{link("PROJ-3", "tests"), link("PROJ-1", "tests")}},
		integration.LinkSet{SpaceKey: "DEMO", Key: "REQ-2", Links: []requirement.IssueLink{link("PROJ-4", "tests")}},
		integration.LinkSet{SpaceKey: "DEMO", Key: "REQ-1", Baseline: 3, Links: []requirement.IssueLink{link("PROJ-5", "tests")}}))
	if err != nil || n != 3 {
		t.Fatalf("ReplaceIssueLinks = %d, %v", n, err)
	}
	r, _ := e.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"})
	// The page's link stays; the tracker's holds are exactly what it sent.
	held := func(l requirement.IssueLink) requirement.IssueLink { l.Tracker = true; return l }
	want := []requirement.IssueLink{{IssueKey: "PROJ-1", Relationship: "implements", Page: true}, held(link("PROJ-3", "tests")), held(link("PROJ-1", "tests"))}
	if !slices.Equal(r.Issues, want) {
		t.Fatalf("REQ-1 issues = %+v", r.Issues)
	}
	// jira index: PROJ-2 gone, PROJ-1 kept, PROJ-3 added; the DELETED and
	// the archived requirement get no index items.
	for issue, want := range map[string][]string{"PROJ-1": {"REQ-1"}, "proj-3": {"REQ-1"}, "PROJ-2": nil, "PROJ-4": nil, "PROJ-5": nil} {
		var got []string
		if err := e.reqs.QueryIssueIndex(ctx, "demo", issue, "", 0, func(id requirement.ID) bool {
			got = append(got, id.Key)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("index %s = %v, want %v", issue, got, want)
		}
	}
	if r, _ := e.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1", Baseline: 3}); len(r.Issues) != 1 || r.Issues[0].IssueKey != "PROJ-5" {
		t.Fatalf("archived copy issues = %+v", r.Issues)
	}
}

// integrationPutIndex writes the jira index item of DEMO/REQ-1 as the page indexing
// does (dynamo/index.go).
func integrationPutIndex(ctx context.Context, e *integrationEnv, issue string) error {
	_, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &e.table, Item: map[string]types.AttributeValue{
		"pk":       &types.AttributeValueMemberS{Value: "T#demo#IX#J#" + strings.ToLower(issue)},
		"sk":       &types.AttributeValueMemberS{Value: "REQ-1#DEMO"},
		"gsi1pk":   &types.AttributeValueMemberS{Value: "T#demo#IXS#DEMO#J#" + strings.ToLower(issue)},
		"gsi1sk":   &types.AttributeValueMemberS{Value: "REQ-1#DEMO"},
		"spaceKey": &types.AttributeValueMemberS{Value: "DEMO"},
		"key":      &types.AttributeValueMemberS{Value: "REQ-1"},
	}})
	return err
}

// TestRequeueEnqueued: after a queue lost its references, every NEW message
// that had reached it is pending again (so the sync enqueues it), and
// nothing else is: not the messages still pending, not the DONE ones.
func TestRequeueEnqueued(t *testing.T) {
	t.Parallel()
	e := integrationNew(t)
	ctx := context.Background()
	msgs := outboxMessages("j", 130, time.Now().Add(-time.Minute))
	if err := e.outbox.Put(ctx, "demo", msgs); err != nil {
		t.Fatal(err)
	}
	if err := e.outbox.MarkEnqueued(ctx, outboxRefs("demo", msgs[:120])); err != nil {
		t.Fatal(err)
	}
	done := make([]integration.Outcome, 0, 10)
	for _, r := range outboxRefs("demo", msgs[:10]) {
		done = append(done, integration.Outcome{Ref: r})
	}
	if err := e.outbox.MarkDone(ctx, done); err != nil {
		t.Fatal(err)
	}
	n, err := wikitable.RequeueEnqueued(ctx, e.db, e.table)
	if err != nil || n != 110 {
		t.Fatalf("RequeueEnqueued = %d, %v; want the 110 NEW messages that were enqueued", n, err)
	}
	var pending []string
	if err := e.outbox.Pending(ctx, time.Now(), func(p []integration.Pending) (bool, error) {
		for _, m := range p {
			pending = append(pending, m.Message.ID)
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(pending) != 120 || pending[0] != msgs[10].ID {
		t.Fatalf("pending after the requeue: %d (first %v), want the 120 NEW messages", len(pending), pending[:min(1, len(pending))])
	}
	if n, err := wikitable.RequeueEnqueued(ctx, e.db, e.table); err != nil || n != 0 {
		t.Fatalf("a second requeue moved %d (%v)", n, err)
	}
}

// TestOutboxPurgeAndIntegrationDelete: Purge deletes an integration's
// messages below an id (or all of them) across Query pages of 1,000, and
// never another integration's or tenant's; Delete removes the descriptor
// once (then not found).
func TestOutboxPurgeAndIntegrationDelete(t *testing.T) {
	t.Parallel()
	e := integrationNew(t)
	ctx := context.Background()
	start := time.Now().Add(-time.Hour)
	msgs := outboxMessages("j", 1200, start)
	if err := e.outbox.Put(ctx, "demo", msgs); err != nil {
		t.Fatal(err)
	}
	for _, other := range []struct{ tenant, sid string }{{"acme", "j"}, {"demo", "j2"}} {
		if err := e.outbox.Put(ctx, other.tenant, outboxMessages(other.sid, 3, start)); err != nil {
			t.Fatal(err)
		}
	}
	// Below an id: exactly the messages before it.
	n, err := e.outbox.Purge(ctx, "demo", "j", msgs[1100].ID)
	if err != nil || n != 1100 {
		t.Fatalf("Purge below message 1100 = %d, %v", n, err)
	}
	left, err := e.outbox.List(ctx, "demo", "j", "", 1000, true)
	if err != nil || len(left) != 100 || left[0].ID != msgs[1100].ID {
		t.Fatalf("left %d, %v", len(left), err)
	}
	if n, err := e.outbox.Purge(ctx, "demo", "j", ""); err != nil || n != 100 {
		t.Fatalf("Purge all = %d, %v", n, err)
	}
	if n, err := e.outbox.Purge(ctx, "demo", "j", ""); err != nil || n != 0 {
		t.Fatalf("Purge again = %d, %v", n, err)
	}
	for _, other := range []struct{ tenant, sid string }{{"acme", "j"}, {"demo", "j2"}} {
		if list, err := e.outbox.List(ctx, other.tenant, other.sid, "", 10, true); err != nil || len(list) != 3 {
			t.Fatalf("%s/%s after the purge: %d, %v", other.tenant, other.sid, len(list), err)
		}
	}

	d := integrationDescriptor("jira-1")
	if err := e.integ.Create(ctx, "demo", d); err != nil {
		t.Fatal(err)
	}
	if err := e.integ.Delete(ctx, "acme", "jira-1"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("Delete of another tenant's = %v", err)
	}
	if err := e.integ.Delete(ctx, "demo", "jira-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.integ.Get(ctx, "demo", "jira-1"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("Get after Delete = %v", err)
	}
	if err := e.integ.Delete(ctx, "demo", "jira-1"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("second Delete = %v", err)
	}
}

// TestOutboxPendingShards: the pending messages of many integrations are
// spread over the pending partitions (one per integration), a message a
// former release left in the single legacy partition is still found, and
// Pending returns each integration's messages oldest first.
func TestOutboxPendingShards(t *testing.T) {
	t.Parallel()
	e := integrationNew(t)
	ctx := context.Background()
	old := time.Now().Add(-10 * time.Minute)
	want := map[string]bool{}
	for i := range 40 {
		msgs := outboxMessages(fmt.Sprintf("s%02d", i), 3, old.Add(time.Duration(i)*time.Second))
		if err := e.outbox.Put(ctx, "demo", msgs); err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			want[m.ServiceID+"/"+m.ID] = true
		}
	}
	out, err := e.db.Scan(ctx, &dynamodb.ScanInput{TableName: &e.table, IndexName: aws.String("gsi1")})
	if err != nil {
		t.Fatal(err)
	}
	partitions := map[string]int{}
	var legacy map[string]types.AttributeValue
	for _, it := range out.Items {
		pk := it["gsi1pk"].(*types.AttributeValueMemberS).Value
		if !strings.HasPrefix(pk, "OUTBOX#PENDING#") {
			t.Fatalf("pending message in %q", pk)
		}
		partitions[pk]++
		legacy = it
	}
	if len(partitions) < 16 {
		t.Fatalf("120 messages of 40 integrations in %d pending partitions, want them spread", len(partitions))
	}
	// Move one to the legacy partition, as a former release wrote it.
	full, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &e.table,
		Key: map[string]types.AttributeValue{"pk": legacy["pk"], "sk": legacy["sk"]}})
	if err != nil {
		t.Fatal(err)
	}
	full.Item["gsi1pk"] = &types.AttributeValueMemberS{Value: "OUTBOX#PENDING"}
	if _, err := e.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &e.table, Item: full.Item}); err != nil {
		t.Fatal(err)
	}

	byService := map[string][]string{}
	if err := e.outbox.Pending(ctx, time.Now(), func(p []integration.Pending) (bool, error) {
		for _, m := range p {
			byService[m.Message.ServiceID] = append(byService[m.Message.ServiceID], m.Message.ID)
			delete(want, m.Message.ServiceID+"/"+m.Message.ID)
		}
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(want) != 0 {
		t.Fatalf("Pending missed %d messages: %v", len(want), want)
	}
	for id, ids := range byService {
		if len(ids) != 3 || (!slices.IsSorted(ids) && id != full.Item["serviceId"].(*types.AttributeValueMemberS).Value) {
			t.Fatalf("integration %s: pending %v, want its 3 messages oldest first", id, ids)
		}
	}
}

// TestReplaceIssueLinksWhileASaveHoldsThePage: a page save writes back
// whole rows it read under its lease, so the links callback does not write
// a row of a page whose lease is held (it would be lost): it answers
// Conflict, nothing written, and succeeds once the lease is released.
func TestReplaceIssueLinksWhileASaveHoldsThePage(t *testing.T) {
	t.Parallel()
	e := integrationNew(t)
	ctx := context.Background()
	pages := wikitable.NewWikiStore(e.db, e.table)
	if err := e.reqs.Put(ctx, "demo", []*requirement.Requirement{{SpaceKey: "DEMO", Key: "REQ-1", Status: requirement.Active,
		Origin: requirement.PageRef{PageID: "100", Title: "Specs"}}}); err != nil {
		t.Fatal(err)
	}
	lease, err := pages.LeasePage(ctx, "demo", "100", 0)
	if err != nil {
		t.Fatal(err)
	}
	set := []integration.LinkSet{{SpaceKey: "DEMO", Key: "REQ-1", Links: []requirement.IssueLink{{ServiceID: "j", IssueKey: "PROJ-1", Relationship: "tests"}}}}
	if _, err := e.integ.ReplaceIssueLinks(ctx, "demo", "j", set); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("links while the page is leased: %v, want a conflict", err)
	}
	if r, _ := e.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"}); len(r.Issues) != 0 {
		t.Fatalf("written while the page was leased: %+v", r.Issues)
	}
	if err := pages.ReleasePage(ctx, "demo", lease); err != nil {
		t.Fatal(err)
	}
	if n, err := e.integ.ReplaceIssueLinks(ctx, "demo", "j", set); err != nil || n != 1 {
		t.Fatalf("links after the release: %d, %v", n, err)
	}
	if r, _ := e.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"}); len(r.Issues) != 1 || !r.Issues[0].Tracker {
		t.Fatalf("issues after the release: %+v", r.Issues)
	}
}
