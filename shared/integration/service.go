package integration

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Deps are what the Service and the Sync consume; each uses the part it
// needs (documented on its constructor).
type Deps struct {
	Store     Store
	Outbox    Outbox
	Tokens    TokenStore
	Links     LinkStore
	Settings  SettingsStore
	Tracker   Tracker
	Publisher *Publisher
	Queue     Queue
	Mailer    Mailer
	// ReconcileStore, when set, lets the Service reconcile integrations
	// (POST .../reconcile) and flag them for the sync run's reconcile.
	ReconcileStore ReconcileStore
	// Reconciler, when set, is what the sync run asks to reconcile the
	// flagged integrations (and to flag those whose envelopes reached the
	// dead-letter queue).
	Reconciler Reconciler
	Logger     *slog.Logger     // slog.Default when nil
	Now        func() time.Time // time.Now when nil
	// AllowPrivateTargets (ALLOW_PRIVATE_TARGETS) accepts rpcUrls on
	// loopback and private addresses (Descriptor.CheckTarget).
	AllowPrivateTargets bool
}

func (d *Deps) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Deps) logger() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.Default()
}

// Service implements the integration endpoints of the wiki: descriptors,
// the version and links callbacks, the outbound queue and the settings.
type Service struct {
	d         Deps
	reconcile *Reconcile // nil without d.ReconcileStore
}

// New returns a Service using Store, Outbox, Tokens, Links,
// Settings, Tracker (push now), Publisher (to wake a re-activated
// integration), Logger and Now of d.
func New(d Deps) *Service {
	s := &Service{d: d}
	if d.ReconcileStore != nil {
		s.reconcile = NewReconciler(d, d.ReconcileStore)
	}
	return s
}

// QueueLimit is the default and QueueMaxLimit the largest number of
// messages the queue listing answers.
const (
	QueueLimit    = 100
	QueueMaxLimit = 1000
)

// maxConflictRetries bounds the retries of machine-driven updates (the
// version callback) that lost an optimistic-concurrency race.
const maxConflictRetries = 3

func (s *Service) view(ctx context.Context, tenant string, d *Descriptor) (View, error) {
	n, err := s.d.Outbox.CountNew(ctx, tenant, d.ServiceID, d.SweepFrom)
	if err != nil {
		return View{}, fmt.Errorf("count messages of integration %s: %w", d.ServiceID, err)
	}
	return View{Descriptor: d, CountMessagesInQueue: n}, nil
}

func (s *Service) get(ctx context.Context, tenant, serviceID string) (*Descriptor, error) {
	if !ValidServiceID(serviceID) {
		return nil, notFound(serviceID)
	}
	d, err := s.d.Store.Get(ctx, tenant, serviceID)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, notFound(serviceID)
	}
	if err != nil {
		return nil, fmt.Errorf("get integration %s: %w", serviceID, err)
	}
	return d, nil
}

func notFound(serviceID string) error {
	return apperr.NotFoundf("integration %s not found", serviceID)
}

// List returns the tenant's integrations with their queue counts.
func (s *Service) List(ctx context.Context, tenant string) ([]View, error) {
	ds, err := s.d.Store.List(ctx, tenant)
	if err != nil {
		return nil, fmt.Errorf("list integrations: %w", err)
	}
	out := make([]View, 0, len(ds))
	for _, d := range ds {
		v, err := s.view(ctx, tenant, d)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// Get returns one integration with its queue count.
func (s *Service) Get(ctx context.Context, tenant, serviceID string) (View, error) {
	d, err := s.get(ctx, tenant, serviceID)
	if err != nil {
		return View{}, err
	}
	return s.view(ctx, tenant, d)
}

// Create stores a new integration and answers it with its incoming
// credential (the only time the plain credential is shown). serviceId
// defaults to applinkId, else to a new UUID; status to ACTIVE; version to
// DefaultVersion; sendErrorsToEmailThrottle to DefaultThrottle minutes.
func (s *Service) Create(ctx context.Context, tenant string, p Patch) (View, string, error) {
	d := &Descriptor{Version: DefaultVersion, SendErrorsToEmailThrottle: DefaultThrottle, Status: Active}
	if err := p.apply(d); err != nil {
		return View{}, "", err
	}
	switch {
	case p.ServiceID != nil && *p.ServiceID != "":
		d.ServiceID = *p.ServiceID
	case d.ApplinkID != "":
		d.ServiceID = d.ApplinkID
	default:
		d.ServiceID = NewServiceID()
	}
	d.Normalize()
	if err := d.Validate(); err != nil {
		return View{}, "", err
	}
	if err := d.CheckTarget(s.d.AllowPrivateTargets); err != nil {
		return View{}, "", err
	}
	now := s.d.now().UTC()
	d.CreatedAt, d.UpdatedAt = now, now
	token, err := s.issueToken(ctx, tenant, d)
	if err != nil {
		return View{}, "", err
	}
	if err := s.d.Store.Create(ctx, tenant, d); err != nil {
		s.dropToken(ctx, d.IncomingTokenHash)
		if errors.Is(err, apperr.ErrConflict) {
			return View{}, "", apperr.Conflictf("integration %s already exists", d.ServiceID)
		}
		return View{}, "", fmt.Errorf("create integration %s: %w", d.ServiceID, err)
	}
	// A deleted integration of this id may have left messages behind (a
	// page save that wrote one while it was being deleted): they were for
	// the old one. Those created before this one are removed.
	s.purge(ctx, tenant, d.ServiceID, outbox.IDPrefix(now))
	// Pages may already hold links to it (their saves warned of it): the
	// next sync run queues them.
	s.flagReconcile(ctx, tenant, d.ServiceID)
	return View{Descriptor: d}, token, nil
}

// purge deletes an integration's messages below the id prefix before,
// logging a failure: what is left is only read through an integration of
// that id, whose own creation purges it again.
func (s *Service) purge(ctx context.Context, tenant, serviceID, before string) {
	if _, err := s.d.Outbox.Purge(ctx, tenant, serviceID, before); err != nil {
		s.d.logger().WarnContext(ctx, "cannot purge the messages a deleted integration left",
			"service_id", serviceID, "error", err.Error())
	}
}

// Delete removes an integration: its incoming credential first (from then
// on the tracker's calls are refused), then its whole outbound queue (NEW
// and DONE messages; copies still in SQS are settled by the sync run as
// messages of an integration that does not exist), then the descriptor
// with its tracker credential, sync bookkeeping and reconcile flag, then
// the messages a concurrent page save wrote meanwhile. Every step is
// idempotent and the descriptor goes last, so a DELETE that fails half way
// is repeated until it answers 204. The requirements keep their issue
// links: PAGE links stay as the pages define them (a page save lists each
// as a warning while no integration has that id; an integration created
// again with it gets them through its reconcile), and links the tracker
// made stay as last reported.
func (s *Service) Delete(ctx context.Context, tenant, serviceID string) error {
	d, err := s.get(ctx, tenant, serviceID)
	if err != nil {
		return err
	}
	if d.IncomingTokenHash != "" {
		if err := s.d.Tokens.DeleteToken(ctx, d.IncomingTokenHash); err != nil && !errors.Is(err, apperr.ErrNotFound) {
			return fmt.Errorf("delete the incoming token of integration %s: %w", serviceID, err)
		}
	}
	if _, err := s.d.Outbox.Purge(ctx, tenant, serviceID, ""); err != nil {
		return fmt.Errorf("delete the queue of integration %s: %w", serviceID, err)
	}
	err = s.d.Store.Delete(ctx, tenant, serviceID)
	if errors.Is(err, apperr.ErrNotFound) {
		return notFound(serviceID) // deleted concurrently
	}
	if err != nil {
		return fmt.Errorf("delete integration %s: %w", serviceID, err)
	}
	s.purge(ctx, tenant, serviceID, "")
	return nil
}

// flagReconcile flags an integration for the next sync run's reconcile; a
// failure is logged (POST .../reconcile does the same by hand).
func (s *Service) flagReconcile(ctx context.Context, tenant, serviceID string) {
	if s.reconcile == nil {
		return
	}
	if err := s.reconcile.Flag(ctx, tenant, serviceID); err != nil {
		s.d.logger().WarnContext(ctx, "cannot flag an integration for reconcile; POST its reconcile endpoint",
			"service_id", serviceID, "error", err.Error())
	}
}

// Reconcile queues, now, the whole set of page links of every requirement
// an integration may disagree about (a LINKS message each from version 5,
// their LINK messages below), and answers how many messages it queued.
func (s *Service) Reconcile(ctx context.Context, tenant, serviceID, actor string) (int, error) {
	if _, err := s.get(ctx, tenant, serviceID); err != nil {
		return 0, err
	}
	if s.reconcile == nil {
		return 0, errors.New("reconcile is not configured")
	}
	return s.reconcile.Run(ctx, tenant, serviceID, actor)
}

// issueToken stores a new Link credential for d and sets its hash on d.
func (s *Service) issueToken(ctx context.Context, tenant string, d *Descriptor) (string, error) {
	token := auth.NewToken()
	hash := auth.HashToken(token)
	p := auth.Principal{Tenant: tenant, App: auth.Wiki, Kind: auth.Link, User: "link:" + d.ServiceID, Scope: d.ServiceID,
		Disabled: d.Status == Disabled} // a rotated token inherits the status
	if err := s.d.Tokens.PutToken(ctx, hash, p); err != nil {
		return "", fmt.Errorf("store the incoming token of integration %s: %w", d.ServiceID, err)
	}
	d.IncomingTokenHash = hash
	return token, nil
}

// dropToken deletes a credential hash, logging a failure: a dangling hash
// names an integration that does not accept it any more.
func (s *Service) dropToken(ctx context.Context, hash string) {
	if hash == "" {
		return
	}
	if err := s.d.Tokens.DeleteToken(ctx, hash); err != nil {
		s.d.logger().WarnContext(ctx, "cannot delete an old incoming token", "error", err.Error())
	}
}

// Update changes an integration: fields absent from p keep their value
// (read-only fields are the caller's to ignore); Token replaces the tracker
// credential; RotateToken issues a new incoming credential, answered once,
// and deletes the old one. Re-activating an integration wakes its queue.
func (s *Service) Update(ctx context.Context, tenant, serviceID string, p Patch) (View, string, error) {
	d, err := s.get(ctx, tenant, serviceID)
	if err != nil {
		return View{}, "", err
	}
	if p.ServiceID != nil && *p.ServiceID != serviceID {
		return View{}, "", apperr.Invalidf("serviceId %q cannot change (path names %q)", *p.ServiceID, serviceID)
	}
	wasDisabled, oldVersion, oldTarget := d.Status == Disabled, d.Version, d.RPCURL
	if err := p.apply(d); err != nil {
		return View{}, "", err
	}
	d.Normalize()
	if err := d.Validate(); err != nil {
		return View{}, "", err
	}
	// A new rpcUrl is checked against the outbound policy; one stored
	// before (a stricter policy since) can still be edited otherwise, for
	// one to set it DISABLED: calls to it are refused when made.
	if d.RPCURL != oldTarget {
		if err := d.CheckTarget(s.d.AllowPrivateTargets); err != nil {
			return View{}, "", err
		}
	}
	d.UpdatedAt = s.d.now().UTC()
	oldHash, token := d.IncomingTokenHash, ""
	if p.RotateToken {
		if token, err = s.issueToken(ctx, tenant, d); err != nil {
			return View{}, "", err
		}
	}
	if err := s.d.Store.Update(ctx, tenant, d); err != nil {
		if p.RotateToken {
			s.dropToken(ctx, d.IncomingTokenHash)
		}
		switch {
		case errors.Is(err, apperr.ErrNotFound):
			return View{}, "", notFound(serviceID)
		case errors.Is(err, apperr.ErrConflict):
			return View{}, "", apperr.Conflictf("integration %s changed concurrently; read it again and retry", serviceID)
		}
		return View{}, "", fmt.Errorf("update integration %s: %w", serviceID, err)
	}
	if p.RotateToken {
		s.dropToken(ctx, oldHash)
	} else if p.Status != nil && d.IncomingTokenHash != "" {
		// DISABLED means disabled everywhere: the incoming credential
		// answers 403 while the integration is DISABLED. Set whenever a
		// status is sent (idempotent), so a PUT repeated after a failure
		// here repairs the flag.
		if err := s.d.Tokens.SetTokenDisabled(ctx, d.IncomingTokenHash, d.Status == Disabled); err != nil && !errors.Is(err, apperr.ErrNotFound) {
			return View{}, "", fmt.Errorf("set the incoming token of integration %s %s: %w", serviceID, d.Status, err)
		}
	}
	if wasDisabled && d.Status == Active {
		s.wake(ctx, tenant, d)
	}
	// Re-enabled (its tracker missed what a DISABLED link could not
	// receive), or now at version 5 (removals can be sent): reconcile.
	if (wasDisabled && d.Status == Active) || (oldVersion < 5 && d.Version >= 5) {
		s.flagReconcile(ctx, tenant, serviceID)
	}
	v, err := s.view(ctx, tenant, d)
	return v, token, err
}

// wake re-publishes the oldest NEW message of a re-activated integration:
// its references may have gone to the dead-letter queue while it was
// disabled, and one reference is enough for the sync run to deliver the
// whole backlog. A failure is logged: an admin can push messages by hand.
func (s *Service) wake(ctx context.Context, tenant string, d *Descriptor) {
	if s.d.Publisher == nil {
		return
	}
	msgs, err := s.d.Outbox.List(ctx, tenant, d.ServiceID, d.SweepFrom, 1, false)
	if err == nil && len(msgs) > 0 {
		err = s.d.Publisher.Wake(ctx, tenant, d.ServiceID, msgs[0].ID)
	}
	if err != nil {
		s.d.logger().WarnContext(ctx, "cannot wake the outbound queue of a re-activated integration",
			"service_id", d.ServiceID, "error", err.Error())
	}
}

// Version answers an integration's API version.
func (s *Service) Version(ctx context.Context, tenant, serviceID string) (int, error) {
	d, err := s.get(ctx, tenant, serviceID)
	if err != nil {
		return 0, err
	}
	return d.Version, nil
}

// SetVersion sets an integration's API version to min(v, MaxVersion) and
// answers the version accepted; the endpoint follows (empty for 0).
func (s *Service) SetVersion(ctx context.Context, tenant, serviceID string, v int) (int, error) {
	if v < 0 {
		return 0, apperr.InvalidNamed("version", "version must be 0 or more, got %d", v)
	}
	v = min(v, MaxVersion)
	for attempt := 0; ; attempt++ {
		d, err := s.get(ctx, tenant, serviceID)
		if err != nil {
			return 0, err
		}
		if d.Version == v {
			return v, nil
		}
		upgraded := d.Version < 5 && v >= 5
		d.Version = v
		if v > 0 && d.Endpoint == "" {
			d.Endpoint = DefaultEndpoint
		}
		d.Normalize()
		d.UpdatedAt = s.d.now().UTC()
		err = s.d.Store.Update(ctx, tenant, d)
		if errors.Is(err, apperr.ErrConflict) && attempt < maxConflictRetries {
			continue
		}
		if errors.Is(err, apperr.ErrNotFound) {
			return 0, notFound(serviceID)
		}
		if err != nil {
			return 0, fmt.Errorf("set the version of integration %s: %w", serviceID, err)
		}
		if upgraded {
			s.flagReconcile(ctx, tenant, serviceID)
		}
		return v, nil
	}
}

// messageIDPattern, with the length checked apart (a bounded repetition
// compiles to one copy per repetition at package init).
var messageIDPattern = regexp.MustCompile(`^[0-9a-f]+$`)

// validMessageID reports whether id can be a message id: 16 to 64
// lower-case hex digits.
func validMessageID(id string) bool {
	return len(id) >= 16 && len(id) <= 64 && messageIDPattern.MatchString(id)
}

func (s *Service) message(ctx context.Context, tenant, serviceID, id string) (*outbox.Message, error) {
	if !validMessageID(id) {
		return nil, apperr.NotFoundf("message %s not found in the queue of integration %s", id, serviceID)
	}
	m, err := s.d.Outbox.Get(ctx, tenant, serviceID, id)
	if errors.Is(err, apperr.ErrNotFound) {
		return nil, apperr.NotFoundf("message %s not found in the queue of integration %s", id, serviceID)
	}
	if err != nil {
		return nil, fmt.Errorf("get message %s: %w", id, err)
	}
	return m, nil
}

// Queue lists an integration's outbound messages oldest first: NEW ones,
// and DONE ones too when includeDone; limit is clamped to QueueMaxLimit.
// after, when not empty, is the id of the last message of the previous
// page: the listing continues strictly after it (keyset paging). hasMore
// says whether a next page (after the last message answered) has messages:
// the listing reads one message more than the page to know it.
func (s *Service) Queue(ctx context.Context, tenant, serviceID string, limit int, includeDone bool, after string) (msgs []*outbox.Message, hasMore bool, err error) {
	if after != "" && !validMessageID(after) {
		return nil, false, apperr.InvalidNamed("after", "after must be a message id (hex digits), got %q", after)
	}
	d, err := s.get(ctx, tenant, serviceID)
	if err != nil {
		return nil, false, err
	}
	limit = min(max(limit, 1), QueueMaxLimit)
	from := d.SweepFrom
	if includeDone {
		from = ""
	}
	if after != "" && after+"\x00" > from {
		from = after + "\x00" // ids have one length: this is the first id after it
	}
	msgs, err = s.d.Outbox.List(ctx, tenant, serviceID, from, limit+1, includeDone)
	if err != nil {
		return nil, false, fmt.Errorf("list the queue of integration %s: %w", serviceID, err)
	}
	if len(msgs) > limit {
		msgs, hasMore = msgs[:limit], true
	}
	return msgs, hasMore, nil
}

// Push delivers one message now, whatever its state. On success the
// message is answered DONE with the tracker's result as lastResponse (a
// result of ERROR is DONE too: the tracker refused this message for good).
// When the POST fails the message stays NEW, records the failure as its
// lastResponse, and is answered with a *DeliveryError. A DISABLED
// integration answers 409.
func (s *Service) Push(ctx context.Context, tenant, serviceID, id string) (*outbox.Message, error) {
	d, err := s.get(ctx, tenant, serviceID)
	if err != nil {
		return nil, err
	}
	m, err := s.message(ctx, tenant, serviceID, id)
	if err != nil {
		return nil, err
	}
	if d.Status == Disabled {
		return nil, apperr.Conflictf("integration %s is DISABLED: set it ACTIVE to send messages", serviceID)
	}
	ref := RefOf(tenant, m)
	results, err := s.d.Tracker.Deliver(ctx, d, []*outbox.Message{m})
	var de *DeliveryError
	if errors.As(err, &de) {
		m.LastResponse = de.LastResponse()
		if rerr := s.d.Outbox.RecordFailure(ctx, []Ref{ref}, m.LastResponse); rerr != nil {
			return nil, fmt.Errorf("record the failure of message %s: %w", id, rerr)
		}
		return m, de
	}
	if err != nil {
		return nil, fmt.Errorf("deliver message %s: %w", id, err)
	}
	m.State, m.LastResponse = outbox.Done, results[0].LastResponse()
	if err := s.d.Outbox.MarkDone(ctx, []Outcome{{Ref: ref, LastResponse: m.LastResponse}}); err != nil {
		return nil, fmt.Errorf("mark message %s done: %w", id, err)
	}
	return m, nil
}

// DeleteMessage removes a message from the queue; a copy of it still in
// SQS is then ignored by the sync function.
func (s *Service) DeleteMessage(ctx context.Context, tenant, serviceID, id string) error {
	if _, err := s.get(ctx, tenant, serviceID); err != nil {
		return err
	}
	if !validMessageID(id) {
		return apperr.NotFoundf("message %s not found in the queue of integration %s", id, serviceID)
	}
	err := s.d.Outbox.Delete(ctx, tenant, serviceID, id)
	if errors.Is(err, apperr.ErrNotFound) {
		return apperr.NotFoundf("message %s not found in the queue of integration %s", id, serviceID)
	}
	if err != nil {
		return fmt.Errorf("delete message %s: %w", id, err)
	}
	// What the message said is lost; the next sync run's reconcile sends
	// the whole current state instead.
	s.flagReconcile(ctx, tenant, serviceID)
	return nil
}

// ReplaceLinks is the links callback: on each requirement named by sets it
// replaces the issue links of serviceID by the ones given. Everything is
// validated first; an unknown requirement answers 404 naming it and nothing
// is written. It answers the number of requirements whose links changed.
func (s *Service) ReplaceLinks(ctx context.Context, tenant, serviceID string, sets []LinkSet) (int, error) {
	d, err := s.get(ctx, tenant, serviceID)
	if err != nil {
		return 0, err
	}
	sets, err = CheckLinkSets(serviceID, sets)
	if err != nil {
		return 0, err
	}
	for i := range sets {
		sets[i].Whole = d.Version < 5 && !sets[i].TrackerHolds
	}
	if len(sets) == 0 {
		return 0, nil
	}
	n, err := s.d.Links.ReplaceIssueLinks(ctx, tenant, serviceID, sets)
	if err != nil {
		if apperr.As(err) != nil {
			return 0, err
		}
		return 0, fmt.Errorf("replace the issue links of integration %s: %w", serviceID, err)
	}
	return n, nil
}

// Settings answers the tenant's admin settings.
func (s *Service) Settings(ctx context.Context, tenant string) (Settings, error) {
	st, err := s.d.Settings.Get(ctx, tenant)
	if err != nil {
		return Settings{}, fmt.Errorf("get settings: %w", err)
	}
	return st, nil
}

// PutSettings stores the tenant's admin settings.
func (s *Service) PutSettings(ctx context.Context, tenant string, st Settings) (Settings, error) {
	for _, f := range st.SuspectFields {
		if !requirement.ValidSuspectField(f) {
			return Settings{}, apperr.InvalidField("suspectFields", "unknown field %q: use text, properties, dependencies, status or @Name", f)
		}
	}
	if st.SuspectFields != nil {
		st.SuspectFields = slices.Compact(slices.Clone(st.SuspectFields))
	}
	if err := s.d.Settings.Put(ctx, tenant, st); err != nil {
		return Settings{}, fmt.Errorf("put settings: %w", err)
	}
	return st, nil
}
