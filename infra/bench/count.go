package bench

import (
	"context"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reqtrace/reqtrace/shared/dynamo"
)

// ItemCounter wraps a DynamoDB client and counts the items its reads touch:
// Query items evaluated (ScannedCount, so a filter expression hides
// nothing), BatchGetItem items returned and GetItem items found. This is
// the "items read" of DESIGN.md §9; the SDK middleware of testenv counts
// calls but cannot see items. It is safe for concurrent use.
type ItemCounter struct {
	dynamo.API
	read atomic.Int64
}

var _ dynamo.API = (*ItemCounter)(nil)

// Items returns the items read since the last Reset.
func (c *ItemCounter) Items() int { return int(c.read.Load()) }

// Reset forgets the items counted so far.
func (c *ItemCounter) Reset() { c.read.Store(0) }

// Query counts the items the query evaluated.
func (c *ItemCounter) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	out, err := c.API.Query(ctx, in, opts...)
	if err == nil {
		c.read.Add(int64(out.ScannedCount))
	}
	return out, err
}

// BatchGetItem counts the items returned.
func (c *ItemCounter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := c.API.BatchGetItem(ctx, in, opts...)
	if err == nil {
		for _, items := range out.Responses {
			c.read.Add(int64(len(items)))
		}
	}
	return out, err
}

// GetItem counts the item when there is one.
func (c *ItemCounter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	out, err := c.API.GetItem(ctx, in, opts...)
	if err == nil && out.Item != nil {
		c.read.Add(1)
	}
	return out, err
}
