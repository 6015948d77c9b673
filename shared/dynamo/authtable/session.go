package authtable

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo"
)

// SessionStore keeps the browser sessions of the wiki's web pages in the
// AuthTable: one item per session (pk SESSION#<SHA-256 of the session id>,
// sk SESSION; tokenHash, tenant, user, expiresAt, ttl). Neither the
// session id (the cookie's value) nor the token is stored. DynamoDB's TTL
// deletes an item within a day or two of its expiry; until then
// auth.Sessions refuses it by expiresAt.
type SessionStore struct {
	db    dynamo.API
	table string
}

var _ auth.SessionStore = (*SessionStore)(nil)

// NewSessionStore returns a SessionStore on table.
func NewSessionStore(db dynamo.API, table string) *SessionStore {
	return &SessionStore{db: db, table: table}
}

// SessionPKPrefix starts the partition key of every session item, which is
// what the web function's IAM policy lets it write (dynamodb:LeadingKeys).
const SessionPKPrefix = "SESSION#"

type sessionItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	TokenHash string `dynamodbav:"tokenHash"`
	Tenant    string `dynamodbav:"tenant"`
	User      string `dynamodbav:"user"`
	ExpiresAt string `dynamodbav:"expiresAt"`
	TTL       int64  `dynamodbav:"ttl"`
}

func sessionKey(idHash string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: SessionPKPrefix + idHash},
		"sk": &types.AttributeValueMemberS{Value: "SESSION"},
	}
}

// PutSession stores a session under the hash of its id.
func (s *SessionStore) PutSession(ctx context.Context, idHash string, sess auth.Session) error {
	item, err := attributevalue.MarshalMap(sessionItem{
		PK: SessionPKPrefix + idHash, SK: "SESSION", TokenHash: sess.TokenHash, Tenant: sess.Tenant, User: sess.User,
		ExpiresAt: dynamo.Time(sess.ExpiresAt), TTL: sess.ExpiresAt.Unix(),
	})
	if err != nil {
		return dynamo.Errorf("encode session", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item})
	return dynamo.Translate(err, "put session")
}

// LookupSession returns a stored session, or apperr.ErrNotFound.
func (s *SessionStore) LookupSession(ctx context.Context, idHash string) (auth.Session, error) {
	var it sessionItem
	if err := getItem(ctx, s.db, s.table, sessionKey(idHash), &it, "session"); err != nil {
		return auth.Session{}, err
	}
	exp := dynamo.ParseTime(it.ExpiresAt)
	if exp.IsZero() {
		exp = time.Unix(it.TTL, 0)
	}
	return auth.Session{TokenHash: it.TokenHash, Tenant: it.Tenant, User: it.User, ExpiresAt: exp}, nil
}

// DeleteSession removes a session; an absent one is not an error.
func (s *SessionStore) DeleteSession(ctx context.Context, idHash string) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: sessionKey(idHash)})
	return dynamo.Translate(err, "delete session")
}
