package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

// Session is a browser session of the wiki's web pages, opened by a login
// with a token. It keeps the token's hash, never the token: every request
// of the session is authenticated again through that hash, so a revoked
// token or a changed role ends or changes its sessions too (within the
// Authenticator's cache TTL).
type Session struct {
	TokenHash string
	Tenant    string
	User      string
	ExpiresAt time.Time
}

// SessionStore persists sessions by the hash of their id (the cookie's
// value is never stored either).
type SessionStore interface {
	// PutSession stores a session under the hash of its id.
	PutSession(ctx context.Context, idHash string, s Session) error
	// LookupSession returns a stored session, or apperr.ErrNotFound. An
	// expired session may still be returned until the store deletes it.
	LookupSession(ctx context.Context, idHash string) (Session, error)
	// DeleteSession removes a session; an absent one is not an error.
	DeleteSession(ctx context.Context, idHash string) error
}

// Sessions opens, resolves and closes the browser sessions of one
// application. A session lasts a fixed time from its login (its TTL), use
// does not extend it.
type Sessions struct {
	store SessionStore
	authn *Authenticator
	app   App
	ttl   time.Duration
	// Now is the clock (time.Now by default); tests replace it.
	Now func() time.Time
}

// DefaultSessionTTL is how long a session lasts when no TTL is configured.
const DefaultSessionTTL = 8 * time.Hour

// NewSessions returns the sessions of app, authenticating logins with
// authn and lasting ttl (DefaultSessionTTL when ttl is not positive).
func NewSessions(store SessionStore, authn *Authenticator, app App, ttl time.Duration) *Sessions {
	if ttl <= 0 {
		ttl = DefaultSessionTTL
	}
	return &Sessions{store: store, authn: authn, app: app, ttl: ttl, Now: time.Now}
}

// Open checks token and opens a session for it: it answers the session's
// id (the cookie's value) and when it expires. The token must be a
// person's of the sessions' application: a link credential or another
// application's token is unauthorized, like an unknown one.
func (s *Sessions) Open(ctx context.Context, token string) (id string, expires time.Time, err error) {
	p, err := s.authn.Authenticate(ctx, token)
	if err != nil {
		return "", time.Time{}, err
	}
	if p.App != s.app || p.Kind != User {
		return "", time.Time{}, apperr.Unauthorizedf("this is not a %s user's token", s.app)
	}
	id = NewToken()
	expires = s.Now().Add(s.ttl).UTC()
	sess := Session{TokenHash: HashToken(token), Tenant: p.Tenant, User: p.User, ExpiresAt: expires}
	if err := s.store.PutSession(ctx, HashToken(id), sess); err != nil {
		return "", time.Time{}, fmt.Errorf("store session: %w", err)
	}
	return id, expires, nil
}

// Resolve returns the principal a session acts as and when the session
// expires. An unknown or expired session, or one whose token is no
// longer valid, is unauthorized.
func (s *Sessions) Resolve(ctx context.Context, id string) (Principal, time.Time, error) {
	if id == "" || len(id) > 512 {
		return Principal{}, time.Time{}, apperr.Unauthorizedf("no session")
	}
	sess, err := s.store.LookupSession(ctx, HashToken(id))
	if errors.Is(err, apperr.ErrNotFound) {
		return Principal{}, time.Time{}, apperr.Unauthorizedf("no session")
	}
	if err != nil {
		return Principal{}, time.Time{}, fmt.Errorf("look up session: %w", err)
	}
	if !s.Now().Before(sess.ExpiresAt) {
		return Principal{}, time.Time{}, apperr.Unauthorizedf("the session has expired")
	}
	p, err := s.authn.byHash(ctx, sess.TokenHash)
	if err != nil {
		return Principal{}, time.Time{}, err
	}
	if p.App != s.app || p.Kind != User || p.Tenant != sess.Tenant {
		return Principal{}, time.Time{}, apperr.Unauthorizedf("the session's token is no longer valid")
	}
	return p, sess.ExpiresAt, nil
}

// Close ends a session (logout); an unknown session is not an error.
func (s *Sessions) Close(ctx context.Context, id string) error {
	if id == "" || len(id) > 512 {
		return nil
	}
	if err := s.store.DeleteSession(ctx, HashToken(id)); err != nil {
		return fmt.Errorf("delete session: %w", err)
	}
	return nil
}
