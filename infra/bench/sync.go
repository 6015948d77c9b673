package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/outbound"
	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/queue"
)

// syncService is the integration the sync measurement delivers to.
const syncService = "jira-sync-bench"

// Sync measures one sync run (integration.Sync, as functions/sync composes
// it) delivering n NEW messages of one integration to a tracker: an
// httptest server on loopback that answers OK for every message. The
// messages are written to the outbox and their references published to SQS
// (moto) first, as page saves do; the run gets the Sync function's timeout
// from template.yaml as its deadline.
func Sync(ctx context.Context, env *Env, n int, row *Row) error {
	timeout := env.FunctionTimeout("Sync")
	row.Method = fmt.Sprintf("%d NEW UPDATED messages of one integration written to the outbox (OutboxStore.Put) and published to the "+
		"outbound FIFO queue on moto (integration.Publisher); then one integration.Sync run composed as in functions/sync "+
		"(IntegrationStore, OutboxStore, queue.Queue, HTTPTracker), in process, with the Sync function's %s timeout as deadline, "+
		"delivering to an httptest tracker on loopback that answers OK for each message. Own tables and queue.", n, whole(timeout))
	res, err := env.Resources(ctx, "sync")
	if err != nil {
		return err
	}
	table, queueURL := res.Tables["WikiTable"], res.Queues["OutboundQueue"]
	tracker := newTracker()
	defer tracker.Close()

	db := env.NewCounted()
	if err := createIntegration(ctx, db.API, table, Tenant, syncService, tracker.URL); err != nil {
		return err
	}
	result := row.result("sync_10k", fmt.Sprintf("one integration.Sync run delivering %d NEW messages of one integration, in process, one round "+
		"(the run drains the backlog).", n), syncFloorText)
	rec := NewRecorder(db.API)
	ob := wikitable.NewOutboxStore(rec, table)
	q := queue.New(env.SQS(), queueURL)
	pub := integration.NewPublisher(q, ob)
	msgs := syncMessages(n)
	start := time.Now()
	if err := ob.Put(ctx, Tenant, msgs); err != nil {
		return fmt.Errorf("write %d outbox messages: %w", n, err)
	}
	written := time.Since(start)
	start = time.Now()
	if err := pub.Publish(ctx, Tenant, msgs); err != nil {
		return fmt.Errorf("publish %d messages: %w", n, err)
	}
	published := time.Since(start)

	s := integration.NewSync(integration.Deps{
		Store: wikitable.NewIntegrationStore(rec, table), Outbox: ob, Queue: q,
		Tracker:   &integration.HTTPTracker{Client: outbound.New(outbound.Options{Timeout: 10 * time.Second, AllowPrivate: true})},
		Publisher: pub, Logger: slog.New(slog.DiscardHandler),
	}, integration.SyncOptions{})
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	stop, err := startProfile(env, "sync")
	if err != nil {
		return err
	}
	defer stop()
	db.Reset()
	rec.Start()
	cpu := env.cpu()
	used := cpu.now()
	start = time.Now()
	rep, runErr := s.Run(runCtx)
	elapsed := time.Since(start)
	selfCPU := cpu.since(used).self
	recorded := rec.Stop()
	stop()
	serviceCalls := db.Calls.Counts()
	floor, err := syncFloor(ctx, env, table, q, msgs, recorded)
	if err != nil {
		return err
	}
	result.oneRound(elapsed, floor, db.API.Written(), recorded, serviceCalls, selfCPU, n)
	// Besides DynamoDB: ReceiveMessage (10 a call, estimated),
	// DeleteMessageBatch and the POSTs.
	result.Calls.Service += float64(ceilDiv(rep.Received, 10) + ceilDiv(rep.Settled, 10) + int(tracker.posts.Load()))

	posts, delivered := int(tracker.posts.Load()), int(tracker.messages.Load())
	row.add(fmt.Sprintf("messages delivered in one run (of %d)", n), "all", fmt.Sprintf("%d (report: %d delivered, %d refused, %d failed POSTs)",
		delivered, rep.Delivered, rep.Refused, rep.Failed), verdict(delivered == n && rep.Delivered == n))
	row.add("POSTs to the tracker", fmt.Sprintf("≤ ⌈N/100⌉ = %d", ceilDiv(n, 100)), fmt.Sprint(posts), verdict(posts <= ceilDiv(n, 100) && posts > 0))
	row.add("run duration", fmt.Sprintf("reported; Sync timeout %s, schedule every 3 min", whole(timeout)), secs(elapsed), Info)
	row.add("references received / settled from SQS", "", fmt.Sprintf("%d / %d", rep.Received, rep.Settled), Info)
	row.add("DynamoDB calls of the run", "", formatCalls(db.Calls.Counts()), Info)
	row.add("setup: outbox write / publish to SQS", "", fmt.Sprintf("%s / %s", secs(written), secs(published)), Info)
	if runErr != nil {
		row.note("The run reported errors: %v", runErr)
	}
	return nil
}

// syncMessages returns n NEW UPDATED messages in creation order.
func syncMessages(n int) []*outbox.Message {
	now := time.Now().UTC()
	msgs := make([]*outbox.Message, n)
	for i := range msgs {
		msgs[i] = &outbox.Message{
			ID: outbox.NewID(now.Add(time.Duration(i))), ServiceID: syncService, State: outbox.New, CreatedAt: now,
			Type: outbox.Updated, AuthorKey: "bench", AuthorName: "Bench", SpaceKey: Space, Key: seedKey(i),
			NewHTMLExcerpt: "<p>The system shall record every change of a requirement.</p>",
		}
	}
	return msgs
}

// tracker is a tracker's POST /rest/reqs/1/api that answers OK for each
// message and counts POSTs and messages.
type tracker struct {
	*httptest.Server
	posts, messages atomic.Int64
}

func newTracker() *tracker {
	t := &tracker{}
	t.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var batch []json.RawMessage
		if r.Method != http.MethodPost || r.URL.Path != integration.DefaultEndpoint {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&batch); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		t.posts.Add(1)
		t.messages.Add(int64(len(batch)))
		type result struct {
			ID     int    `json:"id"`
			Status string `json:"status"`
		}
		out := struct {
			Results []result `json:"results"`
		}{Results: make([]result, len(batch))}
		for i := range batch {
			out.Results[i] = result{ID: i + 1, Status: "OK"}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}))
	return t
}

// syncFloorText says what a sync run's floor is.
const syncFloorText = "the minimum of a run, right after it: the same number of SQS references (published untimed under a " +
	"scratch tenant, so the FIFO queue's deduplication does not drop them) received 10 a call and deleted 10 a call, " +
	"the run's outbox Query calls (recorded) sent again without filter or projection and the outbox items it read by " +
	"key (recorded) read again with BatchGetItem of 100, the items it " +
	"wrote (recorded) written again with BatchWriteItem of 25 under the scratch tenant, 8 calls at a time, and the " +
	"messages POSTed 100 a request to a tracker like the run's. Service calls count the run's DynamoDB calls, its " +
	"ReceiveMessage (10 a call, estimated from the references received), DeleteMessageBatch and POSTs."

// syncFloor times the minimum work of delivering msgs (see syncFloorText).
func syncFloor(ctx context.Context, env *Env, table string, q *queue.Queue, msgs []*outbox.Message, rec Recorded) (FloorRound, error) {
	refs := make([]integration.Ref, len(msgs))
	for i, m := range msgs {
		refs[i] = integration.RefOf(floorTenant, m)
	}
	envs := integration.Envelopes(refs)
	if _, err := q.Publish(ctx, envs); err != nil {
		return FloorRound{}, fmt.Errorf("floor: publish: %w", err)
	}
	bodies := make([][]byte, 0, ceilDiv(len(msgs), 100))
	for from := 0; from < len(msgs); from += 100 {
		b, err := json.Marshal(msgs[from:min(from+100, len(msgs))])
		if err != nil {
			return FloorRound{}, err
		}
		bodies = append(bodies, b)
	}
	floorTracker := newTracker()
	defer floorTracker.Close()

	db := env.DynamoDB()
	var round FloorRound
	start := time.Now()
	calls, err := drain(ctx, q, len(envs), time.Second)
	round.Calls += calls
	if err != nil {
		return FloorRound{}, fmt.Errorf("floor: %w", err)
	}
	dbRound, err := readWriteFloor(ctx, db, table, rec)
	if err != nil {
		return FloorRound{}, err
	}
	for _, b := range bodies {
		status, answer, err := do(ctx, http.MethodPost, floorTracker.URL+integration.DefaultEndpoint, "", b)
		if err != nil || status != http.StatusOK {
			return FloorRound{}, fmt.Errorf("floor: POST: %d %v %.100s", status, err, answer)
		}
		round.Calls++
	}
	took := time.Since(start)
	// The parts' own times are inside took.
	round = round.add(dbRound)
	round.Took = took
	return round, nil
}

// drain receives up to want envelopes of q, 10 a call, deleting each batch
// (10 a call), until want are received or three receives waiting up to
// wait find nothing; it returns the calls made.
func drain(ctx context.Context, q *queue.Queue, want int, wait time.Duration) (int, error) {
	calls := 0
	for got, empty := 0, 0; got < want && empty < 3; {
		recv, err := q.Receive(ctx, 10, wait)
		calls++
		if err != nil {
			return calls, err
		}
		if len(recv) == 0 {
			empty++
			continue
		}
		handles := make([]string, len(recv))
		for i, r := range recv {
			handles[i] = r.Handle
		}
		if err := q.Delete(ctx, handles); err != nil {
			return calls, err
		}
		calls++
		got += len(recv)
	}
	return calls, nil
}
