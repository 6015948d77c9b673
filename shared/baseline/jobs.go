package baseline

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// JobReport tells what one run of the worker did.
type JobReport struct {
	// Jobs is the number of jobs leased (and worked on) by the run.
	Jobs int
	// Completed and Failed count the jobs committed and given up.
	Completed, Failed int
	// Copies is the number of archived copies written.
	Copies int
}

// pendingBatch is how many pending jobs one run lists.
const pendingBatch = 100

// RunJobs is the background freeze worker (the WikiBaselineJobs function):
// it lists the pending freeze jobs of every tenant, oldest first, takes
// the lease of each that nobody works on, writes its copies from its
// cursor slice by slice, saving the progress after each, and commits the
// baseline when every copy is written. It stops starting slices when the
// budget ends (budget > 0: from now; else the context's deadline less
// JobReserve, or InlineBudget without one) but always writes at least one
// slice of the first job it leases, and then releases the lease of the
// unfinished job. A job whose runs failed MaxAttempts times, or that
// cannot be completed (its record exists already), is marked FAILED.
func (s *Service) RunJobs(ctx context.Context, budget time.Duration) (JobReport, error) {
	var rep JobReport
	now := s.Now()
	end := s.inlineEnd(ctx, now)
	if budget > 0 {
		end = now.Add(budget)
	}
	owner := s.owner()
	refs, err := s.store.Pending(ctx, pendingBatch)
	if err != nil {
		return rep, fmt.Errorf("list pending baseline jobs: %w", err)
	}
	var errs []error
	for _, ref := range refs {
		if rep.Jobs > 0 && !s.Now().Before(end) {
			break
		}
		job, err := s.store.Lease(ctx, ref, owner, end.Add(s.LeaseSlack), s.Now())
		if err != nil {
			errs = append(errs, fmt.Errorf("lease baseline %d of %s: %w", ref.Number, ref.SpaceKey, err))
			continue
		}
		if job == nil {
			continue
		}
		rep.Jobs++
		before := job.Count
		err = s.runJob(ctx, job, end)
		rep.Copies += job.Count - before
		switch {
		case err != nil:
			errs = append(errs, err)
		case job.Status == StatusComplete:
			rep.Completed++
		case job.Status == StatusFailed:
			rep.Failed++
		}
	}
	return rep, errors.Join(errs...)
}

// runJob works on a leased job until it is committed or end passes (after
// one slice at least).
func (s *Service) runJob(ctx context.Context, job *Job, end time.Time) error {
	in := keySet(job.Keys)
	wctx, cancel := s.writeContext(ctx)
	defer cancel()
	first := true
	for job.Cursor < len(job.Keys) && (first || s.Now().Before(end)) {
		first = false
		keys := job.Keys[job.Cursor:min(job.Cursor+s.slice(), len(job.Keys))]
		rows, err := s.source.Requirements(wctx, job.Tenant, job.SpaceKey, keys)
		if err != nil {
			return s.jobFailed(ctx, job, fmt.Errorf("read requirements: %w", err))
		}
		// Rows deleted since the selection are left out; any other row is
		// frozen as it is now.
		slices.SortFunc(rows, func(a, b *requirement.Requirement) int { return strings.Compare(query.Fold(a.Key), query.Fold(b.Key)) })
		copies, pages := archiveIn(job.SpaceKey, job.Number, rows, in)
		if err := s.store.PutCopies(wctx, job.Tenant, copies); err != nil {
			return s.jobFailed(ctx, job, err)
		}
		job.Cursor += len(keys)
		job.Count += len(copies)
		if !job.PagesLost {
			job.Pages = mergePages(job.Pages, pages)
		}
		if job.Cursor < len(job.Keys) {
			if err := s.store.Progress(wctx, job); err != nil {
				return s.leaseLost(ctx, job, err)
			}
		}
	}
	if job.Cursor < len(job.Keys) {
		job.LeaseUntil = time.Time{}
		if err := s.store.Progress(wctx, job); err != nil {
			return s.leaseLost(ctx, job, err)
		}
		return nil
	}
	if err := s.commit(wctx, job); err != nil {
		if errors.Is(err, apperr.ErrConflict) {
			// Cancelled meanwhile (the job is gone), or the record exists.
			return s.failJob(ctx, job, err)
		}
		return s.jobFailed(ctx, job, err)
	}
	return nil
}

// leaseLost handles a failed save of progress: a cancelled job (deleted by
// DELETE) has its copies written since removed; a job leased by another
// run is left to it; other errors count as a failed attempt.
func (s *Service) leaseLost(ctx context.Context, job *Job, err error) error {
	switch {
	case errors.Is(err, apperr.ErrNotFound):
		cctx, cancel := s.cleanupContext(ctx)
		defer cancel()
		if err := s.store.DeleteCopies(cctx, job.Tenant, job.SpaceKey, job.Number); err != nil {
			return fmt.Errorf("remove the copies of cancelled baseline %d of %s: %w", job.Number, job.SpaceKey, err)
		}
		return nil
	case errors.Is(err, apperr.ErrConflict):
		return nil
	}
	return s.jobFailed(ctx, job, err)
}

// jobFailed counts a failed attempt: the job is released for a later run,
// or marked FAILED after MaxAttempts.
func (s *Service) jobFailed(ctx context.Context, job *Job, err error) error {
	job.Attempts++
	if job.Attempts >= max(s.MaxAttempts, 1) {
		return s.failJob(ctx, job, err)
	}
	cctx, cancel := s.cleanupContext(ctx)
	defer cancel()
	job.LeaseUntil = time.Time{}
	if perr := s.store.Progress(cctx, job); perr != nil && !errors.Is(perr, apperr.ErrNotFound) && !errors.Is(perr, apperr.ErrConflict) {
		err = errors.Join(err, perr)
	}
	return fmt.Errorf("freeze baseline %d of %s (attempt %d): %w", job.Number, job.SpaceKey, job.Attempts, err)
}

// failJob marks the job FAILED with err's message.
func (s *Service) failJob(ctx context.Context, job *Job, err error) error {
	cctx, cancel := s.cleanupContext(ctx)
	defer cancel()
	msg := err.Error()
	if e := apperr.As(err); e != nil {
		msg = e.Message
	}
	job.Status, job.Message = StatusFailed, msg
	ferr := s.store.Fail(cctx, job, msg)
	if errors.Is(ferr, apperr.ErrNotFound) {
		// Cancelled meanwhile: remove what this run wrote since.
		ferr = s.store.DeleteCopies(cctx, job.Tenant, job.SpaceKey, job.Number)
	}
	if ferr != nil && !errors.Is(ferr, apperr.ErrConflict) {
		return fmt.Errorf("mark baseline %d of %s failed (%v): %w", job.Number, job.SpaceKey, err, ferr)
	}
	return nil
}
