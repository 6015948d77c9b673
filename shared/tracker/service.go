package tracker

import (
	"time"

	"github.com/reqtrace/reqtrace/shared/page"
)

// Deps are what a Service is built from. Stores and the wiki client are
// required by the operations that use them; Sanitize and Now have defaults.
type Deps struct {
	Applinks ApplinkStore
	Tokens   TokenStore
	Links    LinkStore
	Pending  PendingStore
	Wiki     WikiClient
	// Sanitize turns untrusted HTML into a stored excerpt; page.Sanitize
	// (the wiki's own excerpt sanitizer, idempotent) when nil.
	Sanitize func(string) string
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Service is the tracker's business logic. It is safe for concurrent use.
type Service struct {
	applinks ApplinkStore
	tokens   TokenStore
	links    LinkStore
	pending  PendingStore
	wiki     WikiClient
	sanitize func(string) string
	now      func() time.Time
}

// New returns a Service over d.
func New(d Deps) *Service {
	s := &Service{applinks: d.Applinks, tokens: d.Tokens, links: d.Links, pending: d.Pending,
		wiki: d.Wiki, sanitize: d.Sanitize, now: d.Now}
	if s.sanitize == nil {
		s.sanitize = page.Sanitize
	}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}
