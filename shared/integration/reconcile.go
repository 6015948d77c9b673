package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// ReconcileActor is the author of the messages a reconcile queues.
const ReconcileActor = "reqtrace"

// Reconcile repairs drift between the links a wiki's pages hold and what a
// tracker holds (docs/integrations.md, "Convergence"). Convergence is
// state-based: a lost, deleted or dead-lettered message is never replayed;
// the whole current set is sent again, which the tracker applies
// idempotently (a LINKS older than one it applied is ignored).
type Reconcile struct {
	d     Deps
	store ReconcileStore
}

var _ Reconciler = (*Reconcile)(nil)

// NewReconciler returns a Reconcile using Store, Publisher, Logger and Now
// of d, and store for the rows, messages and flags.
func NewReconciler(d Deps, store ReconcileStore) *Reconcile {
	return &Reconcile{d: d, store: store}
}

// maxMoveHops bounds how many moves in a row reconcile follows.
const maxMoveHops = 8

// publishEvery bounds the messages held before they are written and
// handed to the publisher (one envelope of MaxEnvelopeIDs ids).
const publishEvery = MaxEnvelopeIDs

// Run queues, for integration serviceID, a LINKS message (version 5) or
// the LINK messages (below 5) of every current ACTIVE requirement whose
// page holds, or once held, links to it, and answers how many messages it
// queued. A version-5 integration's pendingRemovals are then zero: the
// LINKS sets carry every removal.
func (r *Reconcile) Run(ctx context.Context, tenant, serviceID, actor string) (int, error) {
	d, err := r.d.Store.Get(ctx, tenant, serviceID)
	if errors.Is(err, apperr.ErrNotFound) {
		return 0, notFound(serviceID)
	}
	if err != nil {
		return 0, fmt.Errorf("reconcile %s: %w", serviceID, err)
	}
	now := r.d.now().UTC()
	seq := 0
	var batch []*outbox.Message
	queued := 0
	// A batch of messages is written and then published on its own
	// goroutine while the next rows are read, and the next batch is
	// written while it is published: at most two batches in flight, one
	// writing (the outbox store's 8 calls) and one publishing (SQS and the
	// enqueued marks), and a batch is published only once the one before
	// it was, so the messages reach SQS in id order.
	var inFlight []*reconcileFlush
	var flushErr error
	// settle waits for the oldest batch in flight to end.
	settle := func() {
		f := inFlight[0]
		inFlight = inFlight[1:]
		<-f.published
		queued += f.queued
		if f.err != nil && flushErr == nil {
			flushErr = f.err
		}
	}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		// The batch before the last one ends, and the last one is written.
		for len(inFlight) > 1 {
			settle()
		}
		var prev <-chan struct{}
		if len(inFlight) == 1 {
			last := inFlight[0]
			<-last.written
			if last.err != nil {
				return last.err
			}
			prev = last.published
		}
		if flushErr != nil {
			return flushErr
		}
		f := &reconcileFlush{written: make(chan struct{}), published: make(chan struct{})}
		msgs := batch
		batch, inFlight = nil, append(inFlight, f)
		go r.flush(ctx, tenant, serviceID, msgs, prev, f)
		return nil
	}
	wait := func() error {
		for len(inFlight) > 0 {
			settle()
		}
		return flushErr
	}
	add := func(m outbox.Message) {
		m.CreatedAt = now
		m.ID = outbox.NewID(now.Add(time.Duration(seq)))
		seq++
		batch = append(batch, &m)
	}
	// A MOVED row's links went with it to its new key on the tracker (the
	// MOVED message re-keys them): the row it moved to is reconciled too,
	// whether or not its page links to the integration.
	done := map[requirement.ID]bool{}
	var moved []requirement.ID
	visit := func(rows []*requirement.Requirement) error {
		for _, row := range rows {
			id := requirement.NewID(row.SpaceKey, row.Key, 0)
			if done[id] || row.Baseline != 0 {
				continue
			}
			done[id] = true
			if row.Status == requirement.Moved && row.NewSpaceKey != "" && row.NewKey != "" {
				moved = append(moved, requirement.NewID(row.NewSpaceKey, row.NewKey, 0))
			}
			if row.Status != requirement.Active {
				continue // trackers keep the links of DELETED rows
			}
			if d.Version >= 5 {
				add(outbox.LinksOf(actor, row, serviceID))
			} else {
				for _, l := range row.PageLinksFor(serviceID) {
					add(outbox.LinkOf(actor, row, serviceID, l))
				}
			}
			if len(batch) >= publishEvery {
				if err := flush(); err != nil {
					return err
				}
			}
		}
		return nil
	}
	err = r.store.PageLinked(ctx, tenant, serviceID, visit)
	for hops := 0; err == nil && len(moved) > 0 && hops < maxMoveHops; hops++ {
		targets := slices.DeleteFunc(moved, func(id requirement.ID) bool {
			return done[id]
		})
		moved = nil
		for chunk := range slices.Chunk(targets, 100) {
			var rows []*requirement.Requirement
			if rows, err = r.store.CurrentRows(ctx, tenant, chunk); err != nil {
				break
			}
			if err = visit(rows); err != nil {
				break
			}
		}
	}
	if err == nil {
		err = flush()
	}
	// Every batch in flight is waited for whatever happened: nothing
	// writes after Run returns.
	if werr := wait(); err == nil {
		err = werr
	}
	if err != nil {
		return queued, fmt.Errorf("reconcile %s: %w", serviceID, err)
	}
	if d.Version >= 5 {
		if err := r.store.ResetPendingRemovals(ctx, tenant, serviceID); err != nil {
			return queued, fmt.Errorf("reconcile %s: %w", serviceID, err)
		}
	}
	r.d.logger().InfoContext(ctx, "integration reconciled", "tenant", tenant, "service_id", serviceID,
		"version", d.Version, "queued", queued)
	return queued, nil
}

// reconcileFlush is one batch of a reconcile's messages in flight: written
// is closed once its write ended, published once it ended (written and, if
// the write succeeded, handed to the publisher); queued and err are set
// before written is closed.
type reconcileFlush struct {
	written, published chan struct{}
	queued             int
	err                error
}

// flush writes a batch of a reconcile's messages and, once the batch before
// it was published (prev closed; nil: none), publishes them. A failed
// publish is logged only: the messages are committed, and the sync
// function enqueues the pending ones.
func (r *Reconcile) flush(ctx context.Context, tenant, serviceID string, msgs []*outbox.Message, prev <-chan struct{}, f *reconcileFlush) {
	defer close(f.published)
	if err := r.store.AddMessages(ctx, tenant, msgs); err != nil {
		f.err = fmt.Errorf("write messages: %w", err)
		close(f.written)
		return
	}
	f.queued = len(msgs)
	close(f.written)
	if prev != nil {
		<-prev
	}
	if r.d.Publisher != nil {
		if err := r.d.Publisher.Publish(ctx, tenant, msgs); err != nil {
			r.d.logger().WarnContext(ctx, "reconcile messages committed but not enqueued; the sync function will enqueue them",
				"tenant", tenant, "service_id", serviceID, "messages", len(msgs), "error", err.Error())
		}
	}
}

// Flag implements Reconciler.
func (r *Reconcile) Flag(ctx context.Context, tenant, serviceID string) error {
	if err := r.store.FlagReconcile(ctx, tenant, serviceID, r.d.now().UTC()); err != nil {
		return fmt.Errorf("flag %s for reconcile: %w", serviceID, err)
	}
	return nil
}

// RunFlagged implements Reconciler: each flagged ACTIVE integration is
// reconciled, then its flag cleared (unless it was flagged again
// meanwhile). A DISABLED one stays flagged: it is reconciled once ACTIVE
// again. A flag of an integration that no longer exists is cleared.
func (r *Reconcile) RunFlagged(ctx context.Context) (int, error) {
	total := 0
	var errs []error
	err := r.store.Flagged(ctx, func(flags []Flag) (bool, error) {
		for _, f := range flags {
			if ctx.Err() != nil {
				return false, nil
			}
			d, err := r.d.Store.Get(ctx, f.Tenant, f.ServiceID)
			switch {
			case errors.Is(err, apperr.ErrNotFound):
			case err != nil:
				errs = append(errs, fmt.Errorf("reconcile %s/%s: %w", f.Tenant, f.ServiceID, err))
				continue
			case d.Status != Active:
				continue
			default:
				n, err := r.Run(ctx, f.Tenant, f.ServiceID, ReconcileActor)
				total += n
				if err != nil {
					errs = append(errs, err)
					continue
				}
			}
			if err := r.store.ClearReconcile(ctx, f); err != nil {
				errs = append(errs, fmt.Errorf("clear reconcile flag of %s/%s: %w", f.Tenant, f.ServiceID, err))
			}
		}
		return true, nil
	})
	if err != nil {
		errs = append(errs, err)
	}
	return total, errors.Join(errs...)
}
