package wikitable

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// Unfinished lists, across tenants, up to limit pages whose recovery entry
// is due by now: an operation on them failed having started to write, or
// its lease expired without being ended (a crash). One Query per shard of
// the recovery index (gsi3, keys only), the shards at once; the pages come
// oldest first within a shard.
func (s *WikiStore) Unfinished(ctx context.Context, now time.Time, limit int) ([]wiki.UnfinishedPage, error) {
	bound := fmt.Sprintf("%013d", now.UnixMilli()+1)
	var (
		mu  sync.Mutex
		out []wiki.UnfinishedPage
	)
	shards := make([]int, UnfinishedShards)
	for i := range shards {
		shards[i] = i
	}
	err := dynamo.Each(ctx, shards, UnfinishedShards, func(ctx context.Context, shard int) error {
		n := 0
		return dynamo.QueryEach(ctx, s.db, &dynamodb.QueryInput{
			TableName: &s.table, IndexName: aws.String("gsi3"),
			KeyConditionExpression: aws.String("gsi3pk = :p AND gsi3sk < :b"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":p": &types.AttributeValueMemberS{Value: fmt.Sprintf("UNFINISHED#%02d", shard)},
				":b": &types.AttributeValueMemberS{Value: bound},
			},
			Limit: aws.Int32(int32(min(limit, 1000))),
		}, "list unfinished pages", func(av map[string]types.AttributeValue) error {
			sk, _ := av["gsi3sk"].(*types.AttributeValueMemberS)
			if sk == nil {
				return nil
			}
			tenant, page, ok := parseUnfinishedSK(sk.Value)
			if !ok {
				return nil
			}
			mu.Lock()
			out = append(out, wiki.UnfinishedPage{Tenant: tenant, PageID: page})
			mu.Unlock()
			if n++; n >= limit {
				return dynamo.StopQuery
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}
