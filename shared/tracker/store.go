package tracker

import (
	"context"
	"encoding/json"
	"time"

	"github.com/reqtrace/reqtrace/shared/auth"
)

// ApplinkStore persists application links, per tenant.
type ApplinkStore interface {
	// GetApplink returns an applink of the tenant, or apperr.ErrNotFound
	// (also when the id exists in another tenant).
	GetApplink(ctx context.Context, tenant, id string) (Applink, error)
	// ListApplinks returns the tenant's applinks ordered by id.
	ListApplinks(ctx context.Context, tenant string) ([]Applink, error)
	// PutApplink writes a. With prev nil it creates a, answering
	// apperr.ErrConflict if the id exists; otherwise it replaces prev,
	// answering apperr.ErrConflict if the stored applink is no longer prev
	// (optimistic locking on UpdatedAt).
	PutApplink(ctx context.Context, tenant string, a Applink, prev *Applink) error
	// DeleteApplink deletes an applink of the tenant, or answers
	// apperr.ErrNotFound.
	DeleteApplink(ctx context.Context, tenant, id string) error
	// PurgeApplink deletes what applink id owns in the store: its links,
	// its requirements (excerpts and link states), its tracker outbox
	// marks and its pending messages; it answers how many items it
	// deleted. Idempotent: a purge cut short is finished by the next one.
	PurgeApplink(ctx context.Context, tenant, id string) (int, error)
}

// TokenStore stores the hashes of the credentials wikis use to call the
// tracker (auth.Store's writing half).
type TokenStore interface {
	// PutToken stores a token hash for a principal (overwriting).
	PutToken(ctx context.Context, hash string, p auth.Principal) error
	// DeleteToken removes a token hash; absent hashes are not an error.
	DeleteToken(ctx context.Context, hash string) error
}

// LinkStore persists issue links, their holds, the link state of each
// requirement (its PAGE and TRACKER sets, the last LINKS version applied and
// the page that defines its PAGE links) and the requirement excerpts.
//
// A requirement's LinkState is the authority on the holds of its links; the
// link items mirror it (so that an issue's links and their origins are one
// read) and are written in the same transactions.
type LinkStore interface {
	// IssueLinks returns the links of an issue with their holds (none is
	// not an error). The read is strongly consistent.
	IssueLinks(ctx context.Context, tenant, issueKey string) ([]HeldLink, error)
	// LinkStates returns the link state of each of refs, strongly
	// consistent; a requirement never written has an empty state (Version
	// -1, Rev 0). Links stored before holds existed are read as TRACKER.
	LinkStates(ctx context.Context, tenant string, refs []ReqRef) (map[ReqRef]LinkState, error)
	// WriteLinks makes each requirement's state New and its link items
	// follow, and marks the requirements whose Mark is set dirty for the
	// tracker outbox, in the same transaction as their links. It answers
	// apperr.ErrConflict (writing nothing of that requirement) when a
	// requirement's Rev is no longer Old.Rev: the caller reads again.
	WriteLinks(ctx context.Context, tenant string, writes []LinkWrite) error
	// GetRequirements returns the stored requirements among refs; absent
	// ones are missing from the map.
	GetRequirements(ctx context.Context, tenant string, refs []ReqRef) (map[ReqRef]Requirement, error)
	// PutRequirements creates requirements or sets their excerpt, URL and
	// deleted flag, and their suspect marks when they have any (none
	// leaves the stored ones); it never touches their link state.
	PutRequirements(ctx context.Context, tenant string, reqs []Requirement) error
	// SetSuspects replaces the suspect marks of requirement ref (none:
	// removes them); it never touches anything else of it.
	SetSuspects(ctx context.Context, tenant string, ref ReqRef, marks []SuspectMark) error
}

// IssueLockStore keeps the short lease that makes the edits of one issue's
// links (POST, PUT, DELETE issuelinks) atomic against each other.
type IssueLockStore interface {
	// LockIssue takes the lease of an issue for owner until until. It
	// answers apperr.ErrConflict while another owner holds an unexpired
	// lease.
	LockIssue(ctx context.Context, tenant, issueKey, owner string, now, until time.Time) error
	// UnlockIssue releases owner's lease; a lease owner no longer holds is
	// not an error.
	UnlockIssue(ctx context.Context, tenant, issueKey, owner string) error
}

// Mark says that requirement Ref's TRACKER link set must be sent to its
// wiki (the tracker outbox). Seq grows with every edit that marks it again.
type Mark struct {
	Tenant    string
	Ref       ReqRef
	Seq       int64
	Attempts  int
	LastError string
	MarkedAt  time.Time
}

// OutboxStore keeps the tracker outbox's marks. Marks are written by
// LinkStore.WriteLinks; this is the sending half.
type OutboxStore interface {
	// PendingMarks lists the marks of every tenant (at most limit),
	// eventually consistent.
	PendingMarks(ctx context.Context, limit int) ([]Mark, error)
	// TakeMark leases the mark of ref to owner until until and returns it.
	// It answers apperr.ErrConflict when there is no mark or another owner
	// holds an unexpired lease on it.
	TakeMark(ctx context.Context, tenant string, ref ReqRef, owner string, now, until time.Time) (Mark, error)
	// ClearMark deletes the mark if it is still m (same Seq) and leased to
	// owner, and reports whether it did; a mark marked again meanwhile is
	// only released.
	ClearMark(ctx context.Context, tenant string, m Mark, owner string) (bool, error)
	// ReleaseMark releases owner's lease on m and records why sending
	// failed (attempts grow by one when reason is not empty).
	ReleaseMark(ctx context.Context, tenant string, m Mark, owner, reason string) error
}

// Pending is a message received in MANUAL mode, waiting for a sync.
type Pending struct {
	ApplinkID  string
	ReceivedAt time.Time
	Index      int // position in its batch
	Message    Message
}

// PendingStore keeps the messages of MANUAL applinks until a sync applies
// them. A message received again (same applink, same content) replaces the
// earlier copy, so a retried batch does not pile up.
type PendingStore interface {
	// AddPending stores messages, replacing identical ones.
	AddPending(ctx context.Context, tenant string, p []Pending) error
	// ListPending returns the tenant's pending messages in the order they
	// were received.
	ListPending(ctx context.Context, tenant string) ([]Pending, error)
	// DeletePending removes pending messages; absent ones are not an error.
	DeletePending(ctx context.Context, tenant string, p []Pending) error
}

// WikiEndpoint is where and how the tracker calls a wiki.
type WikiEndpoint struct {
	BaseURL string
	Token   string // bearer token; never logged
}

// WikiRequirement is what the tracker reads of a requirement from the wiki.
type WikiRequirement struct {
	SpaceKey    string
	Key         string
	Baseline    int
	Status      string // ACTIVE, DELETED, MOVED or ARCHIVED
	HTMLExcerpt string
	GenericURL  string
	NewSpaceKey string // when MOVED
	NewKey      string // when MOVED
}

// WikiVersion is the wiki's answer about an integration's API version.
type WikiVersion struct {
	Version int // current
	Max     int // highest the wiki supports
}

// WikiSearch is the link dialog's search of the wiki's requirements.
type WikiSearch struct {
	SpaceKey string // path segment and scope; "" searches every space
	Q        string
	Offset   int
	Limit    int
}

// IssueRelationship is one issue linked to a requirement, as the wiki's
// links callback receives it.
type IssueRelationship struct {
	IssueKey     string
	Relationship string
}

// RequirementLinks is the full link set of one requirement for the wiki.
type RequirementLinks struct {
	SpaceKey string
	Key      string
	Baseline int // 0 for the current version
	Links    []IssueRelationship
	// TrackerHolds says Links are exactly the links the tracker holds
	// (sent as "holds": "TRACKER"); otherwise they are every link it has.
	TrackerHolds bool
}

// WikiClient calls a wiki's HTTP API. Every method returns apperr.ErrNotFound
// when the wiki answers 404 and a BadGateway error (with the wiki's message)
// for any other failure, including an unreachable wiki or a timeout.
type WikiClient interface {
	// Requirement reads a requirement (baseline 0: the current version).
	Requirement(ctx context.Context, w WikiEndpoint, spaceKey, key string, baseline int) (WikiRequirement, error)
	// Search runs the wiki's requirement search and returns its JSON answer;
	// a query the wiki refuses (400) is apperr.Invalid with its message.
	Search(ctx context.Context, w WikiEndpoint, s WikiSearch) (json.RawMessage, error)
	// Version reads the API version of the wiki's integration serviceID.
	Version(ctx context.Context, w WikiEndpoint, serviceID string) (WikiVersion, error)
	// SetVersion asks the wiki to use version v and returns the version the
	// wiki accepted.
	SetVersion(ctx context.Context, w WikiEndpoint, serviceID string, v int) (int, error)
	// PutLinks replaces the issue links of exactly these requirements.
	PutLinks(ctx context.Context, w WikiEndpoint, serviceID string, links []RequirementLinks) error
}
