package trackertable

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// Deleting an applink.

// DeleteApplink deletes an applink item on condition that it exists;
// apperr.ErrNotFound otherwise.
func (s *TrackerStore) DeleteApplink(ctx context.Context, tenant, id string) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.table, Key: itemKey(applinkPK(tenant), id), ConditionExpression: aws.String("attribute_exists(pk)"),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return apperr.ErrNotFound
	}
	return dynamo.Translate(err, "delete applink "+id)
}

// purgePage is the Limit of each Query of a purge.
const purgePage = 500

// PurgeApplink deletes what applink id owns: its requirement items (their
// excerpts and link states) with every link item they hold, its tracker
// outbox marks and its pending messages; it answers the number of items
// deleted. The requirements are one Query page at a time of the applink's
// gsi1 partition (eventually consistent), each page's link items known
// from the requirements' states (a requirement whose state was never
// written, holding links stored before states existed, has its links read
// from gsi1 by requirement), deleted with BatchWriteItem (25 a call, 8
// calls at a time) before the next page is read: memory stays bounded. The
// marks and pending messages are Queries of their tenant partitions from
// the prefix "<applinkId>#". Deleting an absent item is no error, so a
// purge cut short is finished by the next one.
func (s *TrackerStore) PurgeApplink(ctx context.Context, tenant, id string) (int, error) {
	n := 0
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName: &s.table, IndexName: aws.String("gsi1"),
		KeyConditionExpression: aws.String("gsi1pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: applinkReqsPK(tenant, id)},
		},
		Limit: aws.Int32(purgePage),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return n, dynamo.Errorf("list the requirements of applink "+id, err)
		}
		keys, err := s.purgeRequirementKeys(ctx, tenant, page.Items)
		if err != nil {
			return n, err
		}
		if err := dynamo.BatchWrite(ctx, s.db, s.table, dynamo.Deletes(keys)); err != nil {
			return n, fmt.Errorf("delete the links of applink %s: %w", id, err)
		}
		n += len(keys)
	}
	for _, pk := range []string{outboxPK(tenant), pendingPK(tenant)} {
		var keys []map[string]types.AttributeValue
		err := dynamo.QueryEach(ctx, s.db, &dynamodb.QueryInput{
			TableName:              &s.table,
			KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :id)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": &types.AttributeValueMemberS{Value: pk},
				":id": &types.AttributeValueMemberS{Value: id + "#"},
			},
			ProjectionExpression: aws.String("pk, sk"),
			ConsistentRead:       aws.Bool(true),
		}, "list the marks and pending messages of applink "+id, func(av map[string]types.AttributeValue) error {
			keys = append(keys, map[string]types.AttributeValue{"pk": av["pk"], "sk": av["sk"]})
			return nil
		})
		if err != nil {
			return n, err
		}
		if err := dynamo.BatchWrite(ctx, s.db, s.table, dynamo.Deletes(keys)); err != nil {
			return n, fmt.Errorf("delete the marks and pending messages of applink %s: %w", id, err)
		}
		n += len(keys)
	}
	return n, nil
}

// purgeRequirementKeys returns the keys of requirement items and of the
// link items they hold.
func (s *TrackerStore) purgeRequirementKeys(ctx context.Context, tenant string, items []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	var keys []map[string]types.AttributeValue
	var legacy []tracker.ReqRef
	for _, av := range items {
		var it reqItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return nil, dynamo.Errorf("decode requirement", err)
		}
		ref := it.ref()
		keys = append(keys, itemKey(reqPK(tenant, ref), reqSK))
		if it.Rev == 0 {
			legacy = append(legacy, ref)
			continue
		}
		for _, l := range it.state().Links() {
			keys = append(keys, itemKey(issuePK(tenant, l.IssueKey), linkSK(l.Link)))
		}
	}
	var mu sync.Mutex
	err := dynamo.Each(ctx, legacy, 8, func(ctx context.Context, ref tracker.ReqRef) error {
		links, err := s.requirementLinks(ctx, tenant, ref)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, l := range links {
			keys = append(keys, itemKey(issuePK(tenant, l.IssueKey), linkSK(l.Link)))
		}
		return nil
	})
	return keys, err
}
