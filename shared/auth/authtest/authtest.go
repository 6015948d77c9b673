// Package authtest holds Tokens, the one in-memory token store of the
// tests of the packages that check or write credentials (auth, tracker,
// integration).
package authtest

import (
	"context"
	"sync"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
)

// Tokens is an in-memory auth.Store keyed by token hash, with
// SetTokenDisabled (integration.TokenStore). It counts lookups. Its zero
// value is empty and ready to use; it is safe for concurrent use.
type Tokens struct {
	mu      sync.Mutex
	m       map[string]auth.Principal
	lookups int
}

var _ auth.Store = (*Tokens)(nil)

// LookupToken implements auth.Store.
func (t *Tokens) LookupToken(_ context.Context, hash string) (auth.Principal, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lookups++
	p, ok := t.m[hash]
	if !ok {
		return auth.Principal{}, apperr.ErrNotFound
	}
	return p, nil
}

// PutToken implements auth.Store.
func (t *Tokens) PutToken(_ context.Context, hash string, p auth.Principal) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[string]auth.Principal{}
	}
	t.m[hash] = p
	return nil
}

// DeleteToken implements auth.Store.
func (t *Tokens) DeleteToken(_ context.Context, hash string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, hash)
	return nil
}

// SetTokenDisabled sets or clears the disabled flag of a stored hash;
// apperr.ErrNotFound when it is not stored.
func (t *Tokens) SetTokenDisabled(_ context.Context, hash string, disabled bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.m[hash]
	if !ok {
		return apperr.ErrNotFound
	}
	p.Disabled = disabled
	t.m[hash] = p
	return nil
}

// Token returns the principal stored for hash.
func (t *Tokens) Token(hash string) (auth.Principal, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.m[hash]
	return p, ok
}

// Len returns the number of stored hashes.
func (t *Tokens) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

// Lookups returns the number of LookupToken calls so far.
func (t *Tokens) Lookups() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.lookups
}
