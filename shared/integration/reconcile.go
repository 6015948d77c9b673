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
	// A batch of messages is written and published on its own goroutine
	// while the next rows are read; one batch at a time, so the writes
	// keep the outbox store's 8 calls in flight and the messages reach
	// SQS in id order.
	var flushing chan flushResult
	wait := func() error {
		if flushing == nil {
			return nil
		}
		res := <-flushing
		flushing = nil
		queued += res.queued
		return res.err
	}
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := wait(); err != nil {
			return err
		}
		msgs, done := batch, make(chan flushResult, 1)
		batch, flushing = nil, done
		go func() { done <- r.flush(ctx, tenant, serviceID, msgs) }()
		return nil
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
	// The last batch is waited for whatever happened: nothing writes
	// after Run returns.
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

// flushResult is what one flush of a reconcile's messages did.
type flushResult struct {
	queued int
	err    error
}

// flush writes a batch of a reconcile's messages and publishes them. A
// failed publish is logged only: the messages are committed, and the sync
// function enqueues the pending ones.
func (r *Reconcile) flush(ctx context.Context, tenant, serviceID string, msgs []*outbox.Message) flushResult {
	if err := r.store.AddMessages(ctx, tenant, msgs); err != nil {
		return flushResult{err: fmt.Errorf("write messages: %w", err)}
	}
	if r.d.Publisher != nil {
		if err := r.d.Publisher.Publish(ctx, tenant, msgs); err != nil {
			r.d.logger().WarnContext(ctx, "reconcile messages committed but not enqueued; the sync function will enqueue them",
				"tenant", tenant, "service_id", serviceID, "messages", len(msgs), "error", err.Error())
		}
	}
	return flushResult{queued: len(msgs)}
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
