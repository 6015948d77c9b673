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
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestTenantAndTokenLifecycle(t *testing.T) {
	env := testenv.AWS(t)
	ctx := context.Background()
	store := authtable.NewAuthStore(env.DynamoDB, env.AuthTable)
	admin := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := dispatch(ctx, store, args, &out)
		return strings.TrimSpace(out.String()), err
	}

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
	store := authtable.NewAuthStore(env.DynamoDB, env.AuthTable)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", "https://dynamodb.eu-west-1.amazonaws.com")
	if err := dispatch(context.Background(), store, []string{"seed-dev"}, new(bytes.Buffer)); err == nil {
		t.Fatal("development tokens seeded into a non-loopback endpoint")
	}
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", env.DynamoDBEndpoint)
	if err := dispatch(context.Background(), store, []string{"seed-dev"}, new(bytes.Buffer)); err != nil {
		t.Fatal(err)
	}
	p, err := store.LookupToken(context.Background(), auth.HashToken("acme-wiki-admin"))
	if err != nil || p.Tenant != "acme" || !p.Admin || p.App != auth.Wiki {
		t.Fatalf("seeded acme-wiki-admin = %+v, %v", p, err)
	}
}
