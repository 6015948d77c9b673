// Package auth resolves bearer tokens to principals: the tenant, the
// application (wiki or tracker), the user and whether that user administers
// the application. Tokens are stored only as SHA-256 hashes; the plain token
// is shown once, when it is created.
package auth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/ttlcache"
)

// App is one of the two applications a token belongs to.
type App string

// The applications.
const (
	Wiki    App = "wiki"
	Tracker App = "tracker"
)

// Kind says what a token stands for.
type Kind string

// The kinds of principal.
const (
	// User is a person using the wiki or the tracker.
	User Kind = "user"
	// Link is the credential one application holds to call the other: on the
	// wiki it is an integration's incomingToken (Scope = serviceId), on the
	// tracker an application link's incomingToken (Scope = applinkId).
	Link Kind = "link"
)

// Principal is who a request acts as.
type Principal struct {
	Tenant string
	App    App
	Kind   Kind
	User   string // user name; for a Link, "link:<scope>"
	Admin  bool
	Scope  string // serviceId or applinkId of a Link principal
	// Disabled is set on the Link credential of a DISABLED integration:
	// the credential is known (not 401) but answers 403 everywhere until
	// the integration is ACTIVE again.
	Disabled bool
}

// Store persists token hashes.
type Store interface {
	// LookupToken returns the principal of a token hash, or apperr.ErrNotFound.
	LookupToken(ctx context.Context, hash string) (Principal, error)
	// PutToken stores a token hash for a principal (overwriting).
	PutToken(ctx context.Context, hash string, p Principal) error
	// DeleteToken removes a token hash; absent hashes are not an error.
	DeleteToken(ctx context.Context, hash string) error
}

// HashToken returns the stored form of a token.
func HashToken(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// NewToken returns a fresh random token ("rt_" + 43 URL-safe characters).
func NewToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err)) // cannot happen on Linux
	}
	return "rt_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// tenantPattern, with the length checked apart (a bounded repetition
// compiles to one copy per repetition at package init).
var tenantPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// ValidTenant reports whether id is a valid tenant id: lower-case letters,
// digits and '-', at most 63 characters. Tenant ids start every key, so they
// never contain the key separator '#'.
func ValidTenant(id string) bool { return len(id) <= 63 && tenantPattern.MatchString(id) }

type contextKey struct{}

// WithPrincipal returns a context carrying p.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, contextKey{}, p)
}

// FromContext returns the principal of an authenticated request.
func FromContext(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(contextKey{}).(Principal)
	return p, ok
}

// Authenticator resolves tokens with a short in-process cache, so that a warm
// Lambda answers most requests with no AuthTable read.
type Authenticator struct {
	store Store
	cache *ttlcache.Cache[string, Principal]
}

const maxCached = 10000

// NewAuthenticator returns an Authenticator caching positive answers for ttl.
// A revoked token may thus keep working for up to ttl.
func NewAuthenticator(store Store, ttl time.Duration) *Authenticator {
	return &Authenticator{store: store, cache: ttlcache.New[string, Principal](ttl, maxCached)}
}

// Authenticate returns the principal of token, or an unauthorized error.
func (a *Authenticator) Authenticate(ctx context.Context, token string) (Principal, error) {
	if token == "" {
		return Principal{}, apperr.Unauthorizedf("missing bearer token")
	}
	if len(token) > 512 {
		return Principal{}, apperr.Unauthorizedf("invalid bearer token")
	}
	return a.byHash(ctx, HashToken(token))
}

// byHash resolves a token by its stored form (a session keeps only that).
func (a *Authenticator) byHash(ctx context.Context, hash string) (Principal, error) {
	if p, ok := a.cache.Get(hash); ok {
		return p, nil
	}
	p, err := a.store.LookupToken(ctx, hash)
	if errors.Is(err, apperr.ErrNotFound) {
		return Principal{}, apperr.Unauthorizedf("invalid bearer token")
	}
	if err != nil {
		return Principal{}, fmt.Errorf("look up token: %w", err)
	}
	if p.Disabled {
		// Not cached: a DISABLED integration set ACTIVE again works at
		// once (its tracker's retries must not meet a stale 403); the other
		// way round takes up to the TTL, like a revocation.
		return p, nil
	}
	a.cache.Put(hash, p)
	return p, nil
}

// Forget drops a token from the cache (after it was rotated or deleted here).
func (a *Authenticator) Forget(token string) {
	a.cache.Delete(HashToken(token))
}
