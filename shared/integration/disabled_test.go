package integration

import (
	"context"
	"testing"

	"github.com/reqtrace/reqtrace/shared/auth"
)

// TestDisabledIntegrationDisablesItsIncomingToken: the incoming credential
// of an integration carries its status (docs/integrations.md: a DISABLED
// integration's incomingToken answers 403 everywhere), through status
// changes, a rotation while DISABLED, and a creation as DISABLED.
func TestDisabledIntegrationDisablesItsIncomingToken(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc, _, _, tok := newTestService()
	_, incoming, err := svc.Create(ctx, "demo", Patch{ServiceID: ptr("jira-1"), RPCURL: ptr("https://jira.example.com")})
	if err != nil {
		t.Fatal(err)
	}
	disabled := func(token string) bool {
		t.Helper()
		p, ok := tok.Token(auth.HashToken(token))
		if !ok {
			t.Fatalf("token %q is not stored", token)
		}
		return p.Disabled
	}
	if disabled(incoming) {
		t.Fatal("a new ACTIVE integration's token is disabled")
	}
	if _, _, err := svc.Update(ctx, "demo", "jira-1", Patch{Status: ptr("disabled")}); err != nil {
		t.Fatal(err)
	}
	if !disabled(incoming) {
		t.Fatal("DISABLED integration: its token is not disabled")
	}
	// Another field's change keeps the flag.
	if _, _, err := svc.Update(ctx, "demo", "jira-1", Patch{Label: ptr("Jira")}); err != nil || !disabled(incoming) {
		t.Fatalf("label change: %v, disabled %v", err, disabled(incoming))
	}
	// A rotation while DISABLED: the new token is disabled too.
	_, rotated, err := svc.Update(ctx, "demo", "jira-1", Patch{RotateToken: true})
	if err != nil || !disabled(rotated) {
		t.Fatalf("rotation while DISABLED: %v", err)
	}
	if _, _, err := svc.Update(ctx, "demo", "jira-1", Patch{Status: ptr("ACTIVE")}); err != nil || disabled(rotated) {
		t.Fatalf("re-activation: %v, disabled %v", err, disabled(rotated))
	}
	// Created DISABLED: its token is disabled from the start.
	_, other, err := svc.Create(ctx, "demo", Patch{ServiceID: ptr("jira-2"), RPCURL: ptr("https://jira.example.com"), Status: ptr("DISABLED")})
	if err != nil || !disabled(other) {
		t.Fatalf("created DISABLED: %v", err)
	}
}
