package wiki

import (
	"context"

	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Store is the persistence the services need. shared/dynamo.WikiStore
// implements it on DynamoDB.
type Store interface {
	// Page returns a page with its body, or apperr.ErrNotFound.
	Page(ctx context.Context, tenant, pageID string) (*Page, error)
	// Requirement returns the current row (baseline 0) or the archived copy
	// in a baseline, or apperr.ErrNotFound when it is absent or a stub.
	Requirement(ctx context.Context, tenant string, id ID, baseline int) (*requirement.Requirement, error)
	// BaselineExists reports whether baseline n of the space is committed
	// (its record exists): archived copies of any other number are
	// invisible (docs/baselines.md, visibility rule).
	BaselineExists(ctx context.Context, tenant, space string, n int) (bool, error)
	// Requirements returns the current rows that exist among ids, stubs
	// included (with an empty Status), keyed by ID.Norm().
	Requirements(ctx context.Context, tenant string, ids []ID) (map[ID]*requirement.Requirement, error)
	// ServiceIDs lists the serviceIds of the tenant's integrations.
	ServiceIDs(ctx context.Context, tenant string) ([]string, error)
	// Commit applies a change. It checks everything that can be checked
	// before writing anything: apperr.ErrTooLarge when the page cannot be
	// stored even compressed. apperr.ErrConflict when the page's version is
	// no longer ExpectVersion (a concurrent save); the requirement writes
	// already applied then are reconciled by the next save.
	Commit(ctx context.Context, tenant string, c *Change) error
}

// Change is everything one page operation writes.
type Change struct {
	// PutPage is the page to store; nil when the page item does not change.
	PutPage *Page
	// DeletePage is the id of the page to delete, "" for none.
	DeletePage string
	// ExpectVersion is the stored version PutPage or DeletePage replaces; 0
	// when the page must not exist yet.
	ExpectVersion int
	// RegisterSpace is a space to add to the spaces registry, "" for none.
	RegisterSpace string
	// Writes are full current rows to write.
	Writes []Write
	// RDeps edit the reverse dependencies of rows that Writes does not hold
	// (rows of other pages, or stubs for requirements nobody defines yet).
	RDeps []RDepEdit
}

// Write is one current requirement row to write, with the outbound messages
// that must be stored in the same transaction.
type Write struct {
	// Old is the row as read (nil when absent; Status "" for a stub): the
	// store derives which search index items to add and delete from Old and
	// New.
	Old *requirement.Requirement
	New *requirement.Requirement
	// Messages are written atomically with New.
	Messages []*outbox.Message
}

// RDepEdit adds and removes reverse dependencies of one row without reading
// it. Each member names the requirement that references Target and the
// relationship. Add and Remove never share a member.
type RDepEdit struct {
	Target ID
	Add    []requirement.Dependency
	Remove []requirement.Dependency
}
