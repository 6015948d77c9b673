package trackertable

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// Applinks.

type applinkItem struct {
	PK                string `dynamodbav:"pk"`
	SK                string `dynamodbav:"sk"`
	ID                string `dynamodbav:"applinkId"`
	Name              string `dynamodbav:"name"`
	URL               string `dynamodbav:"url"`
	ServiceID         string `dynamodbav:"serviceId"`
	Mode              string `dynamodbav:"mode"`
	Version           int    `dynamodbav:"version"`
	WikiToken         string `dynamodbav:"wikiToken,omitempty"`
	IncomingTokenHash string `dynamodbav:"incomingTokenHash,omitempty"`
	CreatedAt         string `dynamodbav:"createdAt"`
	UpdatedAt         string `dynamodbav:"updatedAt"`
}

func newApplinkItem(tenant string, a tracker.Applink) applinkItem {
	return applinkItem{PK: applinkPK(tenant), SK: a.ID, ID: a.ID, Name: a.Name, URL: a.URL, ServiceID: a.ServiceID,
		Mode: string(a.Mode), Version: a.Version, WikiToken: a.WikiToken, IncomingTokenHash: a.IncomingTokenHash,
		CreatedAt: dynamo.Time(a.CreatedAt), UpdatedAt: dynamo.Time(a.UpdatedAt)}
}

func (it applinkItem) entity() tracker.Applink {
	return tracker.Applink{ID: it.ID, Name: it.Name, URL: it.URL, ServiceID: it.ServiceID, Mode: tracker.Mode(it.Mode),
		Version: it.Version, WikiToken: it.WikiToken, IncomingTokenHash: it.IncomingTokenHash,
		CreatedAt: dynamo.ParseTime(it.CreatedAt), UpdatedAt: dynamo.ParseTime(it.UpdatedAt)}
}

// GetApplink returns an applink of the tenant, or apperr.ErrNotFound.
func (s *TrackerStore) GetApplink(ctx context.Context, tenant, id string) (tracker.Applink, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: itemKey(applinkPK(tenant), id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return tracker.Applink{}, dynamo.Errorf("get applink", err)
	}
	if out.Item == nil {
		return tracker.Applink{}, apperr.ErrNotFound
	}
	var it applinkItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return tracker.Applink{}, dynamo.Errorf("decode applink", err)
	}
	return it.entity(), nil
}

// ListApplinks returns the tenant's applinks ordered by id.
func (s *TrackerStore) ListApplinks(ctx context.Context, tenant string) ([]tracker.Applink, error) {
	var out []tracker.Applink
	err := dynamo.QueryEach(ctx, s.db, &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: applinkPK(tenant)},
		},
		ConsistentRead: aws.Bool(true),
	}, "list applinks", func(av map[string]types.AttributeValue) error {
		var it applinkItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return dynamo.Errorf("decode applink", err)
		}
		out = append(out, it.entity())
		return nil
	})
	return out, err
}

// PutApplink creates a (prev nil: apperr.ErrConflict if it exists) or
// replaces prev (apperr.ErrConflict if the stored applink's updatedAt is no
// longer prev's).
func (s *TrackerStore) PutApplink(ctx context.Context, tenant string, a tracker.Applink, prev *tracker.Applink) error {
	item, err := attributevalue.MarshalMap(newApplinkItem(tenant, a))
	if err != nil {
		return dynamo.Errorf("encode applink", err)
	}
	cond := expression.AttributeNotExists(expression.Name("pk"))
	if prev != nil {
		cond = expression.Name("updatedAt").Equal(expression.Value(dynamo.Time(prev.UpdatedAt)))
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return dynamo.Errorf("build applink condition", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: item,
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	return dynamo.Translate(err, "put applink "+a.ID)
}
