package wikitable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/outbox"
)

// OutboxStore reads and updates the outbound messages of the WikiTable
// (outboxitem.go has the item and its keys). Messages of one integration
// are spread over OutboxShards partitions by id, each sorted by id, which
// sorts by creation time; the partition of releases before the shards is
// read as one more. Every listing is a merge of those partitions' Queries
// in id order (outboxMerge), so it answers in creation order as one
// partition did; "from" arguments are id prefixes that bound those Queries
// (see integration.Sync's sweep mark). An operation by id goes to the
// message's shard, and to the legacy partition only when the shard does
// not hold it.
type OutboxStore struct {
	db    dynamo.API
	table string
}

var _ integration.Outbox = (*OutboxStore)(nil)

// NewOutboxStore returns an OutboxStore on table.
func NewOutboxStore(db dynamo.API, table string) *OutboxStore {
	return &OutboxStore{db: db, table: table}
}

// outboxDoneTTL is how long a DONE message is kept: its "ttl" attribute (epoch
// seconds) lets DynamoDB TTL expire it once the table's TTL is enabled on
// that attribute.
const outboxDoneTTL = 30 * 24 * time.Hour

func outboxKeyIn(pk, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberS{Value: "M#" + id},
	}
}

// outboxKey is the key of a message written by this release (its shard).
func outboxKey(tenant, serviceID, id string) map[string]types.AttributeValue {
	return outboxKeyIn(outboxPK(tenant, serviceID, id), id)
}

// outboxLegacyKey is the key the same message had before the shards.
func outboxLegacyKey(tenant, serviceID, id string) map[string]types.AttributeValue {
	return outboxKeyIn(outboxLegacyPK(tenant, serviceID), id)
}

// Put writes messages as they are (BatchWriteItem, no condition): for
// tools and tests. Content changes write their messages in their own
// transaction (outboxPut).
func (s *OutboxStore) Put(ctx context.Context, tenant string, msgs []*outbox.Message) error {
	writes := make([]types.WriteRequest, 0, len(msgs))
	for _, m := range msgs {
		av, err := attributevalue.MarshalMap(newOutboxItem(tenant, m))
		if err != nil {
			return dynamo.Errorf("encode outbox message", err)
		}
		writes = append(writes, types.WriteRequest{PutRequest: &types.PutRequest{Item: av}})
	}
	return dynamo.BatchWrite(ctx, s.db, s.table, writes)
}

// outboxQueries builds the Query of each partition of an integration (the
// shards, then the legacy one) from an id prefix, NEW messages only unless
// all.
func (s *OutboxStore) outboxQueries(tenant, serviceID, from string, all bool) ([]*dynamodb.QueryInput, error) {
	var out []*dynamodb.QueryInput
	for _, pk := range outboxPartitions(tenant, serviceID) {
		kc := expression.Key("pk").Equal(expression.Value(pk))
		if from == "" {
			kc = kc.And(expression.Key("sk").BeginsWith("M#"))
		} else {
			kc = kc.And(expression.Key("sk").GreaterThanEqual(expression.Value("M#" + from)))
		}
		b := expression.NewBuilder().WithKeyCondition(kc)
		if !all {
			b = b.WithFilter(expression.Name("state").Equal(expression.Value(string(outbox.New))))
		}
		expr, err := b.Build()
		if err != nil {
			return nil, fmt.Errorf("build outbox query: %w", err)
		}
		out = append(out, &dynamodb.QueryInput{
			TableName: &s.table, KeyConditionExpression: expr.KeyCondition(), FilterExpression: expr.Filter(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		})
	}
	return out, nil
}

// CountNew counts an integration's NEW messages from an id prefix with a
// Select COUNT Query of each partition, all at once (it reads the DONE
// messages of the range too, which the sweep mark keeps short).
func (s *OutboxStore) CountNew(ctx context.Context, tenant, serviceID, from string) (int, error) {
	ins, err := s.outboxQueries(tenant, serviceID, from, false)
	if err != nil {
		return 0, err
	}
	counts := make([]int, len(ins))
	errs := make([]error, len(ins))
	var wg sync.WaitGroup
	for i, in := range ins {
		in.Select = types.SelectCount
		wg.Go(func() {
			p := dynamodb.NewQueryPaginator(s.db, in)
			for p.HasMorePages() {
				page, err := p.NextPage(ctx)
				if err != nil {
					errs[i] = dynamo.Errorf("count outbox messages", err)
					return
				}
				counts[i] += int(page.Count)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, err
	}
	n := 0
	for _, c := range counts {
		n += c
	}
	return n, nil
}

// outboxMerge reads the Queries of an integration's partitions as one
// sequence in sort-key (id) order: a k-way merge that holds one page per
// partition and reads a partition's next page only once the merge has
// taken every item of its current one, so memory stays bounded and a
// caller that stops early reads no more. Ids are unique across partitions
// (a message is written to one), so the order is total.
type outboxMerge struct {
	inputs []*outboxMergeInput
	what   string
}

type outboxMergeInput struct {
	p     *dynamodb.QueryPaginator
	items []map[string]types.AttributeValue
}

func (s *OutboxStore) newOutboxMerge(ins []*dynamodb.QueryInput, what string) *outboxMerge {
	m := &outboxMerge{what: what}
	for _, in := range ins {
		m.inputs = append(m.inputs, &outboxMergeInput{p: dynamodb.NewQueryPaginator(s.db, in)})
	}
	return m
}

// fill reads the next page of an input until it has items or no more pages.
func (in *outboxMergeInput) fill(ctx context.Context) error {
	for len(in.items) == 0 && in.p.HasMorePages() {
		page, err := in.p.NextPage(ctx)
		if err != nil {
			return err
		}
		in.items = page.Items
	}
	return nil
}

// needsRead says whether next would make a Query.
func (m *outboxMerge) needsRead() bool {
	for _, in := range m.inputs {
		if len(in.items) == 0 && in.p.HasMorePages() {
			return true
		}
	}
	return false
}

// next returns the item with the smallest sort key left, or nil at the
// end. The first call reads the first page of every partition at once.
func (m *outboxMerge) next(ctx context.Context) (map[string]types.AttributeValue, error) {
	var empty []*outboxMergeInput
	for _, in := range m.inputs {
		if len(in.items) == 0 && in.p.HasMorePages() {
			empty = append(empty, in)
		}
	}
	if len(empty) > 0 {
		errs := make([]error, len(empty))
		var wg sync.WaitGroup
		for i, in := range empty {
			wg.Go(func() { errs[i] = in.fill(ctx) })
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, dynamo.Errorf(m.what, err)
		}
	}
	var best *outboxMergeInput
	bestSK := ""
	for _, in := range m.inputs {
		if len(in.items) == 0 {
			continue
		}
		sk := outboxSK(in.items[0])
		if best == nil || sk < bestSK {
			best, bestSK = in, sk
		}
	}
	if best == nil {
		return nil, nil
	}
	it := best.items[0]
	best.items = best.items[1:]
	return it, nil
}

func outboxSK(av map[string]types.AttributeValue) string {
	if sk, ok := av["sk"].(*types.AttributeValueMemberS); ok {
		return sk.Value
	}
	return ""
}

// List returns at most limit messages oldest first from an id prefix: NEW
// ones, DONE ones too when includeDone. Each partition's Query pages hold
// at most limit items (no partition gives more than limit to the answer),
// so a short listing reads one page of each partition.
func (s *OutboxStore) List(ctx context.Context, tenant, serviceID, from string, limit int, includeDone bool) ([]*outbox.Message, error) {
	ins, err := s.outboxQueries(tenant, serviceID, from, includeDone)
	if err != nil {
		return nil, err
	}
	for _, in := range ins {
		in.Limit = aws.Int32(int32(min(max(limit, 1), 1000)))
	}
	var out []*outbox.Message
	m := s.newOutboxMerge(ins, "list outbox messages")
	for len(out) < limit {
		av, err := m.next(ctx)
		if err != nil {
			return nil, err
		}
		if av == nil {
			break
		}
		msg, err := decodeOutbox(av)
		if err != nil {
			return nil, err
		}
		out = append(out, msg)
	}
	return out, nil
}

// Get returns one message (strongly consistent), or apperr.ErrNotFound:
// from its shard, else from the legacy partition.
func (s *OutboxStore) Get(ctx context.Context, tenant, serviceID, id string) (*outbox.Message, error) {
	for _, key := range []map[string]types.AttributeValue{outboxKey(tenant, serviceID, id), outboxLegacyKey(tenant, serviceID, id)} {
		out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return nil, dynamo.Errorf("get outbox message", err)
		}
		if out.Item != nil {
			return decodeOutbox(out.Item)
		}
	}
	return nil, apperr.ErrNotFound
}

// GetMany returns the messages that exist among refs (⌈n/100⌉
// BatchGetItem of their shards, then as many of the legacy keys of those
// not found), keyed by ref.
func (s *OutboxStore) GetMany(ctx context.Context, refs []integration.Ref) (map[integration.Ref]*outbox.Message, error) {
	seen := map[integration.Ref]bool{}
	refs = slices.DeleteFunc(slices.Clone(refs), func(r integration.Ref) bool {
		dup := seen[r]
		seen[r] = true
		return dup
	})
	out := make(map[integration.Ref]*outbox.Message, len(refs))
	for _, keyOf := range []func(tenant, serviceID, id string) map[string]types.AttributeValue{outboxKey, outboxLegacyKey} {
		keys := make([]map[string]types.AttributeValue, 0, len(refs))
		for _, r := range refs {
			if out[r] == nil {
				keys = append(keys, keyOf(r.Tenant, r.ServiceID, r.ID))
			}
		}
		if len(keys) == 0 {
			break
		}
		items, err := dynamo.BatchGet(ctx, s.db, s.table, keys, true)
		if err != nil {
			return nil, err
		}
		for _, av := range items {
			var it outboxItem
			if err := attributevalue.UnmarshalMap(av, &it); err != nil {
				return nil, dynamo.Errorf("decode outbox message", err)
			}
			out[integration.Ref{Tenant: it.Tenant, ServiceID: it.ServiceID, ID: it.ID}] = it.entity()
		}
	}
	return out, nil
}

// Delete removes a message (from its shard, else from the legacy
// partition), or answers apperr.ErrNotFound.
func (s *OutboxStore) Delete(ctx context.Context, tenant, serviceID, id string) error {
	for _, key := range []map[string]types.AttributeValue{outboxKey(tenant, serviceID, id), outboxLegacyKey(tenant, serviceID, id)} {
		out, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: key, ReturnValues: types.ReturnValueAllOld})
		if err != nil {
			return dynamo.Errorf("delete outbox message", err)
		}
		if len(out.Attributes) > 0 {
			return nil
		}
	}
	return apperr.ErrNotFound
}

// outboxPurgePage is the Limit of each keys-only Query of a purge.
const outboxPurgePage = 1000

// Purge deletes the messages of an integration whose id is below before
// ("" = all), partition after partition (the shards, then the legacy one:
// the order of the deletes changes nothing of the result): one keys-only
// Query per 1,000 messages, each page deleted (BatchWriteItem of 25, 8 at
// a time) before the next is read, so memory stays bounded whatever the
// integration's size. A message deleted also leaves the pending partition
// (it is the same item).
func (s *OutboxStore) Purge(ctx context.Context, tenant, serviceID, before string) (int, error) {
	n := 0
	for _, pk := range outboxPartitions(tenant, serviceID) {
		got, err := s.purge(ctx, pk, before)
		n += got
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (s *OutboxStore) purge(ctx context.Context, pk, before string) (int, error) {
	kc := expression.Key("pk").Equal(expression.Value(pk))
	if before == "" {
		kc = kc.And(expression.Key("sk").BeginsWith("M#"))
	} else {
		kc = kc.And(expression.Key("sk").Between(expression.Value("M#"), expression.Value("M#"+before)))
	}
	expr, err := expression.NewBuilder().WithKeyCondition(kc).
		WithProjection(expression.NamesList(expression.Name("pk"), expression.Name("sk"))).Build()
	if err != nil {
		return 0, fmt.Errorf("build outbox purge query: %w", err)
	}
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName: &s.table, KeyConditionExpression: expr.KeyCondition(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		Limit: aws.Int32(outboxPurgePage), ConsistentRead: aws.Bool(true),
	})
	n := 0
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return n, dynamo.Errorf("list outbox messages to purge", err)
		}
		keys := make([]map[string]types.AttributeValue, 0, len(page.Items))
		for _, av := range page.Items {
			if before != "" && outboxSK(av) >= "M#"+before {
				continue // BETWEEN includes its upper bound
			}
			keys = append(keys, map[string]types.AttributeValue{"pk": av["pk"], "sk": av["sk"]})
		}
		if err := dynamo.BatchWrite(ctx, s.db, s.table, dynamo.Deletes(keys)); err != nil {
			return n, fmt.Errorf("purge outbox messages: %w", err)
		}
		n += len(keys)
	}
	return n, nil
}

// outboxScanChunk bounds the messages ScanNew hands to fn at once.
const outboxScanChunk = 1000

// ScanNew calls fn with the NEW messages of an integration from an id
// prefix, oldest first (the merge of its partitions), in chunks of at most
// outboxScanChunk: a chunk ends too before each further Query (up to 1 MB
// read from one partition), so fn decides whether to read on as it did
// between the pages of the single partition.
func (s *OutboxStore) ScanNew(ctx context.Context, tenant, serviceID, from string, fn func([]*outbox.Message) (bool, error)) error {
	ins, err := s.outboxQueries(tenant, serviceID, from, false)
	if err != nil {
		return err
	}
	m := s.newOutboxMerge(ins, "scan outbox messages")
	var chunk []*outbox.Message
	for {
		if len(chunk) > 0 && (len(chunk) == outboxScanChunk || m.needsRead()) {
			more, err := fn(chunk)
			if err != nil || !more {
				return err
			}
			chunk = nil
		}
		av, err := m.next(ctx)
		if err != nil {
			return err
		}
		if av == nil {
			break
		}
		msg, err := decodeOutbox(av)
		if err != nil {
			return err
		}
		chunk = append(chunk, msg)
	}
	if len(chunk) > 0 {
		_, err := fn(chunk)
		return err
	}
	return nil
}

// outboxUpdate is one conditional update of a message: set and remove
// attributes if the message exists (and, with state, is in that state).
type outboxUpdate struct {
	ref    integration.Ref
	set    []outboxSet
	remove []string
	state  outbox.State
	// pk is the message's partition when known (a scan read it): then the
	// update goes there only.
	pk string
}

type outboxSet struct {
	name  string
	value types.AttributeValue
}

func outboxS(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

// statement is the PartiQL UPDATE of u on the item at key. An UPDATE
// changes an existing item only: on an absent one its condition fails.
func (u outboxUpdate) statement(table string, key map[string]types.AttributeValue) types.BatchStatementRequest {
	var b strings.Builder
	var params []types.AttributeValue
	fmt.Fprintf(&b, "UPDATE %q", table)
	for _, s := range u.set {
		fmt.Fprintf(&b, " SET %q=?", s.name)
		params = append(params, s.value)
	}
	for _, name := range u.remove {
		fmt.Fprintf(&b, " REMOVE %q", name)
	}
	b.WriteString(` WHERE "pk"=? AND "sk"=?`)
	params = append(params, key["pk"], key["sk"])
	if u.state != "" {
		b.WriteString(` AND "state"=?`)
		params = append(params, outboxS(string(u.state)))
	}
	return types.BatchStatementRequest{Statement: aws.String(b.String()), Parameters: params,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}
}

// outboxApplyBatch is the number of statements of one BatchExecuteStatement
// (DynamoDB's maximum), outboxApplyConcurrency how many are in flight.
const (
	outboxApplyBatch       = 25
	outboxApplyConcurrency = 8
)

// outboxApply runs updates as PartiQL UPDATE statements in
// BatchExecuteStatement calls of 25, 8 calls at a time: ⌈n/25⌉ calls, 1
// write unit per message. Nothing needs the updates to succeed together,
// and a transaction costs 2 write units per item; BatchWriteItem cannot
// carry the condition that keeps a message deleted or purged meanwhile
// from coming back (an UPDATE changes only an item that exists). An
// update whose condition fails on the message's shard is tried on the
// message's legacy key (a second round of batches), unless the failed
// check returned the item (it is there, in another state); failed
// conditions are otherwise ignored: the message is absent, or no longer
// in the state the update needs.
func (s *OutboxStore) outboxApply(ctx context.Context, updates []outboxUpdate, what string) error {
	seen := map[integration.Ref]bool{}
	updates = slices.DeleteFunc(slices.Clone(updates), func(u outboxUpdate) bool {
		dup := seen[u.ref]
		seen[u.ref] = true
		return dup
	})
	stmts := make([]types.BatchStatementRequest, len(updates))
	for i, u := range updates {
		if u.pk != "" {
			stmts[i] = u.statement(s.table, outboxKeyIn(u.pk, u.ref.ID))
		} else {
			stmts[i] = u.statement(s.table, outboxKey(u.ref.Tenant, u.ref.ServiceID, u.ref.ID))
		}
	}
	failed, err := s.outboxExecute(ctx, stmts, what)
	if err != nil {
		return err
	}
	var legacy []types.BatchStatementRequest
	for _, i := range failed {
		if u := updates[i]; u.pk == "" {
			legacy = append(legacy, u.statement(s.table, outboxLegacyKey(u.ref.Tenant, u.ref.ServiceID, u.ref.ID)))
		}
	}
	_, err = s.outboxExecute(ctx, legacy, what)
	return err
}

// outboxExecute runs stmts in batches of 25, 8 batches at a time, and
// answers the indexes of those whose condition failed on an absent item.
// Statements refused for throughput or a transaction in progress are sent
// again after a backoff.
func (s *OutboxStore) outboxExecute(ctx context.Context, stmts []types.BatchStatementRequest, what string) ([]int, error) {
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		errs   []error
		absent []int
		sem    = make(chan struct{}, outboxApplyConcurrency)
	)
	for start := 0; start < len(stmts); start += outboxApplyBatch {
		idx := make([]int, 0, outboxApplyBatch)
		for i := start; i < min(start+outboxApplyBatch, len(stmts)); i++ {
			idx = append(idx, i)
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			gone, err := s.outboxExecuteBatch(ctx, stmts, idx, what)
			mu.Lock()
			defer mu.Unlock()
			absent = append(absent, gone...)
			if err != nil {
				errs = append(errs, err)
			}
		}()
	}
	wg.Wait()
	slices.Sort(absent)
	return absent, errors.Join(errs...)
}

func (s *OutboxStore) outboxExecuteBatch(ctx context.Context, stmts []types.BatchStatementRequest, idx []int, what string) ([]int, error) {
	var absent []int
	for attempt := 0; len(idx) > 0; attempt++ {
		if attempt > 0 {
			if err := dynamo.Backoff(ctx, attempt); err != nil {
				return absent, err
			}
		}
		if attempt > 12 {
			return absent, fmt.Errorf("%s: %d updates still refused after retries", what, len(idx))
		}
		batch := make([]types.BatchStatementRequest, len(idx))
		for j, i := range idx {
			batch[j] = stmts[i]
		}
		out, err := s.db.BatchExecuteStatement(ctx, &dynamodb.BatchExecuteStatementInput{Statements: batch})
		if err != nil {
			return absent, dynamo.Errorf(what, err)
		}
		var again []int
		for j, res := range out.Responses {
			if res.Error == nil {
				continue
			}
			switch res.Error.Code {
			case types.BatchStatementErrorCodeEnumConditionalCheckFailed:
				if len(res.Error.Item) == 0 {
					absent = append(absent, idx[j])
				}
			case types.BatchStatementErrorCodeEnumProvisionedThroughputExceeded, types.BatchStatementErrorCodeEnumThrottlingError,
				types.BatchStatementErrorCodeEnumRequestLimitExceeded, types.BatchStatementErrorCodeEnumTransactionConflict,
				types.BatchStatementErrorCodeEnumInternalServerError:
				again = append(again, idx[j])
			default:
				return absent, fmt.Errorf("%s: %s: %s", what, res.Error.Code, aws.ToString(res.Error.Message))
			}
		}
		idx = again
	}
	return absent, nil
}

// MarkDone sets messages DONE with their last response, takes them out of
// the pending partition and sets their expiry; absent ones are skipped.
func (s *OutboxStore) MarkDone(ctx context.Context, outcomes []integration.Outcome) error {
	now := time.Now().UTC()
	updates := make([]outboxUpdate, len(outcomes))
	for i, o := range outcomes {
		updates[i] = outboxUpdate{ref: o.Ref, set: []outboxSet{
			{"state", outboxS(string(outbox.Done))}, {"lastResponse", outboxS(o.LastResponse)},
			{"doneAt", outboxS(dynamo.Time(now))},
			{"ttl", &types.AttributeValueMemberN{Value: strconv.FormatInt(now.Add(outboxDoneTTL).Unix(), 10)}},
		}, remove: []string{"gsi1pk", "gsi1sk"}}
	}
	return s.outboxApply(ctx, updates, "mark messages done")
}

// RecordFailure sets the last response of the messages that are still
// NEW.
func (s *OutboxStore) RecordFailure(ctx context.Context, refs []integration.Ref, lastResponse string) error {
	updates := make([]outboxUpdate, len(refs))
	for i, r := range refs {
		updates[i] = outboxUpdate{ref: r, state: outbox.New, set: []outboxSet{{"lastResponse", outboxS(lastResponse)}}}
	}
	return s.outboxApply(ctx, updates, "record a delivery failure")
}

// MarkEnqueued takes messages out of the pending partition (they reached
// SQS); absent ones are skipped.
func (s *OutboxStore) MarkEnqueued(ctx context.Context, refs []integration.Ref) error {
	updates := make([]outboxUpdate, len(refs))
	for i, r := range refs {
		updates[i] = outboxUpdate{ref: r, set: []outboxSet{{"enqueued", &types.AttributeValueMemberBOOL{Value: true}}},
			remove: []string{"gsi1pk", "gsi1sk"}}
	}
	return s.outboxApply(ctx, updates, "mark messages enqueued")
}

// outboxPendingPage bounds one page of the pending partition.
const outboxPendingPage = 500

// outboxPendingConcurrency is how many pending partitions Pending reads
// at once: most of the 65 are empty, and one after another their Queries
// cost a sync run 65 round trips before it delivers anything.
const outboxPendingConcurrency = 8

// Pending pages through the sparse gsi1 partitions of NEW messages of
// every tenant not yet in SQS (OUTBOX#PENDING#<nn>, and the legacy
// OUTBOX#PENDING) for messages created before before, oldest first within
// each partition, hence within each integration. It is the one cross-tenant
// read: only the sync function calls it. The partitions are read
// outboxPendingConcurrency at once; fn is called for one page at a time
// (never concurrently), and once it says stop or fails no further page is
// handed to it.
func (s *OutboxStore) Pending(ctx context.Context, before time.Time, fn func([]integration.Pending) (bool, error)) error {
	var (
		mu      sync.Mutex
		stopped bool
		errs    []error
		wg      sync.WaitGroup
		sem     = make(chan struct{}, outboxPendingConcurrency)
	)
	// call hands a page to fn unless an earlier page stopped the reading.
	call := func(page []integration.Pending) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return false, nil
		}
		more, err := fn(page)
		if err != nil || !more {
			stopped = true
		}
		return more, err
	}
	for _, pk := range outboxPendingPartitions() {
		mu.Lock()
		done := stopped
		mu.Unlock()
		if done {
			break
		}
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if _, err := s.pending(ctx, pk, before, call); err != nil {
				mu.Lock()
				stopped = true
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// pending pages through one pending partition; false when fn said stop.
func (s *OutboxStore) pending(ctx context.Context, pk string, before time.Time, fn func([]integration.Pending) (bool, error)) (bool, error) {
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName: &s.table, IndexName: aws.String("gsi1"),
		KeyConditionExpression: aws.String("gsi1pk = :pk AND gsi1sk < :before"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk":     &types.AttributeValueMemberS{Value: pk},
			":before": &types.AttributeValueMemberS{Value: fmt.Sprintf("%016x", before.UnixNano())},
		},
		Limit: aws.Int32(outboxPendingPage),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return false, dynamo.Errorf("query pending outbox messages", err)
		}
		out := make([]integration.Pending, 0, len(page.Items))
		for _, av := range page.Items {
			var it outboxItem
			if err := attributevalue.UnmarshalMap(av, &it); err != nil {
				return false, dynamo.Errorf("decode outbox message", err)
			}
			if it.State == string(outbox.New) {
				out = append(out, integration.Pending{Tenant: it.Tenant, Message: it.entity()})
			}
		}
		if len(out) == 0 {
			continue
		}
		more, err := fn(out)
		if err != nil || !more {
			return false, err
		}
	}
	return true, nil
}

// RequeueEnqueued puts every NEW message whose reference went to SQS back
// in the pending partition, so that the next sync run enqueues it again,
// and answers how many it moved. It is for a queue that lost its
// references while the table kept its messages (a queue deleted and
// recreated; the local stack restarting on kept tables with a fresh SQS
// stand-in): it scans the whole table (hence a client that can Scan, which
// dynamo.API leaves out), so it is never on a request's path. A message
// delivered twice is harmless: deliveries are idempotent.
func RequeueEnqueued(ctx context.Context, db Scanner, table string) (int, error) {
	s := NewOutboxStore(db, table)
	expr, err := expression.NewBuilder().
		WithFilter(expression.Name("sk").BeginsWith("M#").
			And(expression.Name("state").Equal(expression.Value(string(outbox.New)))).
			And(expression.Name("enqueued").Equal(expression.Value(true)))).
		WithProjection(expression.NamesList(expression.Name("pk"), expression.Name("tenant"), expression.Name("serviceId"), expression.Name("id"))).
		Build()
	if err != nil {
		return 0, fmt.Errorf("build enqueued outbox scan: %w", err)
	}
	var (
		refs []integration.Ref
		pks  []string
	)
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{
		TableName: &s.table, FilterExpression: expr.Filter(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, dynamo.Errorf("scan enqueued outbox messages", err)
		}
		for _, av := range page.Items {
			var it outboxItem
			if err := attributevalue.UnmarshalMap(av, &it); err != nil {
				return 0, dynamo.Errorf("decode outbox message", err)
			}
			refs = append(refs, integration.Ref{Tenant: it.Tenant, ServiceID: it.ServiceID, ID: it.ID})
			pks = append(pks, it.PK)
		}
	}
	updates := make([]outboxUpdate, len(refs))
	for i, r := range refs {
		updates[i] = outboxUpdate{ref: r, pk: pks[i], state: outbox.New, remove: []string{"enqueued"}, set: []outboxSet{
			{"gsi1pk", outboxS(outboxPendingPK(r.Tenant, r.ServiceID))}, {"gsi1sk", outboxS(r.ID + "#" + r.Tenant + "#" + r.ServiceID)}}}
	}
	return len(refs), s.outboxApply(ctx, updates, "requeue enqueued messages")
}

// Scanner is a DynamoDB client that may also Scan (*dynamodb.Client is one).
type Scanner interface {
	dynamo.API
	dynamodb.ScanAPIClient
}
