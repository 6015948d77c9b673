package authtable_test

// Tests of AuthStore on DynamoDB Local through infra/testenv (no TestMain
// here: see tracker_test.go).

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
)

func TestAuthStoreTokenDisabled(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	store := authtable.NewAuthStore(dynamodb.NewFromConfig(env.Config), env.AuthTable)
	ctx := context.Background()
	hash := auth.HashToken(auth.NewToken())
	p := auth.Principal{Tenant: "demo", App: auth.Wiki, Kind: auth.Link, User: "link:jira-1", Scope: "jira-1"}
	if err := store.PutToken(ctx, hash, p); err != nil {
		t.Fatal(err)
	}
	check := func(want bool) {
		t.Helper()
		got, err := store.LookupToken(ctx, hash)
		if err != nil || got.Disabled != want || got.Scope != "jira-1" || got.Tenant != "demo" {
			t.Fatalf("LookupToken = %+v, %v; want disabled %v", got, err, want)
		}
	}
	check(false)
	for _, want := range []bool{true, true, false, false, true} {
		if err := store.SetTokenDisabled(ctx, hash, want); err != nil {
			t.Fatalf("SetTokenDisabled(%v): %v", want, err)
		}
		check(want)
	}
	// A token stored disabled (rotation of a DISABLED integration's token)
	// reads back disabled.
	p.Disabled = true
	other := auth.HashToken(auth.NewToken())
	if err := store.PutToken(ctx, other, p); err != nil {
		t.Fatal(err)
	}
	if got, err := store.LookupToken(ctx, other); err != nil || !got.Disabled {
		t.Fatalf("LookupToken of a token stored disabled = %+v, %v", got, err)
	}
	// An unknown hash is not created.
	missing := auth.HashToken("no such token")
	if err := store.SetTokenDisabled(ctx, missing, true); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("SetTokenDisabled of a missing token = %v, want ErrNotFound", err)
	}
	if _, err := store.LookupToken(ctx, missing); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("SetTokenDisabled created a token item: %v", err)
	}
}
