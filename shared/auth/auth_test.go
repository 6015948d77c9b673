package auth_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/auth/authtest"
)

func TestAuthenticateCachesPositiveAnswers(t *testing.T) {
	store := &authtest.Tokens{}
	want := auth.Principal{Tenant: "demo", App: auth.Wiki, Kind: auth.User, User: "alice", Admin: true}
	_ = store.PutToken(context.Background(), auth.HashToken("tok"), want)
	a := auth.NewAuthenticator(store, time.Minute)
	now := time.Unix(1000, 0)
	auth.SetNow(a, func() time.Time { return now })

	for i := 0; i < 3; i++ {
		got, err := a.Authenticate(context.Background(), "tok")
		if err != nil || got != want {
			t.Fatalf("Authenticate = %+v, %v; want %+v", got, err, want)
		}
	}
	if store.Lookups() != 1 {
		t.Errorf("lookups = %d, want 1 (cached)", store.Lookups())
	}
	now = now.Add(2 * time.Minute)
	if _, err := a.Authenticate(context.Background(), "tok"); err != nil {
		t.Fatal(err)
	}
	if store.Lookups() != 2 {
		t.Errorf("lookups after expiry = %d, want 2", store.Lookups())
	}
}

func TestAuthenticateRejects(t *testing.T) {
	a := auth.NewAuthenticator(&authtest.Tokens{}, time.Minute)
	for _, tok := range []string{"", "unknown", string(make([]byte, 600))} {
		_, err := a.Authenticate(context.Background(), tok)
		if !errors.Is(err, apperr.ErrUnauthorized) {
			t.Errorf("Authenticate(%q) = %v, want unauthorized", tok, err)
		}
	}
}

func TestNewTokenIsRandomAndHashed(t *testing.T) {
	a, b := auth.NewToken(), auth.NewToken()
	if a == b || len(a) != 46 {
		t.Fatalf("tokens %q %q", a, b)
	}
	if auth.HashToken(a) == a || len(auth.HashToken(a)) != 64 {
		t.Fatal("hash is not a sha256 hex")
	}
}

func TestValidTenant(t *testing.T) {
	for id, want := range map[string]bool{"demo": true, "acme-2": true, "": false, "Demo": false, "a#b": false, "-x": false} {
		if got := auth.ValidTenant(id); got != want {
			t.Errorf("ValidTenant(%q) = %v", id, got)
		}
	}
}

// TestDisabledTokensAreNotCached checks that a token of a DISABLED
// integration is looked up again on every call: set ACTIVE again, it works
// at once.
func TestDisabledTokensAreNotCached(t *testing.T) {
	t.Parallel()
	store := &authtest.Tokens{}
	hash := auth.HashToken("tok")
	_ = store.PutToken(context.Background(), hash, auth.Principal{Tenant: "demo", App: auth.Wiki, Kind: auth.Link, Scope: "jira-1", Disabled: true})
	a := auth.NewAuthenticator(store, time.Minute)
	for range 2 {
		if p, err := a.Authenticate(context.Background(), "tok"); err != nil || !p.Disabled {
			t.Fatalf("Authenticate = %+v, %v", p, err)
		}
	}
	_ = store.SetTokenDisabled(context.Background(), hash, false)
	if p, err := a.Authenticate(context.Background(), "tok"); err != nil || p.Disabled {
		t.Fatalf("after re-activation = %+v, %v", p, err)
	}
	if store.Lookups() != 3 {
		t.Fatalf("%d lookups, want 3 (disabled tokens are not cached)", store.Lookups())
	}
	if _, err := a.Authenticate(context.Background(), "tok"); err != nil || store.Lookups() != 3 {
		t.Fatalf("an active token was not cached: %d lookups, %v", store.Lookups(), err)
	}
}
