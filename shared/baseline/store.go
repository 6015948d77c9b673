package baseline

import (
	"context"
	"time"

	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Page is what a freeze needs to know of a wiki page.
type Page struct {
	ID       string
	SpaceKey string
	Title    string
	ParentID string
	// Keys are the keys of the requirements the page defines and owns.
	Keys []string
}

// Source reads what a freeze selects from: spaces, pages and the current
// requirement rows. Errors other than those listed are internal.
type Source interface {
	// SpaceExists reports whether the tenant has a space of that key (a
	// registered space, or one holding requirement rows).
	SpaceExists(ctx context.Context, tenant, space string) (bool, error)
	// Page returns a page without its body, or apperr.ErrNotFound.
	Page(ctx context.Context, tenant, id string) (*Page, error)
	// PagesTitled returns the pages whose title may equal title ignoring
	// case, with their titles: a superset of those query.SameTitle
	// accepts, which the caller keeps.
	PagesTitled(ctx context.Context, tenant, title string) ([]requirement.PageRef, error)
	// Children returns the pages whose parent is id (none: an empty slice).
	Children(ctx context.Context, tenant, id string) ([]*Page, error)
	// SpaceRequirements calls fn with every current row of the space (stubs
	// excluded, whatever their status), in key order, until fn returns
	// false.
	SpaceRequirements(ctx context.Context, tenant, space string, fn func(*requirement.Requirement) bool) error
	// Requirements returns the current rows of the space among keys that
	// exist (stubs excluded), in any order.
	Requirements(ctx context.Context, tenant, space string, keys []string) ([]*requirement.Requirement, error)
}

// Job is a freeze in progress: the baseline it will commit (Status
// FREEZING or FAILED, Count = copies written so far, Total = selected),
// the keys it selected, how far it got and who holds its lease.
type Job struct {
	Baseline
	// Tenant owns the job (the worker reads jobs of every tenant).
	Tenant string
	// Keys are the selected requirement keys, in key order.
	Keys []string
	// Cursor is how many of Keys have been frozen.
	Cursor int
	// Pages is the page summary of the copies written so far; PagesLost
	// is true when it grew too large to keep (the record then has none).
	Pages     []PageCount
	PagesLost bool
	// Owner holds the lease until LeaseUntil (zero: nobody).
	Owner      string
	LeaseUntil time.Time
	// Attempts counts the runs that failed on this job.
	Attempts int
	// KeysID names where the store keeps Keys ("" for its default).
	KeysID string
}

// JobRef names a pending job (gsi1 FREEZE#PENDING).
type JobRef struct {
	Tenant   string
	SpaceKey string
	Number   int
}

// Store persists baselines, their archived copies and freeze jobs.
type Store interface {
	// BeginNext numbers a new freeze (job.Number: the space's next
	// number) and writes its job (its keys, progress 0, its lease held by
	// job.Owner until job.LeaseUntil), listed as pending for the worker,
	// atomically: a number is taken only with a job that the worker will
	// finish, so a space's numbers are dense, and concurrent callers
	// always get distinct numbers. apperr.ErrConflict when the space has
	// used every number.
	BeginNext(ctx context.Context, job *Job) error
	// Begin writes the job of a freeze numbered job.Number as BeginNext
	// does, without taking the number (seeding and tests).
	Begin(ctx context.Context, job *Job) error
	// Progress saves job's Count, Cursor, Pages, Attempts and lease, on
	// condition that job.Owner still holds the lease. apperr.ErrNotFound
	// when the job is gone (cancelled by a DELETE), apperr.ErrConflict
	// when another owner holds it.
	Progress(ctx context.Context, job *Job) error
	// Fail marks the job FAILED with message (no longer pending), on
	// condition that job.Owner holds the lease.
	Fail(ctx context.Context, job *Job, message string) error
	// Pending lists up to limit pending jobs of every tenant, oldest first.
	Pending(ctx context.Context, limit int) ([]JobRef, error)
	// Lease takes the lease of a pending job for owner until until, when
	// nobody holds it (or its lease expired before now), and returns the
	// job with its keys; nil when it is not available.
	Lease(ctx context.Context, ref JobRef, owner string, until, now time.Time) (*Job, error)
	// PutCopies writes archived copies (Baseline > 0, status ARCHIVED), as
	// many as given, in parallel batches.
	PutCopies(ctx context.Context, tenant string, copies []*requirement.Requirement) error
	// DeleteCopies deletes every archived copy of baseline n of the space
	// and whatever else its partition holds.
	DeleteCopies(ctx context.Context, tenant, space string, n int) error
	// Commit writes the baseline record of job, which makes the baseline
	// visible, with the page summary of its copies, and removes the job
	// on condition that job.Owner holds its lease; when retitle is true
	// it sets the title of page CEO to the name in the same transaction.
	// apperr.ErrConflict when the record exists already or the job is
	// gone or leased by another; apperr.ErrNotFound when retitle is set
	// and the page no longer exists.
	Commit(ctx context.Context, job *Job, retitle bool) error
	// List returns the baselines of the space in number order: committed
	// ones (COMPLETE) and jobs (FREEZING, FAILED).
	List(ctx context.Context, tenant, space string) ([]*Baseline, error)
	// Get returns one committed baseline, or apperr.ErrNotFound.
	Get(ctx context.Context, tenant, space string, n int) (*Baseline, error)
	// SetLabel sets the label of a baseline and returns it, or
	// apperr.ErrNotFound.
	SetLabel(ctx context.Context, tenant, space string, n int, label string) (*Baseline, error)
	// Delete deletes the baseline record (the baseline disappears at once)
	// and then its copies; a FREEZING or FAILED baseline is cancelled (its
	// job and copies deleted). When there is neither record nor job it
	// removes the copies an interrupted freeze or delete left behind, and
	// returns apperr.ErrNotFound.
	Delete(ctx context.Context, tenant, space string, n int) error
	// Pages returns the page summary of a baseline, or apperr.ErrNotFound.
	Pages(ctx context.Context, tenant, space string, n int) ([]PageCount, error)
}
