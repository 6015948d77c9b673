package authtable

import (
	"context"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/ratelimit"
)

// RateStore keeps the per-tenant rate limit in the AuthTable: one counter
// item per tenant, application and window (pk RATE#<tenant>#<app>#<unix
// second>, sk RATE; attributes used, ttl), which DynamoDB's TTL deletes
// after windowKeep, and the tenant's own rate, when it has one, beside its
// tenant item (pk TENANT#<tenant>, sk LIMIT; requestsPerSecond, updatedAt).
type RateStore struct {
	db    dynamo.API
	table string
}

var _ ratelimit.Store = (*RateStore)(nil)

// NewRateStore returns a RateStore on table.
func NewRateStore(db dynamo.API, table string) *RateStore { return &RateStore{db: db, table: table} }

// windowKeep is how long a window's counter outlives its window (ttl);
// DynamoDB deletes expired items within a day or two of that.
const windowKeep = time.Hour

// RateWindowPK is the partition key of a window's counter. Every such key
// starts with "RATE#", which is what the functions' IAM policies let them
// write (dynamodb:LeadingKeys).
func RateWindowPK(w ratelimit.Window) string {
	return "RATE#" + w.Tenant + "#" + string(w.App) + "#" + strconv.FormatInt(w.Start.Unix(), 10)
}

// Take adds n to the window's count with one unconditional UpdateItem (ADD
// used, returning the new count) and grants what was left before this
// call, at most n. DynamoDB applies the ADDs one after another, so the
// grants of all callers together never pass limit; the count itself may
// pass it by the last asks, which is harmless. A failed condition is never
// a reason to call again: one call per lease, whatever the contention.
func (s *RateStore) Take(ctx context.Context, w ratelimit.Window, n, limit int) (int, error) {
	if n < 1 {
		return 0, nil
	}
	upd := expression.Add(expression.Name("used"), expression.Value(n)).
		Set(expression.Name("ttl"), expression.Value(w.Start.Add(ratelimit.WindowLength+windowKeep).Unix()))
	expr, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return 0, dynamo.Errorf("build rate window update", err)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table,
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: RateWindowPK(w)},
			"sk": &types.AttributeValueMemberS{Value: "RATE"},
		},
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, dynamo.Errorf("take from rate window", err)
	}
	var it struct {
		Used int `dynamodbav:"used"`
	}
	if err := attributevalue.UnmarshalMap(out.Attributes, &it); err != nil {
		return 0, dynamo.Errorf("decode rate window", err)
	}
	before := it.Used - n
	return min(n, max(0, limit-before)), nil
}

type tenantRateItem struct {
	PK                string `dynamodbav:"pk"`
	SK                string `dynamodbav:"sk"`
	RequestsPerSecond int    `dynamodbav:"requestsPerSecond"`
	UpdatedAt         string `dynamodbav:"updatedAt"`
}

func tenantKey(tenant, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "TENANT#" + tenant},
		"sk": &types.AttributeValueMemberS{Value: sk},
	}
}

// TenantRate returns the tenant's own rate in requests per second, or 0
// when it has none.
func (s *RateStore) TenantRate(ctx context.Context, tenant string) (int, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: tenantKey(tenant, "LIMIT")})
	if err != nil {
		return 0, dynamo.Errorf("get tenant rate", err)
	}
	if out.Item == nil {
		return 0, nil
	}
	var it tenantRateItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return 0, dynamo.Errorf("decode tenant rate", err)
	}
	return it.RequestsPerSecond, nil
}

// SetTenantRate gives a recorded tenant its own rate (overwriting one it
// had). It answers apperr.ErrInvalid for a bad tenant id or a rate outside
// 1..ratelimit.MaxRate and apperr.ErrNotFound when the tenant was never
// created; nothing is written then.
func (s *RateStore) SetTenantRate(ctx context.Context, tenant string, rps int) error {
	if !auth.ValidTenant(tenant) {
		return apperr.Invalidf("invalid tenant id %q: use lower-case letters, digits and '-'", tenant)
	}
	if !ratelimit.ValidRate(rps) {
		return apperr.Invalidf("a tenant's rate is 1 to %d requests per second; got %d", ratelimit.MaxRate, rps)
	}
	item, err := attributevalue.MarshalMap(tenantRateItem{PK: "TENANT#" + tenant, SK: "LIMIT", RequestsPerSecond: rps, UpdatedAt: dynamo.Time(time.Now())})
	if err != nil {
		return dynamo.Errorf("encode tenant rate", err)
	}
	err = dynamo.Transact(ctx, s.db, []types.TransactWriteItem{
		{ConditionCheck: &types.ConditionCheck{TableName: &s.table, Key: tenantKey(tenant, "TENANT"),
			ConditionExpression: aws.String("attribute_exists(pk)")}},
		{Put: &types.Put{TableName: &s.table, Item: item}},
	})
	if codes := dynamo.CancellationCodes(err, 2); len(codes) > 0 && codes[0] == "ConditionalCheckFailed" {
		return apperr.NotFoundf("tenant %q does not exist: create it first", tenant)
	}
	return dynamo.Translate(err, "put tenant rate")
}

// ClearTenantRate puts a tenant back on the default rate; a tenant without
// a rate of its own is not an error.
func (s *RateStore) ClearTenantRate(ctx context.Context, tenant string) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: tenantKey(tenant, "LIMIT")})
	return dynamo.Translate(err, "delete tenant rate")
}
