package integration

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/outbox"
)

// SyncOptions tune a sync run; zero fields take the defaults.
type SyncOptions struct {
	// PendingAge: NEW messages that are still pending (never reached SQS)
	// this long after their creation are re-enqueued. Default 1 minute.
	PendingAge time.Duration
	// DisabledDelay hides the envelopes of a DISABLED integration for this
	// long. Default 5 minutes.
	DisabledDelay time.Duration
	// ReceiveWait is the long-polling wait of each receive. Default 1 s.
	ReceiveWait time.Duration
	// Budget is the share of the time left before the context's deadline
	// the run may use before it stops starting work. Default 0.8.
	Budget float64
	// MaxRun bounds a run whose context has no deadline. Default 10 minutes.
	MaxRun time.Duration
	// SweepMargin is how far behind a finished sweep the next one starts,
	// so that messages committed late (ids taken before a slow commit) are
	// still seen. Default 10 minutes.
	SweepMargin time.Duration
	// Workers is how many integrations are served at once. Default 16.
	Workers int
	// TenantWorkers is how many of them may belong to one tenant, so that
	// one tenant's slow trackers never hold every worker. Default 4.
	TenantWorkers int
	// TrackerBudget bounds the time one integration is served in a run
	// (each POST is bounded by the HTTP client's timeout besides): a
	// tracker that answers slowly but in time cannot keep a worker for the
	// whole run. Default 60 s.
	TrackerBudget time.Duration
	// DeadLetters, when set, is the outbound dead-letter queue: each run
	// takes the envelopes SQS moved there, flags their integrations for
	// reconciliation (Deps.Reconciler, when set) and wakes them again.
	DeadLetters DeadLetterQueue
}

// DeadLetterQueue is the outbound queue's dead-letter queue as the sync run
// uses it (shared/queue.Queue at the DLQ's URL).
type DeadLetterQueue interface {
	// Receive takes up to n messages, waiting up to wait for the first.
	Receive(ctx context.Context, n int, wait time.Duration) ([]Received, error)
	// Delete removes received messages.
	Delete(ctx context.Context, handles []string) error
}

func (o SyncOptions) withDefaults() SyncOptions {
	o.PendingAge = cmp.Or(o.PendingAge, time.Minute)
	o.DisabledDelay = cmp.Or(o.DisabledDelay, 5*time.Minute)
	o.ReceiveWait = cmp.Or(o.ReceiveWait, time.Second)
	o.Budget = cmp.Or(o.Budget, 0.8)
	o.MaxRun = cmp.Or(o.MaxRun, 10*time.Minute)
	o.SweepMargin = cmp.Or(o.SweepMargin, 10*time.Minute)
	o.Workers = cmp.Or(o.Workers, 16)
	o.TenantWorkers = cmp.Or(o.TenantWorkers, 4)
	o.TrackerBudget = cmp.Or(o.TrackerBudget, time.Minute)
	return o
}

// Sync is the scheduled delivery of outbound messages (docs/integrations.md).
//
// An SQS message (an Envelope of outbox ids) is a wake-up call for its
// integration, not the unit of delivery. When an envelope arrives for an
// ACTIVE integration, the run takes a lease on the integration and sweeps
// its outbox (a merge of its partitions) in id (creation) order from the
// integration's SweepFrom mark, POSTing every NEW message in batches of MaxBatch; the
// envelope's ids that the sweep did not settle are then read (BatchGet):
// deleted or DONE ones are duplicates, NEW ones (committed after the sweep
// passed) start another sweep. An envelope is deleted from SQS once all its
// ids are settled. Order per tracker therefore comes from the outbox, and a
// backlog of N messages costs ⌈N/100⌉ POSTs whatever the envelopes.
//
// Integrations are served concurrently (SyncOptions.Workers at once, at
// most TenantWorkers of one tenant), each with its own deadline
// (TrackerBudget, and the HTTP client's timeout per POST), so that one
// tenant's hanging trackers cost that tenant only. One integration is
// only ever served by one worker at a time, which keeps its order.
type Sync struct {
	d   Deps
	opt SyncOptions
}

// NewSync returns a Sync using Store, Outbox, Queue, Tracker, Publisher,
// Mailer (nil: no e-mails), Reconciler (nil: no reconciliation), Logger
// and Now of d.
func NewSync(d Deps, opt SyncOptions) *Sync {
	return &Sync{d: d, opt: opt.withDefaults()}
}

// Report counts what a run did.
type Report struct {
	Reenqueued int // pending messages sent to SQS again
	Received   int // envelopes received
	Posts      int // POSTs to trackers
	Delivered  int // messages marked DONE
	Refused    int // of which the tracker answered ERROR
	Failed     int // failed POSTs
	Skipped    int // envelopes left in SQS (DISABLED or busy integration, failure, time up)
	Settled    int // envelopes deleted from SQS
	Mails      int // error e-mails sent
	// DeadLettered counts the envelopes taken from the dead-letter queue,
	// Flagged the integrations they flagged for reconciliation.
	DeadLettered int
	Flagged      int
	// Reconciled counts the messages the reconciliation of flagged
	// integrations queued; ReconcileErrors its failures (logged, never
	// failing the run).
	Reconciled      int
	ReconcileErrors int
}

type groupKey struct{ tenant, serviceID string }

type groupState int

const (
	groupActive   groupState = iota
	groupGone                // the integration does not exist
	groupDisabled            // DISABLED: envelopes wait
	groupFailed              // a POST failed in this run
	groupBusy                // another run holds the lease
	groupBroken              // an infrastructure error in this run
)

// group is one integration in a run. Its fields but pending, queued and
// running (guarded by run.mu) belong to the one worker serving it.
type group struct {
	key     groupKey
	loaded  bool
	d       *Descriptor
	state   groupState
	leased  bool
	swept   bool // a sweep ran in this run
	mailed  bool
	settled map[string]bool // ids known not to be NEW any more
	stopAt  time.Time       // the integration's deadline in this run

	pending []Received // received, not yet handled
	queued  bool       // waiting for a worker
	running bool       // a worker serves it
}

type run struct {
	s      *Sync
	owner  string
	stopAt time.Time
	groups map[groupKey]*group // the drain loop's only

	mu        sync.Mutex // guards rep, errs and the scheduling below
	rep       Report
	errs      []error
	ready     []*group // groups waiting for a worker, in arrival order
	busy      int
	perTenant map[string]int
	workers   sync.WaitGroup
	finished  chan struct{} // a worker handled envelopes (capacity 1)
	// retry are the receipt handles of envelopes of ACTIVE integrations
	// this run received but could not settle (a failed POST, another run's
	// lease, out of time): made visible again when the run ends, so that
	// the next run retries them whatever the queue's visibility timeout.
	retry []string
}

// Run takes the dead-lettered envelopes (flagging their integrations),
// reconciles the flagged integrations, re-enqueues pending messages, then
// drains the queue until it is empty or the time budget is spent. Errors
// of one integration are logged and do not stop the others; the returned
// error joins them (reconciliation errors are logged and counted only).
func (s *Sync) Run(ctx context.Context) (Report, error) {
	now := s.d.now()
	r := &run{s: s, owner: newOwner(), stopAt: now.Add(s.opt.MaxRun), groups: map[groupKey]*group{},
		perTenant: map[string]int{}, finished: make(chan struct{}, 1)}
	if dl, ok := ctx.Deadline(); ok {
		r.stopAt = now.Add(time.Duration(float64(dl.Sub(now)) * s.opt.Budget))
	}
	defer r.release(ctx)
	r.deadLetters(ctx)
	r.reconcile(ctx)
	if err := r.reenqueue(ctx); err != nil {
		r.fail(ctx, nil, fmt.Errorf("re-enqueue pending messages: %w", err))
	}
	if err := r.drain(ctx); err != nil {
		r.fail(ctx, nil, err)
	}
	r.retryLater(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.rep, errors.Join(r.errs...)
}

// count adds n to a counter of the report.
func (r *run) count(field *int, n int) {
	r.mu.Lock()
	*field += n
	r.mu.Unlock()
}

// deadLetters takes the envelopes SQS moved to the dead-letter queue after
// too many failed runs. Their messages are still NEW in the outbox; the
// integration is flagged for reconciliation (docs/integrations.md) and, when ACTIVE,
// woken by publishing the envelope to the outbound queue again (the
// reconciliation queues LINKS only, and other NEW messages also need a
// wake-up). An envelope whose integration could not be flagged or woken
// stays in the dead-letter queue for the next run.
func (r *run) deadLetters(ctx context.Context) {
	q, rec := r.s.opt.DeadLetters, r.s.d.Reconciler
	if q == nil {
		return
	}
	log := r.s.d.logger()
	status := map[groupKey]groupState{}
	flagged := map[groupKey]bool{}
	for !r.expired() {
		recv, err := q.Receive(ctx, 10, r.s.opt.ReceiveWait)
		if err != nil {
			log.WarnContext(ctx, "sync: cannot receive dead-lettered envelopes", "error", err.Error())
			return
		}
		if len(recv) == 0 {
			return
		}
		r.count(&r.rep.DeadLettered, len(recv))
		var done []string
		for _, m := range recv {
			if m.Malformed {
				done = append(done, m.Handle)
				continue
			}
			k := groupKey{m.Envelope.Tenant, m.Envelope.ServiceID}
			st, ok := status[k]
			if !ok {
				st = groupActive
				d, err := r.s.d.Store.Get(ctx, k.tenant, k.serviceID)
				switch {
				case errors.Is(err, apperr.ErrNotFound):
					st = groupGone
				case err != nil:
					log.WarnContext(ctx, "sync: cannot read the integration of a dead-lettered envelope", "tenant", k.tenant,
						"service_id", k.serviceID, "error", err.Error())
					continue
				case d.Status == Disabled:
					st = groupDisabled
				}
				status[k] = st
			}
			if st == groupGone {
				done = append(done, m.Handle)
				continue
			}
			if rec != nil && !flagged[k] {
				if err := rec.Flag(ctx, k.tenant, k.serviceID); err != nil {
					log.WarnContext(ctx, "sync: cannot flag an integration for reconciliation", "tenant", k.tenant,
						"service_id", k.serviceID, "error", err.Error())
					continue
				}
				flagged[k] = true
				r.count(&r.rep.Flagged, 1)
			}
			if st == groupActive {
				// A DISABLED integration is woken when set ACTIVE again.
				// A fresh wake-up: the same envelope again could be dropped
				// as a duplicate within SQS's deduplication window.
				e := m.Envelope
				wake := e
				if len(e.IDs) > 0 {
					wake = WakeEnvelope(e.Tenant, e.ServiceID, e.IDs[0])
				}
				if _, err := r.s.d.Queue.Publish(ctx, []Envelope{wake}); err != nil {
					log.WarnContext(ctx, "sync: cannot wake the integration of a dead-lettered envelope", "tenant", k.tenant,
						"service_id", k.serviceID, "error", err.Error())
					continue
				}
			}
			done = append(done, m.Handle)
		}
		if len(done) > 0 {
			r.queueErr(ctx, q.Delete(ctx, done))
		}
		if len(done) < len(recv) {
			return // the rest waits for the next run
		}
	}
}

// reconcile asks the Reconciler to reconcile the flagged integrations,
// within half of the run's budget so that delivery keeps the rest. Its
// messages are published by it and delivered by this run's drain.
func (r *run) reconcile(ctx context.Context) {
	rec := r.s.d.Reconciler
	if rec == nil || r.expired() {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, r.stopAt.Sub(r.s.d.now())/2)
	defer cancel()
	n, err := rec.RunFlagged(rctx)
	r.count(&r.rep.Reconciled, n)
	if err != nil {
		r.count(&r.rep.ReconcileErrors, 1)
		r.s.d.logger().ErrorContext(ctx, "sync: reconciling flagged integrations failed", "queued", n, "error", err.Error())
	}
}

func newOwner() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func (r *run) expired() bool { return !r.s.d.now().Before(r.stopAt) }

// fail records an error of the run, logged once here.
func (r *run) fail(ctx context.Context, g *group, err error) {
	log := r.s.d.logger()
	if g != nil {
		log = log.With("tenant", g.key.tenant, "service_id", g.key.serviceID)
		if g.state == groupActive {
			g.state = groupBroken
		}
	}
	log.ErrorContext(ctx, "sync run error", "error", err.Error())
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
}

// reenqueue publishes the NEW messages of every tenant that never reached
// SQS (the writer crashed or SQS failed between commit and publish).
func (r *run) reenqueue(ctx context.Context) error {
	cutoff := r.s.d.now().Add(-r.s.opt.PendingAge)
	return r.s.d.Outbox.Pending(ctx, cutoff, func(page []Pending) (bool, error) {
		refs := make([]Ref, len(page))
		for i, p := range page {
			refs[i] = RefOf(p.Tenant, p.Message)
		}
		if err := r.s.d.Publisher.publish(ctx, refs); err != nil {
			return false, err
		}
		r.count(&r.rep.Reenqueued, len(refs))
		return !r.expired(), nil
	})
}

// drain receives envelopes until the queue answers none while no worker
// is busy, or time is up, and hands each integration's envelopes to the
// workers (schedule); it returns once every worker is done.
func (r *run) drain(ctx context.Context) error {
	defer r.workers.Wait()
	for !r.expired() {
		recv, err := r.s.d.Queue.Receive(ctx, 10, r.s.opt.ReceiveWait)
		if err != nil {
			return fmt.Errorf("receive envelopes: %w", err)
		}
		if len(recv) == 0 {
			// Envelopes of the integrations being served come back once
			// their workers delete or hide the ones they hold: wait for one.
			if r.idle() {
				return nil
			}
			r.waitWorker(ctx)
			continue
		}
		r.count(&r.rep.Received, len(recv))
		var order []groupKey
		byGroup := map[groupKey][]Received{}
		var malformed []string
		for _, m := range recv {
			if m.Malformed {
				malformed = append(malformed, m.Handle)
				continue
			}
			k := groupKey{m.Envelope.Tenant, m.Envelope.ServiceID}
			if _, ok := byGroup[k]; !ok {
				order = append(order, k)
			}
			byGroup[k] = append(byGroup[k], m)
		}
		if len(malformed) > 0 {
			r.s.d.logger().WarnContext(ctx, "sync: deleting malformed outbound envelopes", "count", len(malformed))
			r.queueErr(ctx, r.s.d.Queue.Delete(ctx, malformed))
		}
		for _, k := range order {
			r.dispatch(ctx, r.group(k), byGroup[k])
		}
	}
	return nil
}

// idle reports whether no integration is being served or waiting.
func (r *run) idle() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.busy == 0 && len(r.ready) == 0
}

// waitWorker waits until a worker handled envelopes, for at most the
// receive wait.
func (r *run) waitWorker(ctx context.Context) {
	t := time.NewTimer(r.s.opt.ReceiveWait)
	defer t.Stop()
	select {
	case <-r.finished:
	case <-t.C:
	case <-ctx.Done():
	}
}

// dispatch gives received envelopes to their integration's worker,
// starting one when a slot is free.
func (r *run) dispatch(ctx context.Context, g *group, recv []Received) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g.pending = append(g.pending, recv...)
	if !g.queued && !g.running {
		g.queued = true
		r.ready = append(r.ready, g)
	}
	r.schedule(ctx)
}

// schedule starts workers for ready groups, oldest first, while fewer than
// Workers run, skipping groups of tenants that already have TenantWorkers.
// r.mu is held.
func (r *run) schedule(ctx context.Context) {
	for i := 0; i < len(r.ready) && r.busy < r.s.opt.Workers; {
		g := r.ready[i]
		if r.perTenant[g.key.tenant] >= r.s.opt.TenantWorkers {
			i++
			continue
		}
		r.ready = slices.Delete(r.ready, i, i+1)
		g.queued, g.running = false, true
		r.busy++
		r.perTenant[g.key.tenant]++
		r.workers.Add(1)
		go r.serve(ctx, g)
	}
}

// serve is one worker: it handles g's envelopes until none are pending,
// then frees its slot.
func (r *run) serve(ctx context.Context, g *group) {
	defer r.workers.Done()
	for {
		r.mu.Lock()
		recv := g.pending
		g.pending = nil
		if len(recv) == 0 {
			g.running = false
			r.busy--
			r.perTenant[g.key.tenant]--
			r.schedule(ctx)
			r.mu.Unlock()
			r.signal()
			return
		}
		r.mu.Unlock()
		r.load(ctx, g)
		r.handle(ctx, g, recv)
		r.signal()
	}
}

// signal wakes the drain loop waiting for a worker.
func (r *run) signal() {
	select {
	case r.finished <- struct{}{}:
	default:
	}
}

// group returns the state of an integration in this run.
func (r *run) group(k groupKey) *group {
	if g, ok := r.groups[k]; ok {
		return g
	}
	g := &group{key: k, settled: map[string]bool{}}
	r.groups[k] = g
	return g
}

// load reads an integration once per run, on its worker, and starts its
// deadline.
func (r *run) load(ctx context.Context, g *group) {
	if g.loaded {
		return
	}
	g.loaded = true
	g.stopAt = r.s.d.now().Add(r.s.opt.TrackerBudget)
	if g.stopAt.After(r.stopAt) {
		g.stopAt = r.stopAt
	}
	d, err := r.s.d.Store.Get(ctx, g.key.tenant, g.key.serviceID)
	switch {
	case errors.Is(err, apperr.ErrNotFound):
		g.state = groupGone
	case err != nil:
		r.fail(ctx, g, fmt.Errorf("get integration %s: %w", g.key.serviceID, err))
	case d.Status == Disabled:
		g.d, g.state = d, groupDisabled
	default:
		g.d = d
	}
}

// expiredFor reports whether g's deadline (or the run's) has passed.
func (r *run) expiredFor(g *group) bool { return !r.s.d.now().Before(g.stopAt) }

func handles(recv []Received) []string {
	out := make([]string, len(recv))
	for i, m := range recv {
		out[i] = m.Handle
	}
	return out
}

// handle processes the envelopes of one integration from one receive.
// Errors are recorded on the group or logged: an envelope SQS fails to
// delete or hide comes back later and is then settled or skipped again.
func (r *run) handle(ctx context.Context, g *group, recv []Received) {
	switch g.state {
	case groupGone:
		// Nothing can be delivered to an integration that does not exist.
		r.count(&r.rep.Settled, len(recv))
		r.queueErr(ctx, r.s.d.Queue.Delete(ctx, handles(recv)))
		return
	case groupDisabled:
		// Nothing is sent; the messages stay NEW in the outbox, which is
		// the record of truth. The envelopes are deleted rather than
		// hidden: an envelope in flight blocks every later one of its FIFO
		// group, so a hidden one would hold back the integration for the
		// whole delay after it is set ACTIVE again. Setting it ACTIVE wakes
		// it (a fresh envelope) and flags it for reconcile.
		r.count(&r.rep.Skipped, len(recv))
		r.queueErr(ctx, r.s.d.Queue.Delete(ctx, handles(recv)))
		return
	}
	if g.state != groupActive || r.expiredFor(g) {
		// Failed, busy, broken or out of time: keep them away for the rest
		// of this run; the next run retries.
		r.count(&r.rep.Skipped, len(recv))
		hide := min(max(r.stopAt.Sub(r.s.d.now())+30*time.Second, 30*time.Second), 12*time.Hour)
		r.queueErr(ctx, r.s.d.Queue.ChangeVisibility(ctx, handles(recv), hide))
		r.keep(handles(recv))
		return
	}
	var unknown []string
	seen := map[string]bool{}
	for _, m := range recv {
		for _, id := range m.Envelope.IDs {
			if !g.settled[id] && !seen[id] {
				seen[id] = true
				unknown = append(unknown, id)
			}
		}
	}
	if len(unknown) > 0 {
		if err := r.settle(ctx, g, unknown); err != nil {
			r.fail(ctx, g, err)
		}
	}
	var done []string
	for _, m := range recv {
		if !slices.ContainsFunc(m.Envelope.IDs, func(id string) bool { return !g.settled[id] }) {
			done = append(done, m.Handle)
		}
	}
	r.count(&r.rep.Settled, len(done))
	r.count(&r.rep.Skipped, len(recv)-len(done))
	if len(done) > 0 {
		r.queueErr(ctx, r.s.d.Queue.Delete(ctx, done))
	}
	if len(done) < len(recv) {
		var left []string
		for _, m := range recv {
			if !slices.Contains(done, m.Handle) {
				left = append(left, m.Handle)
			}
		}
		r.keep(left)
	}
}

// keep records envelopes to make visible again when the run ends.
func (r *run) keep(handles []string) {
	r.mu.Lock()
	r.retry = append(r.retry, handles...)
	r.mu.Unlock()
}

// retryLater makes the envelopes the run could not settle visible again
// (ChangeMessageVisibility 0), so that one sync run after a tracker answers
// again delivers its backlog, instead of its envelopes waiting out the
// visibility timeout (120 s) or the rest of this run's budget: "one sync run
// after the trackers recover" is what convergence promises. A failure is
// logged; the envelopes then come back after their timeout.
func (r *run) retryLater(ctx context.Context) {
	r.mu.Lock()
	handles := r.retry
	r.retry = nil
	r.mu.Unlock()
	for chunk := range slices.Chunk(handles, 10) {
		r.queueErr(ctx, r.s.d.Queue.ChangeVisibility(context.WithoutCancel(ctx), chunk, 0))
	}
}

// queueErr logs a failed delete or hide of envelopes.
func (r *run) queueErr(ctx context.Context, err error) {
	if err != nil {
		r.s.d.logger().WarnContext(ctx, "sync: outbound queue operation failed", "error", err.Error())
	}
}

// settle settles the ids of the envelopes received for an ACTIVE
// integration: the first time in a run it sweeps the integration's
// backlog, then it reads the ids the sweeps did not settle; a NEW one
// among them starts another sweep.
func (r *run) settle(ctx context.Context, g *group, ids []string) error {
	if !g.swept {
		if ok, err := r.lease(ctx, g); !ok || err != nil {
			return err
		}
		g.swept = true
		if err := r.sweep(ctx, g, nil); err != nil || g.state != groupActive {
			return err
		}
		ids = slices.DeleteFunc(ids, func(id string) bool { return g.settled[id] })
		if len(ids) == 0 {
			return nil
		}
	}
	refs := make([]Ref, len(ids))
	for i, id := range ids {
		refs[i] = Ref{Tenant: g.key.tenant, ServiceID: g.key.serviceID, ID: id}
	}
	got, err := r.s.d.Outbox.GetMany(ctx, refs)
	if err != nil {
		return fmt.Errorf("load %d outbound messages: %w", len(refs), err)
	}
	var fresh []*outbox.Message
	for _, ref := range refs {
		m := got[ref]
		if m == nil || m.State != outbox.New {
			g.settled[ref.ID] = true // deleted, or delivered before: a duplicate
			continue
		}
		fresh = append(fresh, m)
	}
	if len(fresh) == 0 || r.expiredFor(g) {
		return nil
	}
	return r.sweep(ctx, g, fresh)
}

// leaseGrace is how long a lease outlives its group's deadline: the last
// POST (HTTP_TIMEOUT, 10 s by default) and the writes that record it.
const leaseGrace = 30 * time.Second

// lease makes this run the only one delivering to g's integration; false
// (and the group busy) when another run holds it.
func (r *run) lease(ctx context.Context, g *group) (bool, error) {
	if g.leased {
		return true, nil
	}
	// The lease lasts as long as this run may serve the integration (its
	// TrackerBudget, cut by the run's deadline) plus leaseGrace for a POST
	// still in flight at that point, not as long as the run: a run killed
	// while holding it (a crash, an out-of-memory kill) then holds back the
	// integration's deliveries for about a minute and a half, not for the
	// whole run and two minutes more (12 minutes with Sync's 600 s timeout).
	ok, err := r.s.d.Store.AcquireLease(ctx, g.key.tenant, g.key.serviceID, r.owner, r.s.d.now(), g.stopAt.Add(leaseGrace))
	if err != nil {
		return false, fmt.Errorf("lease integration %s: %w", g.key.serviceID, err)
	}
	if !ok {
		g.state = groupBusy
		return false, nil
	}
	g.leased = true
	return true, nil
}

// sweep delivers the given NEW messages older than the integration's
// SweepFrom mark (committed late), then every NEW message from the mark, in
// id order and in batches of MaxBatch, and moves the mark.
func (r *run) sweep(ctx context.Context, g *group, fresh []*outbox.Message) error {
	from := g.d.SweepFrom
	slices.SortFunc(fresh, func(a, b *outbox.Message) int { return strings.Compare(a.ID, b.ID) })
	var batch []*outbox.Message
	queued := map[string]bool{}
	add := func(m *outbox.Message) {
		if !g.settled[m.ID] && !queued[m.ID] {
			queued[m.ID] = true
			batch = append(batch, m)
		}
	}
	// frontier is the smallest id that may still be NEW after the sweep; ""
	// when the sweep reached the end.
	frontier, stopped := "", false
	lower := func(id string) {
		if frontier == "" || id < frontier {
			frontier = id
		}
	}
	// The DONE mark of a delivered batch runs while the next batch is
	// POSTed, and a batch's mark starts only once the mark before it
	// landed: POSTs stay one at a time and in order, and a mark that fails
	// leaves every later message NEW too, so the next run delivers them
	// again in id order (a later message is never DONE while an earlier one
	// of a failed mark is delivered after it). A message POSTed while the
	// mark before it failed is at worst delivered again, which trackers
	// accept.
	var marking *pendingMark
	finish := func() error {
		pm := marking
		if pm == nil {
			return nil
		}
		marking = nil
		err := r.finishMark(ctx, g, pm)
		if err != nil {
			lower(pm.batch[0].ID)
		}
		return err
	}
	send := func(all bool) error {
		for len(batch) >= MaxBatch || (all && len(batch) > 0) {
			n := min(len(batch), MaxBatch)
			pm, err := r.deliver(ctx, g, batch[:n])
			if err != nil {
				lower(batch[0].ID)
				return err
			}
			batch = batch[n:]
			if err := finish(); err != nil {
				return err
			}
			r.startMark(ctx, pm)
			marking = pm
		}
		return nil
	}
	for _, m := range fresh {
		if m.ID < from {
			add(m)
		}
	}
	last := ""
	err := r.s.d.Outbox.ScanNew(ctx, g.key.tenant, g.key.serviceID, from, func(page []*outbox.Message) (bool, error) {
		for _, m := range page {
			add(m)
			last = m.ID
		}
		if err := send(false); err != nil {
			return false, err
		}
		if r.expiredFor(g) {
			stopped = true
			return false, nil
		}
		return true, nil
	})
	if err == nil && !stopped {
		err = send(true)
	}
	// The mark still running is waited for whatever happened: the sweep
	// mark below must not pass a message whose mark failed.
	if merr := finish(); merr != nil && err == nil {
		err = merr
	}
	if stopped && frontier == "" {
		frontier = last
		if len(batch) > 0 {
			frontier = batch[0].ID
		}
	}
	mark := r.s.d.now()
	if t, ok := idTime(frontier); ok && t.Before(mark) {
		mark = t
	}
	next := idPrefix(mark.Add(-r.s.opt.SweepMargin))
	if next != g.d.SweepFrom {
		if serr := r.s.d.Store.SetSweepFrom(ctx, g.key.tenant, g.key.serviceID, next); serr != nil {
			err = errors.Join(err, fmt.Errorf("move the sweep mark of integration %s: %w", g.key.serviceID, serr))
		} else {
			g.d.SweepFrom = next
		}
	}
	var de *DeliveryError
	if errors.As(err, &de) {
		return nil // recorded by post; the group is failed
	}
	return err
}

// pendingMark is the DONE mark of one delivered batch: its outcomes,
// marked on a goroutine of their own (startMark); finishMark waits for it.
type pendingMark struct {
	batch    []*outbox.Message
	outcomes []Outcome
	refused  []string // the messages the tracker refused, for the e-mail
	done     chan error
}

// deliver POSTs one batch and answers the DONE mark of its messages with
// the tracker's outcomes, not started (startMark). A failed POST is
// recorded on the messages and answered as a *DeliveryError.
func (r *run) deliver(ctx context.Context, g *group, batch []*outbox.Message) (*pendingMark, error) {
	refs := make([]Ref, len(batch))
	for i, m := range batch {
		refs[i] = RefOf(g.key.tenant, m)
	}
	r.count(&r.rep.Posts, 1)
	// The POST may take what is left of the integration's deadline (the
	// HTTP client's timeout bounds each POST besides); running out of it is
	// a failed POST like a timeout, not an error of the run.
	budget := max(g.stopAt.Sub(r.s.d.now()), time.Second)
	pctx, cancel := context.WithTimeout(ctx, budget)
	results, err := r.s.d.Tracker.Deliver(pctx, g.d, batch)
	timedOut := errors.Is(pctx.Err(), context.DeadlineExceeded)
	cancel()
	if err != nil && timedOut && ctx.Err() == nil && !errors.As(err, new(*DeliveryError)) {
		err = &DeliveryError{Err: fmt.Errorf("no answer within the integration's time budget in this sync run (%s)", budget.Round(time.Second))}
	}
	var de *DeliveryError
	if errors.As(err, &de) {
		r.count(&r.rep.Failed, 1)
		g.state = groupFailed
		if rerr := r.s.d.Outbox.RecordFailure(ctx, refs, de.LastResponse()); rerr != nil {
			r.fail(ctx, g, fmt.Errorf("record a delivery failure: %w", rerr))
			g.state = groupFailed
		}
		r.s.d.logger().WarnContext(ctx, "delivery failed", "tenant", g.key.tenant, "service_id", g.key.serviceID,
			"messages", len(batch), "error", de.Error(), "last_response", de.LastResponse())
		r.mail(ctx, g, fmt.Sprintf("POST %s failed: %s\n\n%d message(s) stay NEW and are retried by the next sync runs.",
			g.d.URL(), de.LastResponse(), len(batch)))
		return nil, de
	}
	if err != nil {
		return nil, fmt.Errorf("deliver to integration %s: %w", g.key.serviceID, err)
	}
	pm := &pendingMark{batch: batch, outcomes: make([]Outcome, len(batch)), done: make(chan error, 1)}
	for i, res := range results {
		pm.outcomes[i] = Outcome{Ref: refs[i], LastResponse: res.LastResponse()}
		if !res.OK() {
			pm.refused = append(pm.refused, fmt.Sprintf("%s %s/%s: %s", batch[i].Type, batch[i].SpaceKey, batch[i].Key, clip(res.Message, 300)))
		}
	}
	return pm, nil
}

// startMark marks a delivered batch's messages DONE with their outcomes,
// on a goroutine of its own; finishMark waits for it.
func (r *run) startMark(ctx context.Context, pm *pendingMark) {
	go func() { pm.done <- r.s.d.Outbox.MarkDone(ctx, pm.outcomes) }()
}

// finishMark waits for the DONE mark of a delivered batch and records it
// on the group (on the worker's goroutine, which owns the group).
func (r *run) finishMark(ctx context.Context, g *group, pm *pendingMark) error {
	if err := <-pm.done; err != nil {
		return fmt.Errorf("mark %d delivered messages done: %w", len(pm.batch), err)
	}
	for _, m := range pm.batch {
		g.settled[m.ID] = true
	}
	r.count(&r.rep.Delivered, len(pm.batch))
	r.count(&r.rep.Refused, len(pm.refused))
	if len(pm.refused) > 0 {
		r.mail(ctx, g, fmt.Sprintf("The tracker at %s refused %d message(s); they are DONE with the error as their last response:\n\n%s",
			g.d.URL(), len(pm.refused), strings.Join(pm.refused[:min(len(pm.refused), 20)], "\n")))
	}
	return nil
}

// mail sends an API error e-mail to the integration's sendErrorsToEmail, at
// most one per run and one per SendErrorsToEmailThrottle across runs (the
// claim is a conditional write, so concurrent runs cannot both send).
func (r *run) mail(ctx context.Context, g *group, detail string) {
	if g.mailed || g.d.SendErrorsToEmail == "" || r.s.d.Mailer == nil {
		return
	}
	g.mailed = true
	now := r.s.d.now()
	ok, err := r.s.d.Store.ClaimErrorMail(ctx, g.key.tenant, g.key.serviceID, now, g.d.Throttle())
	if err != nil {
		r.fail(ctx, g, fmt.Errorf("claim the error e-mail of integration %s: %w", g.key.serviceID, err))
		return
	}
	if !ok {
		return
	}
	subject := fmt.Sprintf("[reqtrace] API error sending to %s", cmp.Or(g.d.Label, g.d.ServiceID))
	body := fmt.Sprintf("Integration: %s (serviceId %s)\nTime: %s\n\n%s\n\nQueue: GET /rest/reqs/1/integration/%s/queue/outbound?includeLastRespnse=true\nAt most one such e-mail is sent every %d minute(s) (sendErrorsToEmailThrottle).\n",
		g.d.Label, g.d.ServiceID, now.UTC().Format(time.RFC3339), detail, g.d.ServiceID, g.d.SendErrorsToEmailThrottle)
	if err := r.s.d.Mailer.Send(ctx, g.d.SendErrorsToEmail, subject, body); err != nil {
		r.s.d.logger().WarnContext(ctx, "cannot send an API error e-mail", "tenant", g.key.tenant,
			"service_id", g.key.serviceID, "error", err.Error())
		return
	}
	r.count(&r.rep.Mails, 1)
}

// release ends the leases this run holds.
func (r *run) release(ctx context.Context) {
	ctx = context.WithoutCancel(ctx)
	for _, g := range r.groups {
		if g.leased {
			if err := r.s.d.Store.ReleaseLease(ctx, g.key.tenant, g.key.serviceID, r.owner); err != nil {
				r.s.d.logger().WarnContext(ctx, "cannot release a sync lease", "service_id", g.key.serviceID, "error", err.Error())
			}
		}
	}
}

// idTime is the creation time an outbox id starts with (outbox.NewID).
func idTime(id string) (time.Time, bool) {
	if len(id) < 16 {
		return time.Time{}, false
	}
	n, err := strconv.ParseUint(id[:16], 16, 63)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, int64(n)), true
}

// idPrefix is the id prefix of the messages created at t.
func idPrefix(t time.Time) string {
	if t.UnixNano() <= 0 {
		return ""
	}
	return fmt.Sprintf("%016x", t.UnixNano())
}
