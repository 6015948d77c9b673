package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/dynamo"
)

// Meter wraps a DynamoDB client and measures what its calls do, beyond the
// call counts of testenv's SDK middleware:
//
//   - items read: Query items evaluated (ScannedCount, so a filter
//     expression hides nothing), BatchGetItem items returned and GetItem
//     items found — the "items read" of the performance targets;
//   - the read capacity units DynamoDB reports for them (it asks for
//     ConsumedCapacity on a copy of each input);
//   - items written: BatchWriteItem requests, TransactWriteItems elements,
//     one per PutItem, UpdateItem and DeleteItem;
//   - the latency of each call, by operation.
//
// It is safe for concurrent use.
type Meter struct {
	dynamo.API
	read    atomic.Int64
	rcu     atomic.Int64 // capacity units × 1000
	written atomic.Int64

	mu  sync.Mutex
	ops map[string]*opStats
}

// opStats sums the latencies and items read of one operation's calls.
type opStats struct {
	calls, items int
	total        time.Duration
}

var _ dynamo.API = (*Meter)(nil)

// NewMeter returns a Meter on api.
func NewMeter(api dynamo.API) *Meter {
	return &Meter{API: api, ops: map[string]*opStats{}}
}

// Items returns the items read since the last Reset.
func (m *Meter) Items() int { return int(m.read.Load()) }

// Written returns the items written since the last Reset.
func (m *Meter) Written() int { return int(m.written.Load()) }

// ReadUnits returns the read capacity units consumed since the last Reset.
func (m *Meter) ReadUnits() float64 { return float64(m.rcu.Load()) / 1000 }

// Latencies describes the calls since the last Reset by operation, the
// slowest in total first: "BatchWriteItem 48 × 52 ms".
func (m *Meter) Latencies() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ops := make([]string, 0, len(m.ops))
	for op := range m.ops {
		ops = append(ops, op)
	}
	slices.SortFunc(ops, func(a, b string) int { return int(m.ops[b].total - m.ops[a].total) })
	parts := make([]string, len(ops))
	for i, op := range ops {
		l := m.ops[op]
		parts[i] = fmt.Sprintf("%s %d × %s", op, l.calls, ms(l.total/time.Duration(l.calls)))
	}
	return strings.Join(parts, ", ")
}

// ItemsRead describes the items read since the last Reset by operation:
// "Query 51 + BatchGetItem 50 + GetItem 1".
func (m *Meter) ItemsRead() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var parts []string
	for _, op := range []string{"Query", "BatchGetItem", "GetItem"} {
		if l := m.ops[op]; l != nil {
			parts = append(parts, fmt.Sprintf("%s %d", op, l.items))
		}
	}
	return strings.Join(parts, " + ")
}

// Reset forgets what was measured so far.
func (m *Meter) Reset() {
	m.read.Store(0)
	m.rcu.Store(0)
	m.written.Store(0)
	m.mu.Lock()
	clear(m.ops)
	m.mu.Unlock()
}

// timed records a call of op started at start that read items.
func (m *Meter) timed(op string, start time.Time, items *int) {
	d := time.Since(start)
	m.read.Add(int64(*items))
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.ops[op]
	if l == nil {
		l = &opStats{}
		m.ops[op] = l
	}
	l.calls++
	l.total += d
	l.items += *items
}

func (m *Meter) units(cc ...types.ConsumedCapacity) {
	for _, u := range cc {
		if u.CapacityUnits != nil {
			m.rcu.Add(int64(math.Round(*u.CapacityUnits * 1000)))
		}
	}
}

// Query implements dynamo.API.
func (m *Meter) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	items := 0
	defer m.timed("Query", time.Now(), &items)
	cp := *in
	cp.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.API.Query(ctx, &cp, opts...)
	if err == nil {
		items = int(out.ScannedCount)
		if out.ConsumedCapacity != nil {
			m.units(*out.ConsumedCapacity)
		}
	}
	return out, err
}

// BatchGetItem implements dynamo.API.
func (m *Meter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	items := 0
	defer m.timed("BatchGetItem", time.Now(), &items)
	cp := *in
	cp.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.API.BatchGetItem(ctx, &cp, opts...)
	if err == nil {
		for _, got := range out.Responses {
			items += len(got)
		}
		m.units(out.ConsumedCapacity...)
	}
	return out, err
}

// GetItem implements dynamo.API.
func (m *Meter) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	items := 0
	defer m.timed("GetItem", time.Now(), &items)
	cp := *in
	cp.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.API.GetItem(ctx, &cp, opts...)
	if err == nil {
		if out.Item != nil {
			items = 1
		}
		if out.ConsumedCapacity != nil {
			m.units(*out.ConsumedCapacity)
		}
	}
	return out, err
}

// BatchWriteItem implements dynamo.API.
func (m *Meter) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	defer m.timed("BatchWriteItem", time.Now(), new(int))
	for _, reqs := range in.RequestItems {
		m.written.Add(int64(len(reqs)))
	}
	return m.API.BatchWriteItem(ctx, in, opts...)
}

// TransactWriteItems implements dynamo.API.
func (m *Meter) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	defer m.timed("TransactWriteItems", time.Now(), new(int))
	m.written.Add(int64(len(in.TransactItems)))
	return m.API.TransactWriteItems(ctx, in, opts...)
}

// PutItem implements dynamo.API.
func (m *Meter) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	defer m.timed("PutItem", time.Now(), new(int))
	m.written.Add(1)
	return m.API.PutItem(ctx, in, opts...)
}

// UpdateItem implements dynamo.API.
func (m *Meter) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	defer m.timed("UpdateItem", time.Now(), new(int))
	m.written.Add(1)
	return m.API.UpdateItem(ctx, in, opts...)
}

// BatchExecuteStatement implements dynamo.API: each statement writes (or
// fails on) one item.
func (m *Meter) BatchExecuteStatement(ctx context.Context, in *dynamodb.BatchExecuteStatementInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchExecuteStatementOutput, error) {
	defer m.timed("BatchExecuteStatement", time.Now(), new(int))
	m.written.Add(int64(len(in.Statements)))
	return m.API.BatchExecuteStatement(ctx, in, opts...)
}

// DeleteItem implements dynamo.API.
func (m *Meter) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	defer m.timed("DeleteItem", time.Now(), new(int))
	m.written.Add(1)
	return m.API.DeleteItem(ctx, in, opts...)
}
