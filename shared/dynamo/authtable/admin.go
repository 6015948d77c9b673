package authtable

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo"
)

// This file is the admin command's side of the AuthTable: creating a
// tenant once, revoking a token that must exist, and listing and deleting
// tenants and tokens. Listing scans the table (it has no index by tenant),
// so it takes a client that may Scan and is never on a request's path.

// Scanner is a DynamoDB client that may also Scan (*dynamodb.Client is one).
type Scanner interface {
	dynamo.API
	dynamodb.ScanAPIClient
}

// Tenant is a recorded tenant.
type Tenant struct {
	ID, Name, CreatedAt string
}

// Token is a stored token: its hash (the token itself is never stored) and
// principal.
type Token struct {
	Hash      string
	Principal auth.Principal
	CreatedAt string
}

// CreateTenant records a new tenant: apperr.ErrConflict when it exists
// already (nothing is changed then).
func (s *AuthStore) CreateTenant(ctx context.Context, tenant, name string) error {
	if !auth.ValidTenant(tenant) {
		return apperr.Invalidf("invalid tenant id %q: use lower-case letters, digits and '-'", tenant)
	}
	item := tenantKey(tenant, "TENANT")
	item["name"] = &types.AttributeValueMemberS{Value: name}
	item["createdAt"] = &types.AttributeValueMemberS{Value: dynamo.Time(time.Now())}
	_, err := s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		return apperr.Conflictf("tenant %s exists already; nothing changed", tenant)
	}
	return dynamo.Translate(err, "create tenant")
}

// RevokeToken removes a token hash: apperr.ErrNotFound when there is none.
func (s *AuthStore) RevokeToken(ctx context.Context, hash string) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: tokenKey(hash), ConditionExpression: aws.String("attribute_exists(pk)")})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		return apperr.NotFoundf("no such token")
	}
	return dynamo.Translate(err, "revoke token")
}

// ListTenants returns every tenant, by id.
func ListTenants(ctx context.Context, db Scanner, table string) ([]Tenant, error) {
	var out []Tenant
	err := scanEach(ctx, db, table, "#sk = :sk", map[string]types.AttributeValue{":sk": &types.AttributeValueMemberS{Value: "TENANT"}},
		func(av map[string]types.AttributeValue) error {
			var it struct {
				PK        string `dynamodbav:"pk"`
				Name      string `dynamodbav:"name"`
				CreatedAt string `dynamodbav:"createdAt"`
			}
			if err := attributevalue.UnmarshalMap(av, &it); err != nil {
				return dynamo.Errorf("decode tenant", err)
			}
			out = append(out, Tenant{ID: strings.TrimPrefix(it.PK, "TENANT#"), Name: it.Name, CreatedAt: it.CreatedAt})
			return nil
		})
	slices.SortFunc(out, func(a, b Tenant) int { return strings.Compare(a.ID, b.ID) })
	return out, err
}

// ListTokens returns the tokens of a tenant (people's and links'), by
// application, kind and user.
func ListTokens(ctx context.Context, db Scanner, table, tenant string) ([]Token, error) {
	var out []Token
	err := scanEach(ctx, db, table, "#sk = :sk AND #tenant = :t", map[string]types.AttributeValue{
		":sk": &types.AttributeValueMemberS{Value: "TOKEN"}, ":t": &types.AttributeValueMemberS{Value: tenant},
	}, func(av map[string]types.AttributeValue) error {
		var it tokenItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return dynamo.Errorf("decode token", err)
		}
		out = append(out, Token{Hash: strings.TrimPrefix(it.PK, "TOKEN#"), CreatedAt: it.CreatedAt, Principal: auth.Principal{
			Tenant: it.Tenant, App: auth.App(it.App), Kind: auth.Kind(it.Kind), User: it.User, Admin: it.Admin, Scope: it.Scope, Disabled: it.Disabled}})
		return nil
	})
	slices.SortFunc(out, func(a, b Token) int {
		return strings.Compare(string(a.Principal.App)+"\x00"+string(a.Principal.Kind)+"\x00"+a.Principal.User+"\x00"+a.Hash,
			string(b.Principal.App)+"\x00"+string(b.Principal.Kind)+"\x00"+b.Principal.User+"\x00"+b.Hash)
	})
	return out, err
}

// DeleteTenant removes a tenant's record, its own rate and every token of
// it, and answers how many tokens went: apperr.ErrNotFound when the tenant
// does not exist. The tenant's data in the WikiTable and TrackerTable stays
// (an operator erases it by its key prefix).
func DeleteTenant(ctx context.Context, db Scanner, table, tenant string) (int, error) {
	s := NewAuthStore(db, table)
	exists, err := s.TenantExists(ctx, tenant)
	if err != nil {
		return 0, err
	}
	if !exists {
		return 0, apperr.NotFoundf("no tenant %s", tenant)
	}
	tokens, err := ListTokens(ctx, db, table, tenant)
	if err != nil {
		return 0, err
	}
	for _, t := range tokens {
		if err := s.DeleteToken(ctx, t.Hash); err != nil {
			return 0, err
		}
	}
	if err := NewRateStore(db, table).ClearTenantRate(ctx, tenant); err != nil {
		return 0, err
	}
	_, err = db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &table, Key: tenantKey(tenant, "TENANT")})
	return len(tokens), dynamo.Translate(err, "delete tenant")
}

func scanEach(ctx context.Context, db Scanner, table, filter string, values map[string]types.AttributeValue, fn func(map[string]types.AttributeValue) error) error {
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{
		TableName: &table, FilterExpression: &filter, ExpressionAttributeValues: values,
		ExpressionAttributeNames: names(filter),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return dynamo.Errorf("scan the auth table", err)
		}
		for _, av := range page.Items {
			if err := fn(av); err != nil {
				return err
			}
		}
	}
	return nil
}

// names declares the #name placeholders a filter uses.
func names(filter string) map[string]string {
	out := map[string]string{}
	for _, n := range []string{"sk", "tenant"} {
		if strings.Contains(filter, "#"+n) {
			out["#"+n] = n
		}
	}
	return out
}
