package tracker

import (
	"log/slog"
	"time"

	"github.com/reqtrace/reqtrace/shared/page"
)

// Deps are what a Service is built from. Stores and the wiki client are
// required by the operations that use them; Outbox, Logger, Sanitize and Now
// are optional.
type Deps struct {
	Applinks ApplinkStore
	Tokens   TokenStore
	Links    LinkStore
	Pending  PendingStore
	Locks    IssueLockStore
	// Outbox sends marked TRACKER link sets right after an edit; nil leaves
	// them to the scheduled tracker outbox function.
	Outbox OutboxStore
	Wiki   WikiClient
	// Logger receives warnings about sends that failed (they are retried);
	// discarded when nil.
	Logger *slog.Logger
	// Sanitize turns untrusted HTML into a stored excerpt; page.Sanitize
	// (the wiki's own excerpt sanitizer, idempotent) when nil.
	Sanitize func(string) string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// AllowPrivateTargets (ALLOW_PRIVATE_TARGETS) accepts applink urls on
	// loopback and private addresses.
	AllowPrivateTargets bool
}

// Service is the tracker's business logic. It is safe for concurrent use.
type Service struct {
	applinks ApplinkStore
	tokens   TokenStore
	links    LinkStore
	pending  PendingStore
	locks    IssueLockStore
	outbox   OutboxStore
	wiki     WikiClient
	logger   *slog.Logger
	sanitize func(string) string
	now      func() time.Time
	owner    string // this Service's identity in leases
	// allowPrivate accepts applink urls on loopback and private addresses.
	allowPrivate bool
}

// New returns a Service over d.
func New(d Deps) *Service {
	s := &Service{applinks: d.Applinks, tokens: d.Tokens, links: d.Links, pending: d.Pending, locks: d.Locks,
		outbox: d.Outbox, wiki: d.Wiki, logger: d.Logger, sanitize: d.Sanitize, now: d.Now, owner: randomID(),
		allowPrivate: d.AllowPrivateTargets}
	if s.sanitize == nil {
		s.sanitize = page.Sanitize
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	return s
}
