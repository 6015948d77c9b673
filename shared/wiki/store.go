package wiki

import (
	"context"
	"time"

	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Store is the persistence the services need. shared/wikitable.WikiStore
// implements it on DynamoDB.
type Store interface {
	// Page returns a page with its body, or apperr.ErrNotFound.
	Page(ctx context.Context, tenant, pageID string) (*Page, error)
	// Requirement returns the row id names: the current row (Baseline 0)
	// or the archived copy in a baseline; apperr.ErrNotFound when it is
	// absent or a stub.
	Requirement(ctx context.Context, tenant string, id requirement.ID) (*requirement.Requirement, error)
	// BaselineExists reports whether baseline n of the space is committed
	// (its record exists): archived copies of any other number are
	// invisible (docs/baselines.md, visibility rule).
	BaselineExists(ctx context.Context, tenant, space string, n int) (bool, error)
	// Requirements returns the current rows that exist among ids, stubs
	// included (with an empty Status), keyed by ID.Fold().
	Requirements(ctx context.Context, tenant string, ids []requirement.ID) (map[requirement.ID]*requirement.Requirement, error)
	// Integrations lists the tenant's integrations (serviceId and API
	// version), ordered by serviceId.
	Integrations(ctx context.Context, tenant string) ([]Integration, error)
	// SuspectFields returns the admin setting suspectFields
	// (requirement.DefaultSuspectFields when never set).
	SuspectFields(ctx context.Context, tenant string) ([]string, error)
	// ClearSuspects removes every suspect mark of the current rows of
	// rows, with their entries in the suspect index, except on the rows
	// whose page (Origin) a save holds the lease of: those are answered in
	// busy, untouched.
	ClearSuspects(ctx context.Context, tenant string, rows []*requirement.Requirement) (busy []*requirement.Requirement, err error)
	// AddPendingRemovals adds, per serviceId, the links the page no longer
	// holds that an integration below version 5 cannot be told to remove
	// (the integration's pendingRemovals). Absent integrations are skipped.
	AddPendingRemovals(ctx context.Context, tenant string, counts map[string]int) error
	// LeasePage takes the page's save lease, before anything of the
	// operation is read or written but the page itself: on condition that
	// the page is still at version (0: that it still does not exist) and
	// that no unexpired lease is held on it. Otherwise it is
	// apperr.ErrConflict and nothing is written. While the lease is held,
	// no other save, delete, reindex or page view of the page writes
	// anything; a lease that is never given back (a crash) expires.
	LeasePage(ctx context.Context, tenant, pageID string, version int) (*Lease, error)
	// ReleasePage gives a lease back without changing the page: the page
	// item is left as it was before LeasePage (a new page's placeholder is
	// deleted), but for the page's listing for recovery, which stays when
	// l.Writing or l.Unfinished. A lease no longer held is not an error.
	ReleasePage(ctx context.Context, tenant string, l *Lease) error
	// Commit applies a change. It checks everything that can be checked
	// before writing anything: apperr.ErrTooLarge when the page cannot be
	// stored even compressed. With c.Lease, it writes while the lease is
	// held and ends it: the page write (or, when the page item does not
	// change, the release) is conditioned on the lease. Without a lease
	// the page write is conditioned on ExpectVersion and on no lease being
	// held; apperr.ErrConflict when that fails.
	Commit(ctx context.Context, tenant string, c *Change) error
	// SetExternal writes the external properties of next over those of
	// old, the current row of a requirement as read (strongly
	// consistent), with its search index items. It writes on condition
	// that the row is still ACTIVE on old's page with old's external
	// properties, and that no unexpired lease is held on that page (a
	// save, delete, reindex or page view of the page reads and writes its
	// rows under the lease, and writes back the external properties it
	// read): apperr.ErrConflict when a condition fails, with the row
	// unchanged. apperr.ErrTooLarge when the row would pass the size a
	// requirement may take, with nothing written.
	SetExternal(ctx context.Context, tenant string, old, next *requirement.Requirement) error
}

// Integration is what indexing needs of an integration: where messages go
// and which message shapes it takes.
type Integration struct {
	ServiceID string
	Version   int
}

// Lease is a page's save lease, as LeasePage took it.
type Lease struct {
	PageID string
	// ID is this lease's random id: the page writes that end it are
	// conditioned on it.
	ID string
	// Version is the page version the lease was taken on (0: a new page,
	// whose item is then a placeholder until the save writes it).
	Version int
	// Until is when the lease expires; writes under it must be done by then.
	Until time.Time
	// Leftover are the requirements an earlier operation on the page
	// recorded (Change.Pending) and may have written without finishing:
	// the page's key list does not name them, so the operation reads them
	// with the page's own keys and reconciles them (a row of this page the
	// body no longer defines becomes DELETED).
	Leftover []requirement.ID
	// LeftoverEdges are the reverse dependencies of other rows that such an
	// operation added or removed (RDepEdit members): the operation sets
	// each as its own rows say (added when a row of the page still has
	// the dependency, removed otherwise).
	LeftoverEdges []Edge
	// Unfinished says that an earlier operation on the page did not
	// finish: it failed having started to write, or crashed (its lease
	// expired). Its writes may be half applied, so the page is listed for
	// recovery (Service.Recover) until an operation that reconciles it
	// commits: a save or delete (which write every row from scratch), a
	// reindex (which then redoes the stored version), or the recovery.
	Unfinished bool
	// Writing is set before the operation's commit starts: if it fails,
	// releasing the lease leaves the page listed for recovery.
	Writing bool
}

// UnfinishedPage names a page listed for recovery.
type UnfinishedPage struct {
	Tenant, PageID string
}

// RecoveryStore lists the pages to recover, across tenants.
type RecoveryStore interface {
	// Unfinished returns up to limit pages whose recovery is due by now:
	// an operation on them failed having started to write, or its lease
	// expired without being ended.
	Unfinished(ctx context.Context, now time.Time, limit int) ([]UnfinishedPage, error)
}

// Edge is one reverse dependency: Source (a requirement and the
// relationship of its link) references Target.
type Edge struct {
	Target requirement.ID
	Source requirement.Dependency
}

// Change is everything one page operation writes.
type Change struct {
	// Lease is the page's lease this change is written under (nil only
	// for callers that write pages directly, such as seeding).
	Lease *Lease
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
	// Pending are the rows of the page this change writes that the stored
	// page item's key list does not name (new requirements, or all of them
	// when the page is new or moves). Under a lease the store records them,
	// and the members of RDeps, on the page item before writing anything
	// else, so that if the change fails half way the next operation finds
	// them in Lease.Leftover and Lease.LeftoverEdges.
	Pending []requirement.ID
	// PendingRemovals counts, per serviceId, the page links this change
	// removes that an integration below version 5 cannot be told about;
	// added to the integrations after the commit (informational).
	PendingRemovals map[string]int
	// DropSuspects, for the redo of a page's stored version, removes from
	// rows of other pages the marks a failed operation on the page made.
	DropSuspects *DropSuspects
	// Reconciled says that the change reconciles the lease's Leftover
	// (the page's save, delete and reindex do; a page view does not):
	// committing it clears the record even when the page item does not
	// otherwise change.
	Reconciled bool
}

// Write is one current requirement row to write, with the outbound messages
// that report its change: the store writes them in the same commit, never
// before the row (a commit that fails in between leaves the page
// unfinished, and the operation that reconciles it reports the rows as it
// finds them).
type Write struct {
	// Old is the row as read (nil when absent; Status "" for a stub): the
	// store derives which search index items to add and delete from Old and
	// New.
	Old *requirement.Requirement
	New *requirement.Requirement
	// Messages are written atomically with New.
	Messages []*outbox.Message
	// Suspects are the suspect marks New's change adds to rows that
	// Writes does not hold (rows of other pages that reference it),
	// written atomically with New.
	Suspects []SuspectEdit
}

// DropSuspects removes, from Rows, the suspect marks made by operations on
// Page after version After (requirement.Suspect.MadeAfter).
type DropSuspects struct {
	Page  string
	After int
	Rows  []requirement.ID
}

// SuspectEdit adds suspect marks to one row without reading it, with the
// row's entry in the suspect index.
type SuspectEdit struct {
	Row   requirement.ID // space and key as the referencing row spells them
	Marks []requirement.Suspect
}

// RDepEdit adds and removes reverse dependencies of one row without reading
// it. Each member names the requirement that references Target and the
// relationship. Add and Remove never share a member.
type RDepEdit struct {
	Target requirement.ID
	Add    []requirement.Dependency
	Remove []requirement.Dependency
}
