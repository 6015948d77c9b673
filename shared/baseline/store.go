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

// Store persists baselines and their archived copies.
type Store interface {
	// NextNumber allocates the next baseline number of the space,
	// atomically: concurrent callers always get distinct numbers. A number
	// is never given twice, even when its freeze then fails.
	// apperr.ErrConflict when the space has used every number.
	NextNumber(ctx context.Context, tenant, space string) (int, error)
	// Begin marks the freeze of baseline n as started at at. Commit
	// requires the mark, and Delete leaves the copies of a baseline whose
	// freeze may still be running alone.
	Begin(ctx context.Context, tenant, space string, n int, at time.Time) error
	// PutCopies writes archived copies (Baseline > 0, status ARCHIVED), as
	// many as given, in parallel batches.
	PutCopies(ctx context.Context, tenant string, copies []*requirement.Requirement) error
	// DeleteCopies deletes every archived copy of baseline n of the space
	// and whatever else its partition holds, its Begin mark included.
	DeleteCopies(ctx context.Context, tenant, space string, n int) error
	// Commit writes the baseline record, which makes the baseline visible,
	// with the page summary of its copies, and removes the Begin mark; when
	// retitle is true it sets the title of page b.CEO to b.Name in the same
	// transaction. apperr.ErrConflict when the record exists already or the
	// mark is gone (the freeze was abandoned and cleaned up);
	// apperr.ErrNotFound when retitle is set and the page no longer exists.
	Commit(ctx context.Context, tenant string, b *Baseline, pages []PageCount, retitle bool) error
	// List returns the baselines of the space in number order.
	List(ctx context.Context, tenant, space string) ([]*Baseline, error)
	// Get returns one baseline, or apperr.ErrNotFound.
	Get(ctx context.Context, tenant, space string, n int) (*Baseline, error)
	// SetLabel sets the label of a baseline and returns it, or
	// apperr.ErrNotFound.
	SetLabel(ctx context.Context, tenant, space string, n int, label string) (*Baseline, error)
	// Delete deletes the baseline record (the baseline disappears at once)
	// and then its copies. When there is no record it removes the copies a
	// failed freeze or an interrupted delete left behind, unless the
	// baseline's freeze may still be running, and returns
	// apperr.ErrNotFound.
	Delete(ctx context.Context, tenant, space string, n int) error
	// Pages returns the page summary of a baseline, or apperr.ErrNotFound.
	Pages(ctx context.Context, tenant, space string, n int) ([]PageCount, error)
}
