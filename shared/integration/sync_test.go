package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/mail/mailtest"
	"github.com/reqtrace/reqtrace/shared/outbox"
)

// trackerServer is a fake tracker: it records every batch POSTed to it and
// answers Status (200 by default), refusing messages whose key starts with
// "BAD".
type trackerServer struct {
	*httptest.Server
	mu      sync.Mutex
	batches [][]Message
	auth    []string
	Status  int
}

func newTrackerServer(t *testing.T) *trackerServer {
	ts := &trackerServer{Status: 200}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var batch []Message
		if err := json.NewDecoder(r.Body).Decode(&batch); err != nil {
			http.Error(w, "bad body", 400)
			return
		}
		ts.mu.Lock()
		ts.batches = append(ts.batches, batch)
		ts.auth = append(ts.auth, r.Header.Get("Authorization"))
		status := ts.Status
		ts.mu.Unlock()
		if r.URL.Path != DefaultEndpoint {
			http.Error(w, "wrong path "+r.URL.Path, 404)
			return
		}
		if status != 200 {
			http.Error(w, `{"status":500,"message":"tracker is down"}`, status)
			return
		}
		type res struct {
			ID      int    `json:"id"`
			Status  string `json:"status"`
			Message string `json:"message"`
		}
		var out struct {
			Results []res `json:"results"`
		}
		for _, m := range batch {
			if strings.HasPrefix(m.Key, "BAD") {
				out.Results = append(out.Results, res{m.ID, "ERROR", "unknown issue"})
			} else {
				out.Results = append(out.Results, res{m.ID, "OK", ""})
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *trackerServer) set(status int) {
	ts.mu.Lock()
	ts.Status = status
	ts.mu.Unlock()
}

func (ts *trackerServer) posts() [][]Message {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([][]Message(nil), ts.batches...)
}

type syncFixture struct {
	clock   *clock
	store   *fakeStore
	outbox  *fakeOutbox
	queue   *fakeQueue
	mailer  *mailtest.Recorder
	tracker *trackerServer
	pub     *Publisher
	sync    *Sync
}

func newSyncFixture(t *testing.T) *syncFixture {
	c := newClock()
	f := &syncFixture{clock: c, store: newFakeStore(), outbox: newFakeOutbox(), queue: newFakeQueue(c), mailer: &mailtest.Recorder{}, tracker: newTrackerServer(t)}
	f.pub = NewPublisher(f.queue, f.outbox)
	f.sync = NewSync(f.deps(), SyncOptions{})
	for _, tenant := range []string{"demo", "acme"} {
		d := &Descriptor{ServiceID: "jira-1", RPCURL: f.tracker.URL, Version: 4, Token: "tok-" + tenant, SendErrorsToEmail: "ops@example.com", SendErrorsToEmailThrottle: 60}
		d.Normalize()
		if err := f.store.Create(context.Background(), tenant, d); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// deps are the fixture's dependencies of a Sync: its fakes, an HTTP
// tracker client and its clock.
func (f *syncFixture) deps() Deps {
	return Deps{Store: f.store, Outbox: f.outbox, Queue: f.queue, Tracker: &HTTPTracker{}, Publisher: f.pub, Mailer: f.mailer, Now: f.clock.Now}
}

// write stores n NEW messages for tenant/jira-1 (keys REQ-<i>) and
// publishes them; it answers them in creation order.
func (f *syncFixture) write(t *testing.T, tenant string, n int, publish bool) []*outbox.Message {
	t.Helper()
	msgs := make([]*outbox.Message, n)
	now := f.clock.Now()
	for i := range msgs {
		msgs[i] = &outbox.Message{ID: outbox.NewID(now.Add(time.Duration(i))), ServiceID: "jira-1", State: outbox.New, CreatedAt: now,
			Type: outbox.Updated, AuthorKey: "alice", AuthorName: "Alice", SpaceKey: "DEMO", Key: fmt.Sprintf("REQ-%05d", i), NewHTMLExcerpt: "<p>x</p>"}
	}
	f.outbox.put(tenant, msgs...)
	if publish {
		if err := f.pub.Publish(context.Background(), tenant, msgs); err != nil {
			t.Fatal(err)
		}
	}
	return msgs
}

func (f *syncFixture) run(t *testing.T) Report {
	t.Helper()
	rep, err := f.sync.Run(context.Background())
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return rep
}

func TestSyncDeliversInOrderInBatches(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	msgs := f.write(t, "demo", 250, true)
	rep := f.run(t)
	posts := f.tracker.posts()
	if len(posts) != 3 || len(posts[0]) != 100 || len(posts[2]) != 50 {
		t.Fatalf("posts = %d (report %+v)", len(posts), rep)
	}
	i := 0
	for _, p := range posts {
		for j, m := range p {
			if m.ID != j+1 || m.Key != msgs[i].Key || m.Estate != "_" || m.Baseline != nil || m.AuthorKey != "alice" {
				t.Fatalf("post message %d = %+v, want key %s", i, m, msgs[i].Key)
			}
			i++
		}
	}
	if f.tracker.auth[0] != "Bearer tok-demo" {
		t.Fatalf("Authorization = %q", f.tracker.auth[0])
	}
	for _, m := range msgs {
		got := f.outbox.get("demo", "jira-1", m.ID)
		if got.State != outbox.Done || got.LastResponse != "HTTP 200: OK" {
			t.Fatalf("message %s = %s %q", m.ID, got.State, got.LastResponse)
		}
	}
	if f.queue.len() != 0 || rep.Delivered != 250 || rep.Posts != 3 {
		t.Fatalf("queue left %d, report %+v", f.queue.len(), rep)
	}
	// A second run finds nothing to do.
	if rep := f.run(t); rep.Posts != 0 {
		t.Fatalf("second run = %+v", rep)
	}
}

func TestSyncTenThousandInHundredPosts(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	f.write(t, "demo", 10000, true)
	f.write(t, "acme", 150, true)
	rep := f.run(t)
	if rep.Delivered != 10150 || rep.Posts != 102 || f.queue.len() != 0 {
		t.Fatalf("report %+v, queue %d", rep, f.queue.len())
	}
}

func TestSyncFailureStaysNewAndMailsOnce(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	msgs := f.write(t, "demo", 3, true)
	f.tracker.set(500)
	rep := f.run(t)
	if rep.Failed != 1 || rep.Delivered != 0 || rep.Mails != 1 {
		t.Fatalf("first run %+v", rep)
	}
	got := f.outbox.get("demo", "jira-1", msgs[0].ID)
	if got.State != outbox.New || !strings.HasPrefix(got.LastResponse, "HTTP 500") {
		t.Fatalf("after failure: %s %q", got.State, got.LastResponse)
	}
	if f.queue.len() != 1 {
		t.Fatalf("the envelope was deleted: %d left", f.queue.len())
	}
	// The next run (3 minutes later) fails again: no second e-mail within
	// the throttle.
	f.clock.Add(3 * time.Minute)
	if rep := f.run(t); rep.Failed != 1 || rep.Mails != 0 {
		t.Fatalf("second run %+v", rep)
	}
	if mails := f.mailer.Sent(); len(mails) != 1 || mails[0].To != "ops@example.com" || strings.Contains(mails[0].String(), "tok-demo") {
		t.Fatalf("mails = %q", mails)
	}
	// After the throttle a new failure mails again; once the tracker is
	// back, everything is delivered in order.
	f.clock.Add(61 * time.Minute)
	if rep := f.run(t); rep.Mails != 1 {
		t.Fatalf("third run %+v", rep)
	}
	f.tracker.set(200)
	f.clock.Add(3 * time.Minute)
	if rep := f.run(t); rep.Delivered != 3 || f.queue.len() != 0 {
		t.Fatalf("recovery run %+v, queue %d", rep, f.queue.len())
	}
}

func TestSyncRefusedMessageIsDoneWithError(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	msgs := f.write(t, "demo", 2, false)
	msgs[1].Key = "BAD-1"
	f.outbox.put("demo", msgs[1])
	if err := f.pub.Publish(context.Background(), "demo", msgs); err != nil {
		t.Fatal(err)
	}
	rep := f.run(t)
	got := f.outbox.get("demo", "jira-1", msgs[1].ID)
	if rep.Refused != 1 || got.State != outbox.Done || got.LastResponse != "HTTP 200: ERROR: unknown issue" || len(f.mailer.Sent()) != 1 {
		t.Fatalf("report %+v, message %s %q, mails %d", rep, got.State, got.LastResponse, len(f.mailer.Sent()))
	}
}

func TestSyncDisabledKeepsMessages(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	d, _ := f.store.Get(context.Background(), "demo", "jira-1")
	d.Status = Disabled
	_ = f.store.Update(context.Background(), "demo", d)
	msgs := f.write(t, "demo", 5, true)
	rep := f.run(t)
	// Nothing sent, the messages NEW; the envelope is deleted, not hidden:
	// a hidden envelope would block its FIFO group after re-activation.
	if len(f.tracker.posts()) != 0 || rep.Skipped != 1 || f.queue.len() != 0 {
		t.Fatalf("report %+v posts %d queue %d", rep, len(f.tracker.posts()), f.queue.len())
	}
	if got := f.outbox.get("demo", "jira-1", msgs[0].ID); got.State != outbox.New {
		t.Fatalf("state %s", got.State)
	}
	f.clock.Add(3 * time.Minute)
	if rep := f.run(t); rep.Received != 0 || len(f.tracker.posts()) != 0 {
		t.Fatalf("a DISABLED integration was served: %+v", rep)
	}
	// Re-activating wakes the queue: the very next run delivers, in order.
	svc := New(Deps{Store: f.store, Outbox: f.outbox, Publisher: f.pub, Now: f.clock.Now})
	if _, _, err := svc.Update(context.Background(), "demo", "jira-1", Patch{Status: ptr("ACTIVE")}); err != nil {
		t.Fatal(err)
	}
	if rep := f.run(t); rep.Delivered != 5 {
		t.Fatalf("after re-activation %+v", rep)
	}
}

func TestSyncDuplicateReferenceDeliversOnce(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	msgs := f.write(t, "demo", 2, true)
	one := func(m *outbox.Message) Envelope {
		return Envelope{Tenant: "demo", ServiceID: "jira-1", IDs: []string{m.ID}}
	}
	f.queue.inject(one(msgs[0])) // a second copy, same run
	f.run(t)
	f.queue.inject(one(msgs[1])) // a late copy, next run
	f.clock.Add(3 * time.Minute)
	rep := f.run(t)
	n := 0
	for _, p := range f.tracker.posts() {
		n += len(p)
	}
	if n != 2 || rep.Settled != 1 || f.queue.len() != 0 {
		t.Fatalf("delivered %d messages, report %+v, queue %d", n, rep, f.queue.len())
	}
}

func TestSyncDeletedMessageIgnored(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	msgs := f.write(t, "demo", 2, true)
	svc := New(Deps{Store: f.store, Outbox: f.outbox, Now: f.clock.Now})
	if err := svc.DeleteMessage(context.Background(), "demo", "jira-1", msgs[0].ID); err != nil {
		t.Fatal(err)
	}
	f.run(t)
	if p := f.tracker.posts(); len(p) != 1 || len(p[0]) != 1 || p[0][0].Key != msgs[1].Key {
		t.Fatalf("posts = %+v", p)
	}
}

func TestSyncReenqueuesPending(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	msgs := f.write(t, "demo", 3, false) // committed, never published
	// Too young: left to the writer.
	if rep := f.run(t); rep.Reenqueued != 0 {
		t.Fatalf("young messages re-enqueued: %+v", rep)
	}
	// The sweep triggered by nothing: they are still NEW.
	if got := f.outbox.get("demo", "jira-1", msgs[0].ID); got.State != outbox.New {
		t.Fatal("delivered without a reference")
	}
	f.clock.Add(2 * time.Minute)
	rep := f.run(t)
	if rep.Reenqueued != 3 || rep.Delivered != 3 {
		t.Fatalf("report %+v", rep)
	}
}

func TestSyncBusyLeaseLeavesReferences(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	f.write(t, "demo", 2, true)
	now := f.clock.Now()
	if ok, _ := f.store.AcquireLease(context.Background(), "demo", "jira-1", "other-run", now, now.Add(time.Hour)); !ok {
		t.Fatal("lease")
	}
	rep := f.run(t)
	if rep.Posts != 0 || rep.Skipped != 1 || f.queue.len() != 1 {
		t.Fatalf("busy integration delivered: %+v", rep)
	}
}

func TestEnvelopes(t *testing.T) {
	t.Parallel()
	var refs []Ref
	for i := range 2500 {
		refs = append(refs, Ref{Tenant: "demo", ServiceID: "a", ID: fmt.Sprintf("%05d", i)})
	}
	refs = append(refs, Ref{Tenant: "acme", ServiceID: "a", ID: "x"}, Ref{Tenant: "demo", ServiceID: "b", ID: "y"}, refs[0])
	envs := Envelopes(refs)
	if len(envs) != 5 || len(envs[0].IDs) != MaxEnvelopeIDs || len(envs[2].IDs) != 500 || envs[3].Tenant != "acme" || envs[4].IDs[0] != "y" {
		t.Fatalf("Envelopes = %d envelopes", len(envs))
	}
	if envs[1].IDs[0] != "01000" || len(envs[4].Refs()) != 1 || envs[4].Refs()[0] != (Ref{"demo", "b", "y"}) {
		t.Fatalf("Envelopes order or Refs wrong: %v", envs[4])
	}
}

func TestSyncEnvelopeOfManyMessagesAndLateCommit(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	f.write(t, "demo", 3, true)
	if rep := f.run(t); rep.Delivered != 3 || rep.Received != 1 || rep.Settled != 1 {
		t.Fatalf("first run %+v", rep)
	}
	// A message committed long after its id was taken (older than the sweep
	// mark) is still delivered through its envelope.
	late := &outbox.Message{ID: outbox.NewID(f.clock.Now().Add(-time.Hour)), ServiceID: "jira-1", State: outbox.New, Type: outbox.Deleted, SpaceKey: "DEMO", Key: "LATE"}
	f.outbox.put("demo", late)
	if err := f.pub.Publish(context.Background(), "demo", []*outbox.Message{late}); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(3 * time.Minute)
	if rep := f.run(t); rep.Delivered != 1 {
		t.Fatalf("late run %+v", rep)
	}
	if got := f.outbox.get("demo", "jira-1", late.ID); got.State != outbox.Done {
		t.Fatalf("late message %s", got.State)
	}
}

func TestPublisherFailureLeavesPending(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	f.queue.FailPublish = true
	msgs := f.write(t, "demo", 1, false)
	if err := f.pub.Publish(context.Background(), "demo", msgs); err == nil {
		t.Fatal("Publish hid the failure")
	}
	if got := f.outbox.get("demo", "jira-1", msgs[0].ID); got.Enqueued {
		t.Fatal("marked enqueued although SQS refused it")
	}
}

func TestPush(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	msgs := f.write(t, "demo", 1, false)
	svc := New(Deps{Store: f.store, Outbox: f.outbox, Tracker: &HTTPTracker{}, Now: f.clock.Now})
	ctx := context.Background()
	f.tracker.set(502)
	m, err := svc.Push(ctx, "demo", "jira-1", msgs[0].ID)
	var de *DeliveryError
	if !errors.As(err, &de) || m.State != outbox.New || !strings.HasPrefix(m.LastResponse, "HTTP 502") {
		t.Fatalf("failed push = %+v, %v", m, err)
	}
	if got := f.outbox.get("demo", "jira-1", msgs[0].ID); got.State != outbox.New || got.LastResponse != m.LastResponse {
		t.Fatalf("stored %+v", got)
	}
	f.tracker.set(200)
	m, err = svc.Push(ctx, "demo", "jira-1", msgs[0].ID)
	if err != nil || m.State != outbox.Done || m.LastResponse != "HTTP 200: OK" {
		t.Fatalf("push = %+v, %v", m, err)
	}
	if _, err := svc.Push(ctx, "acme", "jira-1", msgs[0].ID); err == nil {
		t.Fatal("another tenant pushed the message")
	}
}

func TestBatchWireShape(t *testing.T) {
	t.Parallel()
	b := Batch(4, []*outbox.Message{
		{Type: outbox.Moved, SpaceKey: "DEMO", Key: "R1", Baseline: 0, NewSpaceKey: "NEW", NewKey: "R1", NewURL: "/requirements/NEW/R1"},
		{Type: outbox.Link, SpaceKey: "DEMO", Key: "R2", Baseline: 3, ObjectKey: "PROJ-1", Relationship: "tests", AuthorKey: "bob", AuthorName: "Bob"},
	})
	js, _ := json.Marshal(b)
	want := `[{"id":1,"type":"MOVED","spaceKey":"DEMO","key":"R1","baseline":null,"estate":"_","newSpaceKey":"NEW","newKey":"R1","newUrl":"/requirements/NEW/R1"},` +
		`{"id":2,"type":"LINK","authorKey":"bob","authorName":"Bob","spaceKey":"DEMO","key":"R2","baseline":3,"estate":"_","objectKey":"PROJ-1","relationship":"tests"}]`
	if string(js) != want {
		t.Fatalf("wire shape\n got %s\nwant %s", js, want)
	}
}

func TestHTTPTrackerUnreachable(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	d := &Descriptor{RPCURL: srv.URL, Endpoint: DefaultEndpoint, Token: "very-secret"}
	_, err := (&HTTPTracker{}).Deliver(context.Background(), d, []*outbox.Message{{Type: outbox.Updated}})
	var de *DeliveryError
	if !errors.As(err, &de) || de.HTTPStatus != 0 || strings.Contains(de.LastResponse(), "very-secret") {
		t.Fatalf("Deliver = %v", err)
	}
}

// crashingStore is a Store whose runs never release their leases, as a
// Sync process killed in the middle of a run does not.
type crashingStore struct{ *fakeStore }

func (crashingStore) ReleaseLease(context.Context, string, string, string) error { return nil }

// Found by the soak harness: a sync run killed while holding an
// integration's lease held back the integration's deliveries until the
// run's deadline plus two minutes (12 minutes with Sync's timeout). The
// lease now ends with the integration's own budget in the run.
func TestSyncLeaseOfACrashedRunExpiresWithItsTrackerBudget(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	deps := f.deps()
	deps.Store = crashingStore{f.store}
	f.write(t, "demo", 2, true)
	rep, err := NewSync(deps, SyncOptions{}).Run(context.Background()) // no deadline: MaxRun, 10 minutes
	if err != nil || rep.Delivered != 2 {
		t.Fatalf("crashing run: %+v, %v", rep, err)
	}
	f.write(t, "demo", 3, true)
	f.clock.Add(time.Minute + leaseGrace + time.Second) // TrackerBudget (default 1 minute) + grace
	if rep := f.run(t); rep.Delivered != 3 {
		t.Fatalf("run after the crashed run's lease: %+v, want the 3 new messages delivered", rep)
	}
}

// failingMarks is an outbox whose DONE marks fail for batches holding the
// message with id fail.
type failingMarks struct {
	*fakeOutbox
	fail string
}

func (f *failingMarks) MarkDone(ctx context.Context, outcomes []Outcome) error {
	for _, o := range outcomes {
		if o.Ref.ID == f.fail {
			return errors.New("throttled")
		}
	}
	return f.fakeOutbox.MarkDone(ctx, outcomes)
}

// A batch's DONE mark runs while the next batch is POSTed: a mark that
// fails stops the sweep, is the run's error, keeps its messages and every
// later one NEW (the next batch's mark never starts), and the next run
// delivers them and the rest.
func TestSyncFailedMarkKeepsSweepMark(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	msgs := f.write(t, "demo", 450, true)
	deps := f.deps()
	deps.Outbox = &failingMarks{fakeOutbox: f.outbox, fail: msgs[150].ID}
	rep, err := NewSync(deps, SyncOptions{}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "throttled") {
		t.Fatalf("run error = %v", err)
	}
	if rep.Delivered >= 450 || rep.Delivered < 100 || rep.Posts > 4 {
		t.Fatalf("first run %+v", rep)
	}
	// The failed mark's messages and every later one stay NEW: the batch
	// POSTed while that mark ran is not marked, so the next run delivers
	// them all again in id order.
	for i, m := range msgs[100:] {
		if got := f.outbox.get("demo", "jira-1", m.ID); got.State != outbox.New {
			t.Fatalf("message %d, at or after the failed mark's batch, is %s", 100+i, got.State)
		}
	}
	f.clock.Add(3 * time.Minute)
	rep = f.run(t)
	for i, m := range msgs {
		if got := f.outbox.get("demo", "jira-1", m.ID); got.State != outbox.Done {
			t.Fatalf("message %d is %s after the second run (%+v)", i, got.State, rep)
		}
	}
	if f.queue.len() != 0 {
		t.Fatalf("%d envelopes left", f.queue.len())
	}
}
