package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// adminCommand runs the command's arguments on st and answers its output,
// trimmed.
func adminCommand(ctx context.Context, st stores) func(args ...string) (string, error) {
	return func(args ...string) (string, error) {
		var out bytes.Buffer
		err := dispatch(ctx, st, args, &out)
		return strings.TrimSpace(out.String()), err
	}
}

func TestTenantAndTokenLifecycle(t *testing.T) {
	env := testenv.AWS(t)
	ctx := context.Background()
	st := openStores(env.DynamoDB, env.AuthTable, env.WikiTable)
	store := st.auth
	admin := adminCommand(ctx, st)

	if _, err := admin("token", "create", "-tenant", "globex", "-app", "wiki", "-user", "ann"); err == nil {
		t.Fatal("token created for a tenant that does not exist")
	}
	if _, err := admin("tenant", "create", "Bad#Id"); !errors.Is(err, apperr.ErrInvalid) {
		t.Fatalf("invalid tenant id: %v", err)
	}
	if _, err := admin("tenant", "create", "globex", "-name", "Globex"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin("token", "create", "-tenant", "globex", "-app", "jira", "-user", "ann"); err == nil {
		t.Fatal("unknown app accepted")
	}
	token, err := admin("token", "create", "-tenant", "globex", "-app", "tracker", "-user", "ann", "-admin")
	if err != nil {
		t.Fatal(err)
	}
	p, err := store.LookupToken(ctx, auth.HashToken(token))
	want := auth.Principal{Tenant: "globex", App: auth.Tracker, Kind: auth.User, User: "ann", Admin: true}
	if err != nil || p != want {
		t.Fatalf("token %q resolves to %+v, %v", token, p, err)
	}
	if _, err := store.LookupToken(ctx, token); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatal("the plain token is stored; only its hash may be")
	}
	if _, err := admin("token", "revoke", token); err != nil {
		t.Fatal(err)
	}
	if _, err := store.LookupToken(ctx, auth.HashToken(token)); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("revoked token still resolves: %v", err)
	}
	if _, err := admin("nonsense"); !errors.Is(err, errUsage) {
		t.Fatalf("usage error: %v", err)
	}
}

func TestSeedDevRefusesRemoteEndpoints(t *testing.T) {
	env := testenv.AWS(t)
	st := openStores(env.DynamoDB, env.AuthTable, env.WikiTable)
	store := st.auth
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "https://dynamodb.eu-west-1.amazonaws.com")
	if err := dispatch(context.Background(), st, []string{"seed-dev"}, new(bytes.Buffer)); err == nil {
		t.Fatal("development tokens seeded into a non-loopback endpoint")
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", env.DynamoDBEndpoint)
	if err := dispatch(context.Background(), st, []string{"seed-dev"}, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	p, err := store.LookupToken(context.Background(), auth.HashToken("acme-wiki-admin"))
	if err != nil || p.Tenant != "acme" || !p.Admin || p.App != auth.Wiki {
		t.Fatalf("seeded acme-wiki-admin = %+v, %v", p, err)
	}
}

func TestTenantLimit(t *testing.T) {
	env := testenv.AWS(t)
	ctx := context.Background()
	st := openStores(env.DynamoDB, env.AuthTable, env.WikiTable)
	admin := adminCommand(ctx, st)
	rate := func() int {
		t.Helper()
		rps, err := st.rates.TenantRate(ctx, "globex")
		if err != nil {
			t.Fatal(err)
		}
		return rps
	}

	for _, args := range [][]string{{"globex", "500"}, {"globex", "default"}, {"globex"}} {
		if _, err := admin(append([]string{"tenant", "limit"}, args...)...); err == nil || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("tenant limit %v for a tenant never created: %v", args, err)
		}
	}
	if _, err := admin("tenant", "create", "globex"); err != nil {
		t.Fatal(err)
	}
	if out, err := admin("tenant", "limit", "globex"); err != nil || !strings.Contains(out, "default rate") {
		t.Fatalf("show before any limit: %q, %v", out, err)
	}
	for _, bad := range []string{"0", "-3", "2.5", "lots", "100001"} {
		if _, err := admin("tenant", "limit", "globex", bad); err == nil {
			t.Errorf("tenant limit globex %s accepted", bad)
		}
	}
	if rate() != 0 {
		t.Fatal("a refused limit was stored")
	}
	if out, err := admin("tenant", "limit", "globex", "500"); err != nil || !strings.Contains(out, "500 requests per second") {
		t.Fatalf("set: %q, %v", out, err)
	}
	if rate() != 500 {
		t.Fatalf("stored rate %d, want 500", rate())
	}
	if out, err := admin("tenant", "limit", "globex"); err != nil || !strings.Contains(out, "500 requests per second") || !strings.Contains(out, "own rate") {
		t.Fatalf("show: %q, %v", out, err)
	}
	if out, err := admin("tenant", "limit", "globex", "default"); err != nil || !strings.Contains(out, "default rate") {
		t.Fatalf("clear: %q, %v", out, err)
	}
	if rate() != 0 {
		t.Fatalf("rate after clear %d, want 0 (the default)", rate())
	}
	if _, err := admin("tenant", "limit", "globex", "5", "extra"); !errors.Is(err, errUsage) {
		t.Fatalf("extra argument: %v, want the usage", err)
	}
}

// TestAdminSaysWhatHappened: creating a tenant twice and revoking a token
// that does not exist are errors (nothing is claimed that did not
// happen); tenants and tokens can be listed and a tenant deleted with its
// tokens.
func TestAdminSaysWhatHappened(t *testing.T) {
	env := testenv.AWS(t)
	ctx := context.Background()
	st := openStores(env.DynamoDB, env.AuthTable, env.WikiTable)
	admin := adminCommand(ctx, st)
	if _, err := admin("tenant", "create", "initech", "-name", "Initech"); err != nil {
		t.Fatal(err)
	}
	if out, err := admin("tenant", "create", "initech", "-name", "Other"); !errors.Is(err, apperr.ErrConflict) || out != "" {
		t.Fatalf("second create: %q %v, want a conflict and no output", out, err)
	}
	if _, err := admin("tenant", "create", "umbrella"); err != nil {
		t.Fatal(err)
	}
	if out, err := admin("tenant", "list"); err != nil || !strings.Contains(out, "initech\tInitech\t") || !strings.Contains(out, "umbrella\t") {
		t.Fatalf("tenant list: %q %v (the name must be the first one's)", out, err)
	}
	if _, err := admin("token", "revoke", "no-such-token"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("revoking a token that does not exist: %v", err)
	}
	tok1, err := admin("token", "create", "-tenant", "initech", "-app", "wiki", "-user", "peter", "-admin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin("token", "create", "-tenant", "initech", "-app", "tracker", "-user", "milton"); err != nil {
		t.Fatal(err)
	}
	other, err := admin("token", "create", "-tenant", "umbrella", "-app", "wiki", "-user", "alice")
	if err != nil {
		t.Fatal(err)
	}
	out, err := admin("token", "list", "initech")
	lines := strings.Split(out, "\n")
	if err != nil || len(lines) != 2 || !strings.Contains(lines[0], "\ttracker\tuser\tmilton\t") || !strings.HasPrefix(lines[1], auth.HashToken(tok1)+"\twiki\tadmin\tpeter\t") {
		t.Fatalf("token list: %q %v", out, err)
	}
	if strings.Contains(out, tok1) {
		t.Fatal("a token itself is listed")
	}
	if _, err := admin("token", "revoke-hash", auth.HashToken(tok1)); err != nil {
		t.Fatal(err)
	}
	if _, err := st.auth.LookupToken(ctx, auth.HashToken(tok1)); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatal("revoked by hash, yet it resolves")
	}
	if out, err := admin("tenant", "delete", "initech"); err != nil || !strings.Contains(out, "1 token(s)") {
		t.Fatalf("tenant delete: %q %v", out, err)
	}
	if out, _ := admin("token", "list", "initech"); out != "" {
		t.Fatalf("tokens left after the tenant's delete: %q", out)
	}
	if ok, _ := st.auth.TenantExists(ctx, "initech"); ok {
		t.Fatal("deleted tenant exists")
	}
	if _, err := admin("tenant", "delete", "initech"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("deleting it again: %v", err)
	}
	if _, err := st.auth.LookupToken(ctx, auth.HashToken(other)); err != nil {
		t.Fatalf("another tenant's token went too: %v", err)
	}
}
