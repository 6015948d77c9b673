package authtable_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/auth/authtest"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
)

// TestSessionStoreItem: a session opened through auth.Sessions is one
// AuthTable item under the hash of its id, with the token's hash (neither
// the id nor the token anywhere in it), its expiry, and a ttl at that
// expiry for DynamoDB's TTL to delete it; a logout deletes it.
func TestSessionStoreItem(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	ctx := context.Background()
	tokens := &authtest.Tokens{}
	token := auth.NewToken()
	_ = tokens.PutToken(ctx, auth.HashToken(token), auth.Principal{Tenant: "demo", App: auth.Wiki, Kind: auth.User, User: "alice"})
	sessions := auth.NewSessions(authtable.NewSessionStore(env.DynamoDB, env.AuthTable), auth.NewAuthenticator(tokens, 0), auth.Wiki, 2*time.Hour)

	id, expires, err := sessions.Open(ctx, token)
	if err != nil {
		t.Fatal(err)
	}
	key := map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: authtable.SessionPKPrefix + auth.HashToken(id)},
		"sk": &types.AttributeValueMemberS{Value: "SESSION"},
	}
	out, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &env.AuthTable, Key: key})
	if err != nil || out.Item == nil {
		t.Fatalf("no session item under the hash of its id: %v", err)
	}
	for name, v := range out.Item {
		if s, ok := v.(*types.AttributeValueMemberS); ok && (strings.Contains(s.Value, id) || strings.Contains(s.Value, token)) {
			t.Errorf("attribute %s holds the session id or the token: %q", name, s.Value)
		}
	}
	if h, _ := out.Item["tokenHash"].(*types.AttributeValueMemberS); h == nil || h.Value != auth.HashToken(token) {
		t.Errorf("tokenHash %v, want the token's hash", out.Item["tokenHash"])
	}
	if ttl, _ := out.Item["ttl"].(*types.AttributeValueMemberN); ttl == nil || ttl.Value != strconv.FormatInt(expires.Unix(), 10) {
		t.Errorf("ttl %v, want the session's expiry %d", out.Item["ttl"], expires.Unix())
	}
	if d := time.Until(expires); d <= time.Hour || d > 2*time.Hour {
		t.Errorf("expires in %v, want the 2h TTL", d)
	}
	if p, exp, err := sessions.Resolve(ctx, id); err != nil || p.User != "alice" || !exp.Equal(expires) {
		t.Fatalf("Resolve = %+v, %v, %v", p, exp, err)
	}
	if err := sessions.Close(ctx, id); err != nil {
		t.Fatal(err)
	}
	if out, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &env.AuthTable, Key: key}); err != nil || out.Item != nil {
		t.Errorf("after Close the item is %v (%v), want it deleted", out.Item, err)
	}
	if _, _, err := sessions.Resolve(ctx, id); !errors.Is(err, apperr.ErrUnauthorized) {
		t.Errorf("Resolve after Close = %v, want unauthorized", err)
	}
}
