package dynamo

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"
)

// CallCounter counts DynamoDB API calls by operation name ("GetItem",
// "Query", "TransactWriteItems", ...). It counts each call once, in the
// Initialize step, whatever its outcome and however many times the SDK
// retries it; a paginator counts one call per page. Calls to other
// services on the same stack are not counted. It is safe for concurrent
// use.
type CallCounter struct {
	id string

	mu     sync.Mutex
	counts map[string]int
}

var counterIDs atomic.Int64

// NewCallCounter returns a counter with no calls. Attach it to a
// client with dynamodb.NewFromConfig(cfg, c.Options), or to every client
// of a config with cfg.APIOptions = append(cfg.APIOptions, c.Middleware).
func NewCallCounter() *CallCounter {
	return &CallCounter{
		// Unique per counter, so two counters can share a stack.
		id:     fmt.Sprintf("reqtrace/dynamo.CallCounter.%d", counterIDs.Add(1)),
		counts: map[string]int{},
	}
}

// Middleware adds the counter to an operation's middleware stack; it has
// the type of an element of aws.Config.APIOptions and
// dynamodb.Options.APIOptions. Adding the same counter twice to one stack
// is an error.
func (c *CallCounter) Middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc(c.id,
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			if middleware.GetServiceID(ctx) == dynamodb.ServiceID {
				c.mu.Lock()
				c.counts[middleware.GetOperationName(ctx)]++
				c.mu.Unlock()
			}
			return next.HandleInitialize(ctx, in)
		}), middleware.After)
}

// Options adds the counter to a DynamoDB client; pass it to
// dynamodb.NewFromConfig or to a single operation call.
func (c *CallCounter) Options(o *dynamodb.Options) {
	o.APIOptions = append(o.APIOptions, c.Middleware)
}

// Count returns the number of calls to operation op.
func (c *CallCounter) Count(op string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[op]
}

// Total returns the number of calls to all operations.
func (c *CallCounter) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, v := range c.counts {
		n += v
	}
	return n
}

// Counts returns a copy of the calls by operation, for failure messages.
func (c *CallCounter) Counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts)
}

// Reset forgets all calls counted so far.
func (c *CallCounter) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.counts)
}
