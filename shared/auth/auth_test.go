package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
)

type fakeStore struct {
	tokens  map[string]Principal
	lookups int
}

func (f *fakeStore) LookupToken(_ context.Context, hash string) (Principal, error) {
	f.lookups++
	p, ok := f.tokens[hash]
	if !ok {
		return Principal{}, apperr.ErrNotFound
	}
	return p, nil
}
func (f *fakeStore) PutToken(_ context.Context, hash string, p Principal) error {
	f.tokens[hash] = p
	return nil
}
func (f *fakeStore) DeleteToken(_ context.Context, hash string) error {
	delete(f.tokens, hash)
	return nil
}

func TestAuthenticateCachesPositiveAnswers(t *testing.T) {
	store := &fakeStore{tokens: map[string]Principal{}}
	want := Principal{Tenant: "demo", App: Wiki, Kind: User, User: "alice", Admin: true}
	_ = store.PutToken(context.Background(), HashToken("tok"), want)
	a := NewAuthenticator(store, time.Minute)
	now := time.Unix(1000, 0)
	a.now = func() time.Time { return now }

	for i := 0; i < 3; i++ {
		got, err := a.Authenticate(context.Background(), "tok")
		if err != nil || got != want {
			t.Fatalf("Authenticate = %+v, %v; want %+v", got, err, want)
		}
	}
	if store.lookups != 1 {
		t.Errorf("lookups = %d, want 1 (cached)", store.lookups)
	}
	now = now.Add(2 * time.Minute)
	if _, err := a.Authenticate(context.Background(), "tok"); err != nil {
		t.Fatal(err)
	}
	if store.lookups != 2 {
		t.Errorf("lookups after expiry = %d, want 2", store.lookups)
	}
}

func TestAuthenticateRejects(t *testing.T) {
	a := NewAuthenticator(&fakeStore{tokens: map[string]Principal{}}, time.Minute)
	for _, tok := range []string{"", "unknown", string(make([]byte, 600))} {
		_, err := a.Authenticate(context.Background(), tok)
		if !errors.Is(err, apperr.ErrUnauthorized) {
			t.Errorf("Authenticate(%q) = %v, want unauthorized", tok, err)
		}
	}
}

func TestNewTokenIsRandomAndHashed(t *testing.T) {
	a, b := NewToken(), NewToken()
	if a == b || len(a) != 46 {
		t.Fatalf("tokens %q %q", a, b)
	}
	if HashToken(a) == a || len(HashToken(a)) != 64 {
		t.Fatal("hash is not a sha256 hex")
	}
}

func TestValidTenant(t *testing.T) {
	for id, want := range map[string]bool{"demo": true, "acme-2": true, "": false, "Demo": false, "a#b": false, "-x": false} {
		if got := ValidTenant(id); got != want {
			t.Errorf("ValidTenant(%q) = %v", id, got)
		}
	}
}

// TestDisabledTokensAreNotCached checks that a token of a DISABLED
// integration is looked up again on every call: set ACTIVE again, it works
// at once.
func TestDisabledTokensAreNotCached(t *testing.T) {
	t.Parallel()
	store := &countingStore{p: Principal{Tenant: "demo", App: Wiki, Kind: Link, Scope: "jira-1", Disabled: true}}
	a := NewAuthenticator(store, time.Minute)
	for range 2 {
		if p, err := a.Authenticate(context.Background(), "tok"); err != nil || !p.Disabled {
			t.Fatalf("Authenticate = %+v, %v", p, err)
		}
	}
	store.p.Disabled = false
	if p, err := a.Authenticate(context.Background(), "tok"); err != nil || p.Disabled {
		t.Fatalf("after re-activation = %+v, %v", p, err)
	}
	if store.n != 3 {
		t.Fatalf("%d lookups, want 3 (disabled tokens are not cached)", store.n)
	}
	if _, err := a.Authenticate(context.Background(), "tok"); err != nil || store.n != 3 {
		t.Fatalf("an active token was not cached: %d lookups, %v", store.n, err)
	}
}

type countingStore struct {
	p Principal
	n int
}

func (s *countingStore) LookupToken(context.Context, string) (Principal, error) {
	s.n++
	return s.p, nil
}

func (s *countingStore) PutToken(context.Context, string, Principal) error { return nil }
func (s *countingStore) DeleteToken(context.Context, string) error         { return nil }
