package tracker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/auth/authtest"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

func TestRegister(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)

	got, err := f.svc.Register(ctx, tenant, "wiki-2", tracker.Registration{Name: "Docs", URL: "https://docs.example.com/", WikiToken: ptr("secret")})
	if err != nil {
		t.Fatal(err)
	}
	a := got.Applink
	if !got.Created || got.IncomingToken == "" || a.Mode != tracker.Auto || a.Version != tracker.DefaultVersion ||
		a.ServiceID != "wiki-2" || a.URL != "https://docs.example.com" || a.Name != "Docs" || a.WikiToken != "secret" {
		t.Fatalf("created %+v", got)
	}
	p, ok := f.tokens.Token(auth.HashToken(got.IncomingToken))
	want := auth.Principal{Tenant: tenant, App: auth.Tracker, Kind: auth.Link, User: "link:wiki-2", Scope: "wiki-2"}
	if !ok || p != want {
		t.Fatalf("incoming token principal = %+v, %v; want %+v", p, ok, want)
	}

	// An update keeps the token, the wiki token when absent, mode and version.
	if _, err := f.svc.SetMode(ctx, tenant, "wiki-2", "MANUAL"); err != nil {
		t.Fatal(err)
	}
	up, err := f.svc.Register(ctx, tenant, "wiki-2", tracker.Registration{URL: "https://docs2.example.com", ServiceID: "svc-9"})
	if err != nil {
		t.Fatal(err)
	}
	if up.Created || up.IncomingToken != "" || up.Applink.WikiToken != "secret" || up.Applink.Mode != tracker.Manual ||
		up.Applink.Name != "wiki-2" || up.Applink.ServiceID != "svc-9" || up.Applink.IncomingTokenHash != a.IncomingTokenHash {
		t.Fatalf("updated %+v", up)
	}

	// Rotation: a new token, the old one deleted.
	rot, err := f.svc.Register(ctx, tenant, "wiki-2", tracker.Registration{URL: "https://docs2.example.com", RotateToken: true})
	if err != nil {
		t.Fatal(err)
	}
	if rot.IncomingToken == "" || rot.IncomingToken == got.IncomingToken {
		t.Fatalf("rotation gave %q", rot.IncomingToken)
	}
	if _, ok := f.tokens.Token(auth.HashToken(got.IncomingToken)); ok {
		t.Error("the old token survived the rotation")
	}
	if _, ok := f.tokens.Token(auth.HashToken(rot.IncomingToken)); !ok {
		t.Error("the new token is not stored")
	}
}

func TestRegisterInvalid(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	for name, tc := range map[string]struct {
		id  string
		reg tracker.Registration
	}{
		"bad id":       {"a b", tracker.Registration{URL: "http://w"}},
		"no url":       {"w", tracker.Registration{}},
		"relative url": {"w", tracker.Registration{URL: "/wiki"}},
		"bad mode":     {"w", tracker.Registration{URL: "http://w", Mode: ptr("auto")}},
		"bad version":  {"w", tracker.Registration{URL: "http://w", Version: ptr(0)}},
		"bad service":  {"w", tracker.Registration{URL: "http://w", ServiceID: "a/b"}},
		"metadata url": {"w", tracker.Registration{URL: "http://169.254.169.254"}},
		"loopback url": {"w", tracker.Registration{URL: "http://127.0.0.1:3000"}},
		"private url":  {"w", tracker.Registration{URL: "http://10.0.0.8"}},
		"localhost":    {"w", tracker.Registration{URL: "http://localhost:3000"}},
		"port 0":       {"w", tracker.Registration{URL: "http://wiki.example.com:0"}},
		"port 99999":   {"w", tracker.Registration{URL: "http://wiki.example.com:99999"}},
	} {
		if _, err := f.svc.Register(context.Background(), tenant, tc.id, tc.reg); !errors.Is(err, apperr.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	// Control characters and path-like ids: a 400 naming the field.
	for name, tc := range map[string]struct {
		id    string
		reg   tracker.Registration
		field string
	}{
		"id ..":         {"..", tracker.Registration{URL: "http://w"}, "applinkId"},
		"id .":          {".", tracker.Registration{URL: "http://w"}, "applinkId"},
		"service ..":    {"w", tracker.Registration{URL: "http://w", ServiceID: ".."}, "serviceId"},
		"service .":     {"w", tracker.Registration{URL: "http://w", ServiceID: "."}, "serviceId"},
		"service NUL":   {"w", tracker.Registration{URL: "http://w", ServiceID: "a\x00"}, "serviceId"},
		"service colon": {"w", tracker.Registration{URL: "http://w", ServiceID: "a:b"}, "serviceId"},
		"name NUL":      {"w", tracker.Registration{URL: "http://w", Name: "Wiki\x00"}, "name"},
		"name ESC":      {"w", tracker.Registration{URL: "http://w", Name: "\x1b[2JWiki"}, "name"},
		"name LF":       {"w", tracker.Registration{URL: "http://w", Name: "Wiki\nX"}, "name"},
		"token CR LF":   {"w", tracker.Registration{URL: "http://w", WikiToken: ptr("secret\r\nX-Injected: 1")}, "token"},
		"token DEL":     {"w", tracker.Registration{URL: "http://w", WikiToken: ptr("secret\x7f")}, "token"},
	} {
		_, err := f.svc.Register(context.Background(), tenant, tc.id, tc.reg)
		if e := apperr.As(err); e == nil || e.Code != apperr.Invalid || e.Field != tc.field {
			t.Errorf("%s: %v, want a 400 naming %q", name, err, tc.field)
		}
	}
	if f.tokens.Len() != 1 {
		t.Errorf("%d tokens stored, want only the fixture's", f.tokens.Len())
	}
}

// Private targets are accepted when the operator allows them; link-local
// ones never.
func TestRegisterPrivateTargets(t *testing.T) {
	t.Parallel()
	store := newMemStore()
	svc := tracker.New(tracker.Deps{Applinks: store, Tokens: &authtest.Tokens{}, AllowPrivateTargets: true})
	ctx := context.Background()
	if _, err := svc.Register(ctx, tenant, "local", tracker.Registration{URL: "http://127.0.0.1:3000"}); err != nil {
		t.Errorf("loopback with private targets allowed: %v", err)
	}
	_, err := svc.Register(ctx, tenant, "meta", tracker.Registration{URL: "http://[::ffff:169.254.169.254]/"})
	if !errors.Is(err, apperr.ErrInvalid) || !strings.Contains(err.Error(), "url") {
		t.Errorf("link-local: %v", err)
	}
}

func TestRegisterStoreFailureDropsNewToken(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	boom := errors.New("boom")
	f.store.fail = func(op string) error {
		if op == "PutApplink" {
			return boom
		}
		return nil
	}
	if _, err := f.svc.Register(context.Background(), tenant, "wiki-3", tracker.Registration{URL: "http://w"}); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if f.tokens.Len() != 1 {
		t.Errorf("%d tokens stored, want only the fixture's", f.tokens.Len())
	}
}

func TestModeAndVersion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	a, err := f.svc.SetMode(ctx, tenant, "wiki-1", "DISABLED")
	if err != nil || a.Mode != tracker.Disabled {
		t.Fatalf("SetMode = %+v, %v", a, err)
	}
	if _, err := f.svc.SetMode(ctx, tenant, "wiki-1", "manual"); !errors.Is(err, apperr.ErrInvalid) {
		t.Errorf("lower-case mode: %v", err)
	}
	for _, tc := range []struct{ in, want int }{{2, 2}, {7, 5}, {5, 5}, {4, 4}, {1, 1}} {
		a, err := f.svc.SetVersion(ctx, tenant, "wiki-1", tc.in)
		if err != nil || a.Version != tc.want {
			t.Errorf("SetVersion(%d) = %d, %v; want %d", tc.in, a.Version, err, tc.want)
		}
	}
	if _, err := f.svc.SetVersion(ctx, tenant, "wiki-1", 0); !errors.Is(err, apperr.ErrInvalid) {
		t.Errorf("version 0: %v", err)
	}
	if _, err := f.svc.SetMode(ctx, "acme", "wiki-1", "AUTO"); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("another tenant's applink: %v", err)
	}
}

func TestRecognize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	user := &auth.Principal{Tenant: tenant, App: auth.Tracker, Kind: auth.User, User: "u"}
	other := &auth.Principal{Tenant: "acme", App: auth.Tracker, Kind: auth.User, User: "u"}
	own := &auth.Principal{Tenant: tenant, App: auth.Tracker, Kind: auth.Link, Scope: "wiki-1"}
	stranger := &auth.Principal{Tenant: tenant, App: auth.Tracker, Kind: auth.Link, Scope: "wiki-9"}
	for _, tc := range []struct {
		name     string
		p        *auth.Principal
		id, url  string
		expected bool
	}{
		{"anonymous by id", nil, "wiki-1", "", false},
		{"user by id", user, "wiki-1", "", true},
		{"user by url", user, "", "http://WIKI.test/", true},
		{"user by id and url", user, "wiki-1", "http://wiki.test", true},
		{"user by id, wrong url", user, "wiki-1", "http://other.test", false},
		{"user unknown id", user, "wiki-2", "", false},
		{"user bad id", user, "a b", "", false},
		{"user unknown url", user, "", "http://other.test", false},
		{"other tenant", other, "wiki-1", "", false},
		{"own link", own, "wiki-1", "", true},
		{"own link by url", own, "", "http://wiki.test", true},
		{"link asks for another", own, "wiki-2", "", false},
		{"link of a missing applink", stranger, "wiki-1", "", false},
	} {
		got, err := f.svc.Recognize(ctx, tc.p, tc.id, tc.url)
		if err != nil || got != tc.expected {
			t.Errorf("%s: Recognize = %v, %v; want %v", tc.name, got, err, tc.expected)
		}
	}
}

// TestDeleteApplinkRetried: a deletion that fails half way (the purge)
// leaves the applink, without its credential, and repeating it finishes
// it; a failed purge when creating an applink creates nothing.
func TestDeleteApplinkRetried(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	a, err := f.svc.Applink(ctx, tenant, "wiki-1")
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	f.store.fail = func(op string) error {
		if op == "PurgeApplink" {
			return boom
		}
		return nil
	}
	if err := f.svc.DeleteApplink(ctx, tenant, "wiki-1"); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if _, err := f.svc.Applink(ctx, tenant, "wiki-1"); err != nil {
		t.Fatalf("the applink went before its links: %v", err)
	}
	if _, ok := f.tokens.Token(a.IncomingTokenHash); ok {
		t.Error("the incoming token outlived a deletion that started")
	}
	if _, err := f.svc.Register(ctx, tenant, "wiki-3", tracker.Registration{URL: "http://w"}); !errors.Is(err, boom) {
		t.Fatalf("register with a failing purge: %v", err)
	}
	if f.tokens.Len() != 0 {
		t.Errorf("%d tokens stored, want none", f.tokens.Len())
	}
	f.store.fail = nil
	if err := f.svc.DeleteApplink(ctx, tenant, "wiki-1"); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.DeleteApplink(ctx, tenant, "wiki-1"); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if all, err := f.svc.Applinks(ctx, tenant); err != nil || len(all) != 0 {
		t.Errorf("applinks after delete: %+v, %v", all, err)
	}
}
