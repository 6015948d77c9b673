package bench

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/dynamo"
)

// The floor of a measurement is the time DynamoDB Local takes, in the same
// run and interleaved with the service's rounds, for the minimum calls any
// implementation needs for the same result: the items a save wrote as
// plain BatchWriteItem calls of 25, the items a search returned as one
// BatchGetItem, one GetItem for a GET. The items are captured from the
// service's own calls by a Recorder, so the floor writes exactly as many
// items of exactly the same sizes to the same table.
//
// Writes are replayed under another tenant of the same length
// (floorTenant), so the floor neither changes what the service reads next
// nor writes smaller keys: every string attribute's "T#<tenant>#" becomes
// "T#<floorTenant>#", the table and index keys included.

// floorParallel is how many calls a floor runs at once: what the service's
// batch writes, reads and diff segments run at once (shared/dynamo's
// batches, the search's reads, diff.Service.InFlight).
const floorParallel = 8

// floorTenant names the scratch tenant of the replayed writes; it has the
// length of Tenant, so the keys weigh the same.
const floorTenant = "flor"

// Recorder wraps a DynamoDB client and keeps what the floor replays: the
// items written (puts whole; an update as its key and its values; deletes
// as their keys), the keys read by GetItem and BatchGetItem, and the
// Query calls. Recording is off
// until Start and off again after Stop. It is safe for concurrent use.
type Recorder struct {
	dynamo.API
	// Keep, when set, selects the written items to keep (by item).
	Keep func(item map[string]types.AttributeValue) bool
	// Merge, when set, merges an update into the item written before
	// under the same key instead of replacing it, so that the floor
	// writes the item as it ends (an outbox message put whole, then
	// marked enqueued) rather than only the update's few attributes.
	Merge bool

	mu      sync.Mutex
	on      bool
	puts    []map[string]types.AttributeValue
	updates map[int]bool // indexes of puts that are updates
	deletes []map[string]types.AttributeValue
	gets    []*dynamodb.GetItemInput
	batch   []map[string]types.KeysAndAttributes
	queries []*dynamodb.QueryInput
}

var _ dynamo.API = (*Recorder)(nil)

// NewRecorder returns a Recorder on api, not recording.
func NewRecorder(api dynamo.API) *Recorder { return &Recorder{API: api} }

// Start forgets what was recorded and records from now on.
func (r *Recorder) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on, r.puts, r.updates, r.deletes, r.gets, r.batch, r.queries = true, nil, map[int]bool{}, nil, nil, nil, nil
}

// Stop stops recording and returns what was recorded since Start.
func (r *Recorder) Stop() Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.on = false
	puts := dedupe(r.puts)
	if r.Merge {
		puts = merge(r.puts, r.updates)
	}
	return Recorded{Puts: puts, Deletes: dedupe(r.deletes), Gets: r.gets, BatchGets: r.batch, Queries: r.queries}
}

// Recorded is what a Recorder kept of one service round.
type Recorded struct {
	// Puts are the distinct items written (by pk and sk, the last
	// write of each), Deletes the distinct keys deleted.
	Puts, Deletes []map[string]types.AttributeValue
	Gets          []*dynamodb.GetItemInput
	BatchGets     []map[string]types.KeysAndAttributes
	Queries       []*dynamodb.QueryInput
}

// Written is the number of distinct items written or deleted.
func (r Recorded) Written() int { return len(r.Puts) + len(r.Deletes) }

func (r *Recorder) record(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.on {
		f()
	}
}

func (r *Recorder) put(item map[string]types.AttributeValue) {
	if r.Keep == nil || r.Keep(item) {
		r.puts = append(r.puts, item)
	}
}

// update records an update as its key and values (updateItem).
func (r *Recorder) update(key, values map[string]types.AttributeValue) {
	item := updateItem(key, values)
	if r.Keep == nil || r.Keep(item) {
		r.updates[len(r.puts)] = true
		r.puts = append(r.puts, item)
	}
}

// updateItem is what the floor writes for an update: its key and each of
// its values as an attribute, about the bytes the update sent.
func updateItem(key, values map[string]types.AttributeValue) map[string]types.AttributeValue {
	item := make(map[string]types.AttributeValue, len(key)+len(values))
	for k, v := range values {
		item["v"+strings.TrimPrefix(k, ":")] = v
	}
	for k, v := range key {
		item[k] = v
	}
	return item
}

// PutItem implements dynamo.API.
func (r *Recorder) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	r.record(func() { r.put(in.Item) })
	return r.API.PutItem(ctx, in, opts...)
}

// UpdateItem implements dynamo.API.
func (r *Recorder) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	r.record(func() { r.update(in.Key, in.ExpressionAttributeValues) })
	return r.API.UpdateItem(ctx, in, opts...)
}

// DeleteItem implements dynamo.API.
func (r *Recorder) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	r.record(func() { r.deletes = append(r.deletes, in.Key) })
	return r.API.DeleteItem(ctx, in, opts...)
}

// BatchWriteItem implements dynamo.API.
func (r *Recorder) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	r.record(func() {
		for _, reqs := range in.RequestItems {
			for _, w := range reqs {
				switch {
				case w.PutRequest != nil:
					r.put(w.PutRequest.Item)
				case w.DeleteRequest != nil:
					r.deletes = append(r.deletes, w.DeleteRequest.Key)
				}
			}
		}
	})
	return r.API.BatchWriteItem(ctx, in, opts...)
}

// TransactWriteItems implements dynamo.API: condition checks write nothing.
func (r *Recorder) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	r.record(func() {
		for _, t := range in.TransactItems {
			switch {
			case t.Put != nil:
				r.put(t.Put.Item)
			case t.Update != nil:
				r.update(t.Update.Key, t.Update.ExpressionAttributeValues)
			case t.Delete != nil:
				r.deletes = append(r.deletes, t.Delete.Key)
			}
		}
	})
	return r.API.TransactWriteItems(ctx, in, opts...)
}

// BatchExecuteStatement implements dynamo.API: each statement is an
// update (the outbox's marks), recorded as its key (the parameters of
// "pk"=? and "sk"=?) and its other parameters as values.
func (r *Recorder) BatchExecuteStatement(ctx context.Context, in *dynamodb.BatchExecuteStatementInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchExecuteStatementOutput, error) {
	r.record(func() {
		for _, st := range in.Statements {
			key, values := statementKey(aws.ToString(st.Statement), st.Parameters)
			if key != nil {
				r.update(key, values)
			}
		}
	})
	return r.API.BatchExecuteStatement(ctx, in, opts...)
}

// statementKey splits the parameters of a PartiQL statement into its key
// ("pk"=? and "sk"=?) and the others (named :0, :1, …); nil when the
// statement names no key.
func statementKey(stmt string, params []types.AttributeValue) (key, values map[string]types.AttributeValue) {
	key, values = map[string]types.AttributeValue{}, map[string]types.AttributeValue{}
	n := 0
	for i := 0; i < len(stmt); i++ {
		if stmt[i] != '?' || n >= len(params) {
			continue
		}
		before := strings.TrimSpace(stmt[:i])
		switch {
		case strings.HasSuffix(before, `"pk"=`):
			key["pk"] = params[n]
		case strings.HasSuffix(before, `"sk"=`):
			key["sk"] = params[n]
		default:
			values[fmt.Sprintf(":%d", n)] = params[n]
		}
		n++
	}
	if len(key) != 2 {
		return nil, nil
	}
	return key, values
}

// GetItem implements dynamo.API.
func (r *Recorder) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	r.record(func() { r.gets = append(r.gets, in) })
	return r.API.GetItem(ctx, in, opts...)
}

// BatchGetItem implements dynamo.API.
func (r *Recorder) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	r.record(func() { r.batch = append(r.batch, in.RequestItems) })
	return r.API.BatchGetItem(ctx, in, opts...)
}

// Query implements dynamo.API.
func (r *Recorder) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	r.record(func() { r.queries = append(r.queries, in) })
	return r.API.Query(ctx, in, opts...)
}

// itemKey is the pk and sk of an item, "" when it has neither.
func itemKey(item map[string]types.AttributeValue) string {
	s := func(name string) string {
		if v, ok := item[name].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	return s("pk") + "\x00" + s("sk")
}

// dedupe keeps the last item of each key, in first-seen order.
func dedupe(items []map[string]types.AttributeValue) []map[string]types.AttributeValue {
	at := map[string]int{}
	var out []map[string]types.AttributeValue
	for _, it := range items {
		k := itemKey(it)
		if i, ok := at[k]; ok {
			out[i] = it
			continue
		}
		at[k] = len(out)
		out = append(out, it)
	}
	return out
}

// merge is dedupe with the updates (indexes of items) merged into the
// item written before under their key: its attributes with the update's
// values added (a put replaces the item, as on DynamoDB).
func merge(items []map[string]types.AttributeValue, updates map[int]bool) []map[string]types.AttributeValue {
	at := map[string]int{}
	var out []map[string]types.AttributeValue
	for i, it := range items {
		k := itemKey(it)
		j, ok := at[k]
		switch {
		case !ok:
			at[k] = len(out)
			out = append(out, it)
		case updates[i]:
			m := maps.Clone(out[j])
			maps.Copy(m, it)
			out[j] = m
		default:
			out[j] = it
		}
	}
	return out
}

// remap returns item with every string attribute's tenant prefix of
// tenant replaced by floorTenant's (same length, so the same size).
func remap(item map[string]types.AttributeValue, tenant string) map[string]types.AttributeValue {
	from, to := dynamo.TenantPrefix(tenant), dynamo.TenantPrefix(floorTenant)
	out := make(map[string]types.AttributeValue, len(item))
	for k, v := range item {
		if s, ok := v.(*types.AttributeValueMemberS); ok && strings.Contains(s.Value, from) {
			v = &types.AttributeValueMemberS{Value: strings.ReplaceAll(s.Value, from, to)}
		}
		out[k] = v
	}
	return out
}

// FloorRound is one timed floor round.
type FloorRound struct {
	Took  time.Duration
	Calls int
	Items int
}

// add sums another part of a round.
func (f FloorRound) add(o FloorRound) FloorRound {
	return FloorRound{Took: f.Took + o.Took, Calls: f.Calls + o.Calls, Items: f.Items + o.Items}
}

// writeFloor writes rec's puts (remapped to floorTenant) and deletes its
// keys (remapped) with plain BatchWriteItem calls of 25, floorParallel at
// once, retrying unprocessed items, and times it.
func writeFloor(ctx context.Context, db dynamo.API, table, tenant string, rec Recorded) (FloorRound, error) {
	var reqs []types.WriteRequest
	for _, it := range rec.Puts {
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: remap(it, tenant)}})
	}
	for _, k := range rec.Deletes {
		reqs = append(reqs, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: remap(k, tenant)}})
	}
	var batches [][]types.WriteRequest
	for from := 0; from < len(reqs); from += 25 {
		batches = append(batches, reqs[from:min(from+25, len(reqs))])
	}
	var mu sync.Mutex
	calls := 0
	start := time.Now()
	err := inParallel(ctx, len(batches), func(ctx context.Context, i int) error {
		pending := batches[i]
		for len(pending) > 0 {
			out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: pending}})
			mu.Lock()
			calls++
			mu.Unlock()
			if err != nil {
				return fmt.Errorf("floor BatchWriteItem: %w", err)
			}
			pending = out.UnprocessedItems[table]
		}
		return nil
	})
	return FloorRound{Took: time.Since(start), Calls: calls, Items: len(reqs)}, err
}

// batchGetFloor reads keys of table with BatchGetItem calls of 100,
// floorParallel at once, following unprocessed keys, and times it.
func batchGetFloor(ctx context.Context, db dynamo.API, table string, keys []map[string]types.AttributeValue) (FloorRound, error) {
	var batches [][]map[string]types.AttributeValue
	for from := 0; from < len(keys); from += 100 {
		batches = append(batches, keys[from:min(from+100, len(keys))])
	}
	var mu sync.Mutex
	calls, items := 0, 0
	start := time.Now()
	err := inParallel(ctx, len(batches), func(ctx context.Context, i int) error {
		pending := map[string]types.KeysAndAttributes{table: {Keys: batches[i]}}
		for len(pending[table].Keys) > 0 {
			out, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return fmt.Errorf("floor BatchGetItem: %w", err)
			}
			mu.Lock()
			calls++
			items += len(out.Responses[table])
			mu.Unlock()
			pending = out.UnprocessedKeys
		}
		return nil
	})
	return FloorRound{Took: time.Since(start), Calls: calls, Items: items}, err
}

// recordedKeys returns the distinct keys of table that rec's GetItem and
// BatchGetItem calls asked for.
func recordedKeys(rec Recorded, table string) []map[string]types.AttributeValue {
	seen := map[string]bool{}
	var keys []map[string]types.AttributeValue
	addKey := func(k map[string]types.AttributeValue) {
		if id := itemKey(k); !seen[id] {
			seen[id] = true
			keys = append(keys, k)
		}
	}
	for _, g := range rec.Gets {
		if aws.ToString(g.TableName) == table {
			addKey(g.Key)
		}
	}
	for _, b := range rec.BatchGets {
		for _, k := range b[table].Keys {
			addKey(k)
		}
	}
	return keys
}

// getFloor reads one item with one GetItem, and times it.
func getFloor(ctx context.Context, db dynamo.API, table string, key map[string]types.AttributeValue) (FloorRound, error) {
	start := time.Now()
	out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &table, Key: key})
	took := time.Since(start)
	if err != nil {
		return FloorRound{}, fmt.Errorf("floor GetItem: %w", err)
	}
	items := 0
	if out.Item != nil {
		items = 1
	}
	return FloorRound{Took: took, Calls: 1, Items: items}, nil
}

// queryFloor sends each recorded Query call again, with its key
// condition, limit and start key but without the service's filter and
// projection, floorParallel at once, and times it: the items of the key
// ranges the service read, each read once when the service read each
// once, in as many calls.
func queryFloor(ctx context.Context, db dynamo.API, queries []*dynamodb.QueryInput) (FloorRound, error) {
	var mu sync.Mutex
	calls, items := 0, 0
	start := time.Now()
	err := inParallel(ctx, len(queries), func(ctx context.Context, i int) error {
		q := queries[i]
		in := &dynamodb.QueryInput{TableName: q.TableName, IndexName: q.IndexName, KeyConditionExpression: q.KeyConditionExpression,
			ExpressionAttributeValues: map[string]types.AttributeValue{}, ExpressionAttributeNames: map[string]string{},
			ScanIndexForward: q.ScanIndexForward, Limit: q.Limit, ExclusiveStartKey: q.ExclusiveStartKey}
		// Only the names and values the key condition uses.
		cond := aws.ToString(q.KeyConditionExpression)
		for k, v := range q.ExpressionAttributeValues {
			if strings.Contains(cond, k) {
				in.ExpressionAttributeValues[k] = v
			}
		}
		for k, v := range q.ExpressionAttributeNames {
			if strings.Contains(cond, k) {
				in.ExpressionAttributeNames[k] = v
			}
		}
		if len(in.ExpressionAttributeNames) == 0 {
			in.ExpressionAttributeNames = nil
		}
		out, err := db.Query(ctx, in)
		if err != nil {
			return fmt.Errorf("floor Query: %w", err)
		}
		mu.Lock()
		calls++
		items += int(out.Count)
		mu.Unlock()
		return nil
	})
	return FloorRound{Took: time.Since(start), Calls: calls, Items: items}, err
}

// readWriteFloor sends rec's Query calls again (queryFloor), reads the
// keys it read (batchGetFloor) and writes what it wrote (writeFloor), one
// after the other, and returns the calls and items of all three; Took is
// their sum.
func readWriteFloor(ctx context.Context, db dynamo.API, table string, rec Recorded) (FloorRound, error) {
	queries, err := queryFloor(ctx, db, rec.Queries)
	if err != nil {
		return FloorRound{}, err
	}
	reads, err := batchGetFloor(ctx, db, table, recordedKeys(rec, table))
	if err != nil {
		return FloorRound{}, err
	}
	writes, err := writeFloor(ctx, db, table, Tenant, rec)
	if err != nil {
		return FloorRound{}, err
	}
	return queries.add(reads).add(writes), nil
}

// inParallel calls fn for 0..n-1, floorParallel at once, and returns the
// first error.
func inParallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, floorParallel)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	return first
}
