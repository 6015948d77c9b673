// Package authtable implements the stores on the AuthTable: tokens, kept
// as SHA-256 hashes with their principal (tenant, application, user or link
// scope, admin, disabled), tenants, and the per-tenant rate limit (window
// counters and tenants' own rates, ratelimit.go).
package authtable

import (
	"context"
	"errors"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo"
)

// AuthStore keeps token hashes and tenants in the AuthTable.
type AuthStore struct {
	db    dynamo.API
	table string
}

var _ auth.Store = (*AuthStore)(nil)

// NewAuthStore returns an AuthStore on table.
func NewAuthStore(db dynamo.API, table string) *AuthStore { return &AuthStore{db: db, table: table} }

type tokenItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Tenant    string `dynamodbav:"tenant"`
	App       string `dynamodbav:"app"`
	Kind      string `dynamodbav:"kind"`
	User      string `dynamodbav:"user"`
	Admin     bool   `dynamodbav:"admin"`
	Scope     string `dynamodbav:"scope,omitempty"`
	Disabled  bool   `dynamodbav:"disabled,omitempty"`
	CreatedAt string `dynamodbav:"createdAt"`
}

func tokenKey(hash string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "TOKEN#" + hash},
		"sk": &types.AttributeValueMemberS{Value: "TOKEN"},
	}
}

// LookupToken returns the principal of a token hash, or apperr.ErrNotFound.
func (s *AuthStore) LookupToken(ctx context.Context, hash string) (auth.Principal, error) {
	var it tokenItem
	if err := getItem(ctx, s.db, s.table, tokenKey(hash), &it, "token"); err != nil {
		return auth.Principal{}, err
	}
	return auth.Principal{Tenant: it.Tenant, App: auth.App(it.App), Kind: auth.Kind(it.Kind), User: it.User, Admin: it.Admin, Scope: it.Scope, Disabled: it.Disabled}, nil
}

// getItem reads the item at key into v (what names it in errors):
// apperr.ErrNotFound when there is none.
func getItem(ctx context.Context, db dynamo.API, table string, key map[string]types.AttributeValue, v any, what string) error {
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key})
	if err != nil {
		return dynamo.Errorf("get "+what, err)
	}
	if out.Item == nil {
		return apperr.ErrNotFound
	}
	if err := attributevalue.UnmarshalMap(out.Item, v); err != nil {
		return dynamo.Errorf("decode "+what, err)
	}
	return nil
}

// PutToken stores a token hash for a principal, overwriting.
func (s *AuthStore) PutToken(ctx context.Context, hash string, p auth.Principal) error {
	item, err := attributevalue.MarshalMap(tokenItem{
		PK: "TOKEN#" + hash, SK: "TOKEN", Tenant: p.Tenant, App: string(p.App), Kind: string(p.Kind),
		User: p.User, Admin: p.Admin, Scope: p.Scope, Disabled: p.Disabled, CreatedAt: dynamo.Time(time.Now()),
	})
	if err != nil {
		return dynamo.Errorf("encode token", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item})
	return dynamo.Translate(err, "put token")
}

// DeleteToken removes a token hash; an absent hash is not an error.
func (s *AuthStore) DeleteToken(ctx context.Context, hash string) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: tokenKey(hash)})
	return dynamo.Translate(err, "delete token")
}

// SetTokenDisabled sets or clears the disabled flag of a stored token (the
// incoming credential of an integration whose status changed). A token that
// does not exist answers apperr.ErrNotFound and nothing is written.
func (s *AuthStore) SetTokenDisabled(ctx context.Context, hash string, disabled bool) error {
	update := "REMOVE disabled"
	var values map[string]types.AttributeValue
	if disabled {
		update = "SET disabled = :d"
		values = map[string]types.AttributeValue{":d": &types.AttributeValueMemberBOOL{Value: true}}
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: tokenKey(hash), UpdateExpression: aws.String(update),
		ConditionExpression: aws.String("attribute_exists(pk)"), ExpressionAttributeValues: values,
	})
	if err != nil {
		var cf *types.ConditionalCheckFailedException
		if errors.As(err, &cf) {
			return apperr.ErrNotFound
		}
	}
	return dynamo.Translate(err, "set token disabled")
}

// PutTenant records a tenant (idempotent).
func (s *AuthStore) PutTenant(ctx context.Context, tenant, name string) error {
	if !auth.ValidTenant(tenant) {
		return apperr.Invalidf("invalid tenant id %q: use lower-case letters, digits and '-'", tenant)
	}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: map[string]types.AttributeValue{
		"pk":        &types.AttributeValueMemberS{Value: "TENANT#" + tenant},
		"sk":        &types.AttributeValueMemberS{Value: "TENANT"},
		"name":      &types.AttributeValueMemberS{Value: name},
		"createdAt": &types.AttributeValueMemberS{Value: dynamo.Time(time.Now())},
	}})
	return dynamo.Translate(err, "put tenant")
}

// TenantExists reports whether a tenant was recorded.
func (s *AuthStore) TenantExists(ctx context.Context, tenant string) (bool, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, ProjectionExpression: aws.String("pk"), Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "TENANT#" + tenant},
		"sk": &types.AttributeValueMemberS{Value: "TENANT"},
	}})
	if err != nil {
		return false, dynamo.Errorf("get tenant", err)
	}
	return out.Item != nil, nil
}
