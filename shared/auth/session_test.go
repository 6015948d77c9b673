package auth_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/auth/authtest"
)

// memSessions is an in-memory auth.SessionStore.
type memSessions struct {
	mu sync.Mutex
	m  map[string]auth.Session
}

func (s *memSessions) PutSession(_ context.Context, h string, sess auth.Session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]auth.Session{}
	}
	s.m[h] = sess
	return nil
}

func (s *memSessions) LookupSession(_ context.Context, h string) (auth.Session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sess, ok := s.m[h]
	if !ok {
		return auth.Session{}, apperr.ErrNotFound
	}
	return sess, nil
}

func (s *memSessions) DeleteSession(_ context.Context, h string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, h)
	return nil
}

func TestSessions(t *testing.T) {
	ctx := context.Background()
	tokens := &authtest.Tokens{}
	user := auth.Principal{Tenant: "demo", App: auth.Wiki, Kind: auth.User, User: "alice"}
	_ = tokens.PutToken(ctx, auth.HashToken("wiki-user"), user)
	_ = tokens.PutToken(ctx, auth.HashToken("tracker-user"), auth.Principal{Tenant: "demo", App: auth.Tracker, Kind: auth.User, User: "bob"})
	_ = tokens.PutToken(ctx, auth.HashToken("link"), auth.Principal{Tenant: "demo", App: auth.Wiki, Kind: auth.Link, User: "link:jira-1", Scope: "jira-1"})
	store := &memSessions{}
	now := time.Unix(1_000_000, 0)
	s := auth.NewSessions(store, auth.NewAuthenticator(tokens, 0), auth.Wiki, time.Hour)
	s.Now = func() time.Time { return now }

	for _, tok := range []string{"tracker-user", "link", "unknown", ""} {
		if _, _, err := s.Open(ctx, tok); !errors.Is(err, apperr.ErrUnauthorized) {
			t.Errorf("Open(%q) = %v, want unauthorized", tok, err)
		}
	}
	id, exp, err := s.Open(ctx, "wiki-user")
	if err != nil || !exp.Equal(now.Add(time.Hour)) {
		t.Fatalf("Open = %v, %v", exp, err)
	}
	for h, sess := range store.m {
		if h == id || h == auth.HashToken("wiki-user") || sess.TokenHash != auth.HashToken("wiki-user") {
			t.Errorf("stored %s: %+v: the store must hold hashes only", h, sess)
		}
	}
	if p, _, err := s.Resolve(ctx, id); err != nil || p != user {
		t.Fatalf("Resolve = %+v, %v", p, err)
	}
	// Expiry is the server's: one second past it, the session is gone.
	now = now.Add(time.Hour)
	if _, _, err := s.Resolve(ctx, id); !errors.Is(err, apperr.ErrUnauthorized) {
		t.Errorf("Resolve at the expiry = %v, want unauthorized", err)
	}
	now = now.Add(-time.Hour)
	// A deleted token ends its sessions (no cache here: TTL 0).
	_ = tokens.DeleteToken(ctx, auth.HashToken("wiki-user"))
	if _, _, err := s.Resolve(ctx, id); !errors.Is(err, apperr.ErrUnauthorized) {
		t.Errorf("Resolve after the token's deletion = %v, want unauthorized", err)
	}
	_ = tokens.PutToken(ctx, auth.HashToken("wiki-user"), user)
	if err := s.Close(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Resolve(ctx, id); !errors.Is(err, apperr.ErrUnauthorized) {
		t.Errorf("Resolve after Close = %v, want unauthorized", err)
	}
}
