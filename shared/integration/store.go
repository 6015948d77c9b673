package integration

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"time"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Store persists descriptors (shared/wikitable.IntegrationStore).
type Store interface {
	// List returns the tenant's integrations ordered by serviceId.
	List(ctx context.Context, tenant string) ([]*Descriptor, error)
	// Get returns one integration, or apperr.ErrNotFound.
	Get(ctx context.Context, tenant, serviceID string) (*Descriptor, error)
	// Create stores a new integration and sets d.Rev to 1;
	// apperr.ErrConflict when the serviceId is taken.
	Create(ctx context.Context, tenant string, d *Descriptor) error
	// Update writes the descriptor fields, the token and the incoming token
	// hash when the stored Rev is still d.Rev, and increments Rev;
	// it sets d.Rev to the new revision. apperr.ErrNotFound when absent,
	// apperr.ErrConflict when changed concurrently. Sync bookkeeping (SweepFrom, LastErrorMail, leases) is
	// not touched.
	Update(ctx context.Context, tenant string, d *Descriptor) error
	// ClaimErrorMail records now as the time of the last error e-mail when
	// the previous one is at least every old (or there was none), and
	// reports whether it did: of two concurrent callers only one wins.
	ClaimErrorMail(ctx context.Context, tenant, serviceID string, now time.Time, every time.Duration) (bool, error)
	// AcquireLease makes owner the only sync run delivering to the
	// integration until until; false when another owner holds an unexpired
	// lease.
	AcquireLease(ctx context.Context, tenant, serviceID, owner string, now, until time.Time) (bool, error)
	// ReleaseLease ends owner's lease (no error when it is not held).
	ReleaseLease(ctx context.Context, tenant, serviceID, owner string) error
	// SetSweepFrom stores the outbox id prefix the next sweep starts at.
	SetSweepFrom(ctx context.Context, tenant, serviceID, from string) error
	// Delete removes an integration (its descriptor, credentials, sync
	// bookkeeping and reconcile flag); apperr.ErrNotFound when absent.
	Delete(ctx context.Context, tenant, serviceID string) error
}

// Ref names one outbox message.
type Ref struct {
	Tenant    string
	ServiceID string
	ID        string
}

// RefOf returns the reference of a tenant's message.
func RefOf(tenant string, m *outbox.Message) Ref {
	return Ref{Tenant: tenant, ServiceID: m.ServiceID, ID: m.ID}
}

// Outcome is the result of delivering one message.
type Outcome struct {
	Ref          Ref
	LastResponse string
}

// Pending is a NEW message that never reached SQS.
type Pending struct {
	Tenant  string
	Message *outbox.Message
}

// EnqueueMarker records that messages reached SQS.
type EnqueueMarker interface {
	// MarkEnqueued takes the messages out of the pending partition; absent
	// messages are skipped.
	MarkEnqueued(ctx context.Context, refs []Ref) error
}

// Outbox reads and updates outbox messages (shared/wikitable.OutboxStore).
// Message ids sort by creation time; "from" arguments are id prefixes ("" =
// the beginning).
type Outbox interface {
	EnqueueMarker
	// CountNew counts the NEW messages of an integration from an id prefix.
	CountNew(ctx context.Context, tenant, serviceID, from string) (int, error)
	// List returns at most limit messages oldest first from an id prefix:
	// NEW ones, and DONE ones too when includeDone.
	List(ctx context.Context, tenant, serviceID, from string, limit int, includeDone bool) ([]*outbox.Message, error)
	// Get returns one message, or apperr.ErrNotFound.
	Get(ctx context.Context, tenant, serviceID, id string) (*outbox.Message, error)
	// GetMany returns the messages that exist among refs, keyed by ref.
	GetMany(ctx context.Context, refs []Ref) (map[Ref]*outbox.Message, error)
	// Delete removes a message, or answers apperr.ErrNotFound.
	Delete(ctx context.Context, tenant, serviceID, id string) error
	// ScanNew calls fn with pages of the NEW messages of an integration,
	// oldest first, from an id prefix, until fn returns false or an error.
	ScanNew(ctx context.Context, tenant, serviceID, from string, fn func([]*outbox.Message) (bool, error)) error
	// Purge deletes the messages of an integration whose id is below
	// before ("" = every message), NEW and DONE alike, and answers how
	// many it deleted. It is idempotent: a purge cut short is finished by
	// the next one.
	Purge(ctx context.Context, tenant, serviceID, before string) (int, error)
	// MarkDone sets messages DONE with their last response (absent ones
	// are skipped).
	MarkDone(ctx context.Context, outcomes []Outcome) error
	// RecordFailure sets the last response of messages that are still NEW.
	RecordFailure(ctx context.Context, refs []Ref, lastResponse string) error
	// Pending calls fn with pages of the NEW messages of every tenant that
	// never reached SQS and were created before before, oldest first, until
	// fn returns false or an error. Only the sync function calls it: it is
	// the one cross-tenant read.
	Pending(ctx context.Context, before time.Time, fn func([]Pending) (bool, error)) error
}

// TokenStore stores the hashes of incoming credentials (the part of
// auth.Store this package uses).
type TokenStore interface {
	PutToken(ctx context.Context, hash string, p auth.Principal) error
	DeleteToken(ctx context.Context, hash string) error
	// SetTokenDisabled sets or clears the disabled flag of a stored
	// credential (its integration became DISABLED or ACTIVE);
	// apperr.ErrNotFound when the hash is not stored.
	SetTokenDisabled(ctx context.Context, hash string, disabled bool) error
}

// LinkSet is the issue links one tracker reports for one requirement.
type LinkSet struct {
	SpaceKey string
	Key      string
	Baseline int // 0 = the current version
	Links    []requirement.IssueLink
	// TrackerHolds says the links are exactly those the tracker holds
	// (the callback entry's "holds": "TRACKER", what the tracker-side
	// outbox sends). Without it, from an integration below version 5, the
	// links are the tracker's whole set (PUT /sync of a version-4 tracker).
	TrackerHolds bool
	// Whole says the links are the tracker's whole set for the
	// requirement: a link the page holds is then taken as the page's (the
	// tracker got it from a LINK message), not also as the tracker's. Set
	// by the Service.
	Whole bool
}

// LinkStore applies the links callback (shared/wikitable.IntegrationStore).
type LinkStore interface {
	// ReplaceIssueLinks replaces, on each named requirement, the issue links
	// of serviceID by the given ones (ReplaceLinks), keeps the jira search
	// index items of current ACTIVE requirements in step, and answers the
	// number of requirements changed. When a requirement does not exist it
	// writes nothing and answers a not-found error naming it.
	ReplaceIssueLinks(ctx context.Context, tenant, serviceID string, sets []LinkSet) (int, error)
}

// SettingsStore persists the admin settings (shared/wikitable.SettingsStore).
type SettingsStore interface {
	// Get returns the tenant's settings; defaults when never set.
	Get(ctx context.Context, tenant string) (Settings, error)
	// Put stores the tenant's settings.
	Put(ctx context.Context, tenant string, s Settings) error
}

// Envelope is the body of one SQS message: references to outbox messages
// of one integration, in creation order. One envelope per integration and
// publish (at most MaxEnvelopeIDs ids each) rather than one SQS message per
// outbox message: SQS FIFO hands out at most 10 messages of a group at a
// time, so per-message references would cost ⌈N/10⌉ receive and delete
// round trips per tracker and ⌈N/10⌉ sends per page save.
type Envelope struct {
	Tenant    string
	ServiceID string
	IDs       []string
	// Wake, when set, makes the envelope a wake-up call that is never
	// deduplicated with an earlier envelope of the same ids (its
	// deduplication id is derived from Wake, a fresh random value).
	Wake string
}

// WakeEnvelope returns a wake-up envelope of an integration naming id:
// enough for the sync run to sweep its whole backlog.
func WakeEnvelope(tenant, serviceID, id string) Envelope {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return Envelope{Tenant: tenant, ServiceID: serviceID, IDs: []string{id}, Wake: hex.EncodeToString(b[:])}
}

// MaxEnvelopeIDs bounds the ids of one envelope (about 27 KB of JSON, well
// under SQS's message size limit).
const MaxEnvelopeIDs = 1000

// Refs returns the references an envelope carries.
func (e Envelope) Refs() []Ref {
	out := make([]Ref, len(e.IDs))
	for i, id := range e.IDs {
		out[i] = Ref{Tenant: e.Tenant, ServiceID: e.ServiceID, ID: id}
	}
	return out
}

// Envelopes packs refs into envelopes: one per integration (in order of
// first appearance) and MaxEnvelopeIDs ids, ids in the order given, each
// id once.
func Envelopes(refs []Ref) []Envelope {
	type key struct{ tenant, serviceID string }
	var order []key
	ids := map[key][]string{}
	seen := map[Ref]bool{}
	for _, r := range refs {
		if seen[r] {
			continue
		}
		seen[r] = true
		k := key{r.Tenant, r.ServiceID}
		if _, ok := ids[k]; !ok {
			order = append(order, k)
		}
		ids[k] = append(ids[k], r.ID)
	}
	var out []Envelope
	for _, k := range order {
		for chunk := range slices.Chunk(ids[k], MaxEnvelopeIDs) {
			out = append(out, Envelope{Tenant: k.tenant, ServiceID: k.serviceID, IDs: chunk})
		}
	}
	return out
}

// Received is one message taken from the queue.
type Received struct {
	Envelope Envelope
	Handle   string // receipt handle, for Delete and ChangeVisibility
	// Receives is SQS's approximate receive count (DLQ after maxReceiveCount).
	Receives int
	// Malformed is set when the body is not an envelope: it is deleted.
	Malformed bool
}

// RefPublisher sends envelopes to the outbound queue.
type RefPublisher interface {
	// Publish sends envelopes (group tenant#serviceId; deduplication id the
	// message id of a one-id envelope, else a hash of its ids) and answers
	// those that were accepted, with an error when some were not.
	Publish(ctx context.Context, envs []Envelope) ([]Envelope, error)
}

// Queue is the outbound queue as the sync function uses it
// (shared/queue.Queue).
type Queue interface {
	RefPublisher
	// Receive takes up to n messages, waiting up to wait for the first.
	Receive(ctx context.Context, n int, wait time.Duration) ([]Received, error)
	// Delete removes received messages.
	Delete(ctx context.Context, handles []string) error
	// ChangeVisibility hides received messages for d more.
	ChangeVisibility(ctx context.Context, handles []string, d time.Duration) error
}

// Reconciler repairs drift between the wiki's PAGE links and what a
// tracker holds (docs/integrations.md, "Reconcile"): it queues the whole PAGE link
// set of every requirement an integration may disagree about.
type Reconciler interface {
	// Flag marks an integration to be reconciled by the next sync run
	// (it was created, re-enabled, upgraded to version 5, had a message
	// deleted or dead-lettered). Flagging twice is flagging once.
	Flag(ctx context.Context, tenant, serviceID string) error
	// RunFlagged reconciles the flagged ACTIVE integrations of every
	// tenant, clears their flags and answers how many messages it queued.
	// It stops early, leaving the rest flagged, when ctx ends.
	RunFlagged(ctx context.Context) (int, error)
}

// Mailer sends API error e-mails (shared/mail: SES, or a log sink).
type Mailer interface {
	Send(ctx context.Context, to, subject, body string) error
}

// Flag is an integration flagged for reconcile, as of At.
type Flag struct {
	Tenant    string
	ServiceID string
	At        string // the flag's value; clearing is conditioned on it
}

// ReconcileStore is what reconciling needs of the WikiTable
// (shared/wikitable.IntegrationStore).
type ReconcileStore interface {
	// PageLinked calls fn with pages of at most 100 current rows (stubs
	// left out) whose page holds, or once held, links to serviceID or to
	// every integration (macros naming none), until fn fails.
	PageLinked(ctx context.Context, tenant, serviceID string, fn func([]*requirement.Requirement) error) error
	// CurrentRows returns the current rows that exist among ids (stubs
	// left out), in no particular order.
	CurrentRows(ctx context.Context, tenant string, ids []requirement.ID) ([]*requirement.Requirement, error)
	// AddMessages writes new NEW messages, not yet enqueued.
	AddMessages(ctx context.Context, tenant string, msgs []*outbox.Message) error
	// FlagReconcile flags an integration (absent: no error, nothing done).
	FlagReconcile(ctx context.Context, tenant, serviceID string, at time.Time) error
	// Flagged calls fn with pages of the flagged integrations of every
	// tenant, oldest flag first, until fn returns false or an error.
	Flagged(ctx context.Context, fn func([]Flag) (bool, error)) error
	// ClearReconcile clears a flag unless it was set again since f.At.
	ClearReconcile(ctx context.Context, f Flag) error
	// ResetPendingRemovals sets an integration's pendingRemovals to 0.
	ResetPendingRemovals(ctx context.Context, tenant, serviceID string) error
}
