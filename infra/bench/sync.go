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
	ob := wikitable.NewOutboxStore(db.API, table)
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
		Store: wikitable.NewIntegrationStore(db.API, table), Outbox: ob, Queue: q,
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
	start = time.Now()
	rep, runErr := s.Run(runCtx)
	elapsed := time.Since(start)
	stop()

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
