package integration

import (
	"context"
	"errors"
	"slices"
	"testing"
)

func TestSyncRunsTheReconciler(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	rec := &fakeReconciler{Queued: 7, RunErr: errors.New("reconcile store down")}
	deps := f.deps()
	deps.Reconciler = rec
	f.sync = NewSync(deps, SyncOptions{})
	f.write(t, "demo", 3, true)
	rep, err := f.sync.Run(context.Background())
	if err != nil {
		t.Fatalf("a reconcile failure failed the run: %v", err)
	}
	if rec.runs != 1 || rep.Reconciled != 7 || rep.ReconcileErrors != 1 || rep.Delivered != 3 {
		t.Fatalf("runs %d, report %+v", rec.runs, rep)
	}
}

// TestSyncDrainsTheDeadLetterQueue: dead-lettered envelopes flag their
// integration for reconciliation (once per integration), wake an ACTIVE
// one (its NEW messages are delivered in the same run), leave a DISABLED
// one asleep, are dropped for an unknown integration, and stay in the
// dead-letter queue when flagging fails.
func TestSyncDrainsTheDeadLetterQueue(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	dlq := newFakeQueue(f.clock)
	rec := &fakeReconciler{FlagErr: fk("broken", "jira-1")}
	deps := f.deps()
	deps.Reconciler = rec
	f.sync = NewSync(deps, SyncOptions{DeadLetters: dlq})
	ctx := context.Background()
	// demo: messages NEW, their envelope dead-lettered (not in the main
	// queue any more), twice.
	demo := f.write(t, "demo", 3, false)
	dlq.inject(Envelope{Tenant: "demo", ServiceID: "jira-1", IDs: []string{demo[0].ID, demo[1].ID}})
	dlq.inject(Envelope{Tenant: "demo", ServiceID: "jira-1", IDs: []string{demo[2].ID}})
	// acme: DISABLED.
	d, _ := f.store.Get(ctx, "acme", "jira-1")
	d.Status = Disabled
	_ = f.store.Update(ctx, "acme", d)
	acme := f.write(t, "acme", 1, false)
	dlq.inject(Envelope{Tenant: "acme", ServiceID: "jira-1", IDs: []string{acme[0].ID}})
	// An unknown integration, and one whose flag fails.
	dlq.inject(Envelope{Tenant: "gone", ServiceID: "jira-1", IDs: []string{"0000000000000001aaaaaaaa"}})
	bd := &Descriptor{ServiceID: "jira-1", RPCURL: f.tracker.URL, Version: 4}
	bd.Normalize()
	_ = f.store.Create(ctx, "broken", bd)
	dlq.inject(Envelope{Tenant: "broken", ServiceID: "jira-1", IDs: []string{"0000000000000002aaaaaaaa"}})

	rep, err := f.sync.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"demo/jira-1", "acme/jira-1"}; !slices.Equal(rec.flagged, want) {
		t.Fatalf("flagged %v, want %v", rec.flagged, want)
	}
	if rep.DeadLettered != 5 || rep.Flagged != 2 || rec.runs != 1 {
		t.Fatalf("report %+v, reconcile runs %d", rep, rec.runs)
	}
	if rep.Delivered != 3 {
		t.Fatalf("the woken integration delivered %d messages (report %+v)", rep.Delivered, rep)
	}
	if got := f.outbox.get("acme", "jira-1", acme[0].ID); got.State != "NEW" {
		t.Fatalf("DISABLED integration's message %s", got.State)
	}
	// Only the envelope whose flag failed is left in the dead-letter
	// queue (it comes back after its visibility timeout); the DISABLED
	// integration was not woken.
	if dlq.len() != 1 || f.queue.len() != 0 {
		t.Fatalf("dead-letter queue %d, outbound queue %d", dlq.len(), f.queue.len())
	}
}
