package wiki

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// RecoveryActor is the author recorded on the rows of a page that never had
// a committed version, when its recovery marks them DELETED.
const RecoveryActor = "reqtrace-recovery"

// errNoRecord is deleteUnsaved's answer to Recover for a page whose first
// save recorded nothing (and so wrote nothing).
var errNoRecord = errors.New("nothing recorded")

// Recover finishes what an operation on a page that did not finish left
// (Lease.Unfinished): it takes the page's lease and redoes the stored
// version, so that every row of the page is again as that version's save
// made it, and what the failed operation added is DELETED (a page that
// never had a committed version loses the rows its first save wrote). It
// reports whether it did: nothing is done when the page is not unfinished
// (an operation on it since reconciled it) or another operation holds its
// lease (that operation reconciles it, or leaves it listed).
func (s *Service) Recover(ctx context.Context, tenant, pageID string) (bool, error) {
	old, err := s.store.Page(ctx, tenant, pageID)
	if errors.Is(err, apperr.ErrNotFound) {
		err = s.deleteUnsaved(ctx, tenant, RecoveryActor, pageID, errNoRecord)
		if errors.Is(err, errNoRecord) || errors.Is(err, apperr.ErrConflict) {
			return false, nil
		}
		return err == nil, err
	}
	if err != nil {
		return false, err
	}
	lease, err := s.store.LeasePage(ctx, tenant, pageID, old.Version)
	if errors.Is(err, apperr.ErrConflict) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	ended := false
	defer s.release(ctx, tenant, lease, &ended)
	if !lease.Unfinished {
		return false, nil
	}
	if _, err := s.redo(ctx, tenant, old, lease, &ended); err != nil {
		return false, err
	}
	return true, nil
}

// RecoveryReport counts what a RecoverUnfinished pass did.
type RecoveryReport struct {
	// Listed pages were due for recovery; Recovered of them were redone;
	// Failed could not be (they stay listed for the next pass).
	Listed, Recovered, Failed int
}

// RecoverUnfinished recovers (Recover) up to limit pages that rs lists as
// due by now, across tenants, four at a time. A page that fails is logged
// and stays listed; the pass goes on.
func (s *Service) RecoverUnfinished(ctx context.Context, rs RecoveryStore, now time.Time, limit int) (RecoveryReport, error) {
	var rep RecoveryReport
	pages, err := rs.Unfinished(ctx, now, limit)
	if err != nil {
		return rep, err
	}
	rep.Listed = len(pages)
	type outcome struct{ done, failed bool }
	results := make(chan outcome, len(pages))
	sem := make(chan struct{}, 4)
	for _, p := range pages {
		sem <- struct{}{}
		go func() {
			defer func() { <-sem }()
			done, err := s.Recover(ctx, p.Tenant, p.PageID)
			if err != nil {
				slog.WarnContext(ctx, "page not recovered; the next pass retries", "tenant", p.Tenant, "page", p.PageID, "error", err.Error())
			}
			results <- outcome{done, err != nil}
		}()
	}
	for range pages {
		o := <-results
		if o.done {
			rep.Recovered++
		}
		if o.failed {
			rep.Failed++
		}
	}
	return rep, nil
}
