package wikitable

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
// share a partition sorted by id, which sorts by creation time, so every
// listing is a Query in creation order; "from" arguments are id prefixes
// that bound those Queries (see integration.Sync's sweep mark).
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

func outboxKey(tenant, serviceID, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: outboxPK(tenant, serviceID)},
		"sk": &types.AttributeValueMemberS{Value: "M#" + id},
	}
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

// outboxQuery builds the Query of an integration's partition from an id
// prefix, NEW messages only unless all.
func (s *OutboxStore) outboxQuery(tenant, serviceID, from string, all bool) (*dynamodb.QueryInput, error) {
	kc := expression.Key("pk").Equal(expression.Value(outboxPK(tenant, serviceID)))
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
	return &dynamodb.QueryInput{
		TableName: &s.table, KeyConditionExpression: expr.KeyCondition(), FilterExpression: expr.Filter(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}, nil
}

// CountNew counts an integration's NEW messages from an id prefix with a
// Select COUNT Query (it reads the DONE messages of the range too, which
// the sweep mark keeps short).
func (s *OutboxStore) CountNew(ctx context.Context, tenant, serviceID, from string) (int, error) {
	in, err := s.outboxQuery(tenant, serviceID, from, false)
	if err != nil {
		return 0, err
	}
	in.Select = types.SelectCount
	n := 0
	p := dynamodb.NewQueryPaginator(s.db, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, dynamo.Errorf("count outbox messages", err)
		}
		n += int(page.Count)
	}
	return n, nil
}

// List returns at most limit messages oldest first from an id prefix: NEW
// ones, DONE ones too when includeDone.
func (s *OutboxStore) List(ctx context.Context, tenant, serviceID, from string, limit int, includeDone bool) ([]*outbox.Message, error) {
	in, err := s.outboxQuery(tenant, serviceID, from, includeDone)
	if err != nil {
		return nil, err
	}
	in.Limit = aws.Int32(int32(min(max(limit, 1), 1000)))
	var out []*outbox.Message
	p := dynamodb.NewQueryPaginator(s.db, in)
	for p.HasMorePages() && len(out) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, dynamo.Errorf("list outbox messages", err)
		}
		for _, av := range page.Items {
			if len(out) == limit {
				break
			}
			m, err := decodeOutbox(av)
			if err != nil {
				return nil, err
			}
			out = append(out, m)
		}
	}
	return out, nil
}

// Get returns one message (strongly consistent), or apperr.ErrNotFound.
func (s *OutboxStore) Get(ctx context.Context, tenant, serviceID, id string) (*outbox.Message, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: outboxKey(tenant, serviceID, id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, dynamo.Errorf("get outbox message", err)
	}
	if out.Item == nil {
		return nil, apperr.ErrNotFound
	}
	return decodeOutbox(out.Item)
}

// GetMany returns the messages that exist among refs (⌈n/100⌉
// BatchGetItem), keyed by ref.
func (s *OutboxStore) GetMany(ctx context.Context, refs []integration.Ref) (map[integration.Ref]*outbox.Message, error) {
	seen := map[integration.Ref]bool{}
	keys := make([]map[string]types.AttributeValue, 0, len(refs))
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			keys = append(keys, outboxKey(r.Tenant, r.ServiceID, r.ID))
		}
	}
	items, err := dynamo.BatchGet(ctx, s.db, s.table, keys, true)
	if err != nil {
		return nil, err
	}
	out := make(map[integration.Ref]*outbox.Message, len(items))
	for _, av := range items {
		var it outboxItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return nil, dynamo.Errorf("decode outbox message", err)
		}
		out[integration.Ref{Tenant: it.Tenant, ServiceID: it.ServiceID, ID: it.ID}] = it.entity()
	}
	return out, nil
}

// Delete removes a message, or answers apperr.ErrNotFound.
func (s *OutboxStore) Delete(ctx context.Context, tenant, serviceID, id string) error {
	out, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.table, Key: outboxKey(tenant, serviceID, id), ReturnValues: types.ReturnValueAllOld,
	})
	if err != nil {
		return dynamo.Errorf("delete outbox message", err)
	}
	if len(out.Attributes) == 0 {
		return apperr.ErrNotFound
	}
	return nil
}

// outboxPurgePage is the Limit of each keys-only Query of a purge.
const outboxPurgePage = 1000

// Purge deletes the messages of an integration's partition whose id is
// below before ("" = all): one keys-only Query per 1,000 messages, each
// page deleted (BatchWriteItem of 25, 8 at a time) before the next is
// read, so memory stays bounded whatever the partition's size. A message
// deleted also leaves the pending partition (it is the same item).
func (s *OutboxStore) Purge(ctx context.Context, tenant, serviceID, before string) (int, error) {
	kc := expression.Key("pk").Equal(expression.Value(outboxPK(tenant, serviceID)))
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
			if sk, ok := av["sk"].(*types.AttributeValueMemberS); ok && before != "" && sk.Value >= "M#"+before {
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

// ScanNew calls fn with the NEW messages of each page (up to 1 MB read) of
// an integration's partition from an id prefix, oldest first.
func (s *OutboxStore) ScanNew(ctx context.Context, tenant, serviceID, from string, fn func([]*outbox.Message) (bool, error)) error {
	in, err := s.outboxQuery(tenant, serviceID, from, false)
	if err != nil {
		return err
	}
	p := dynamodb.NewQueryPaginator(s.db, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return dynamo.Errorf("scan outbox messages", err)
		}
		if len(page.Items) == 0 {
			continue
		}
		msgs := make([]*outbox.Message, 0, len(page.Items))
		for _, av := range page.Items {
			m, err := decodeOutbox(av)
			if err != nil {
				return err
			}
			msgs = append(msgs, m)
		}
		more, err := fn(msgs)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// outboxUpdate is one conditional update of a message.
type outboxUpdate struct {
	ref  integration.Ref
	upd  expression.UpdateBuilder
	cond expression.ConditionBuilder
}

// outboxApply runs updates as TransactWriteItems of up to 100 (⌈n/100⌉ calls);
// a transaction that is cancelled (a message deleted or changed meanwhile)
// is replayed as single UpdateItems whose failed conditions are ignored.
func (s *OutboxStore) outboxApply(ctx context.Context, updates []outboxUpdate, what string) error {
	seen := map[integration.Ref]bool{}
	updates = slices.DeleteFunc(updates, func(u outboxUpdate) bool {
		dup := seen[u.ref]
		seen[u.ref] = true
		return dup
	})
	for chunk := range slices.Chunk(updates, 100) {
		items := make([]types.TransactWriteItem, len(chunk))
		for i, u := range chunk {
			expr, err := expression.NewBuilder().WithUpdate(u.upd).WithCondition(u.cond).Build()
			if err != nil {
				return fmt.Errorf("build %s: %w", what, err)
			}
			items[i] = types.TransactWriteItem{Update: &types.Update{
				TableName: &s.table, Key: outboxKey(u.ref.Tenant, u.ref.ServiceID, u.ref.ID),
				UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
				ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
			}}
		}
		_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		var tce *types.TransactionCanceledException
		switch {
		case err == nil:
			continue
		case errors.As(err, &tce):
			if err := s.outboxApplyEach(ctx, items, what); err != nil {
				return err
			}
		default:
			return dynamo.Errorf(what, err)
		}
	}
	return nil
}

func (s *OutboxStore) outboxApplyEach(ctx context.Context, items []types.TransactWriteItem, what string) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, 16)
	)
	for _, it := range items {
		u := it.Update
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
				ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
			})
			var ccf *types.ConditionalCheckFailedException
			if err != nil && !errors.As(err, &ccf) {
				mu.Lock()
				errs = append(errs, dynamo.Errorf(what, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func outboxExists() expression.ConditionBuilder {
	return expression.AttributeExists(expression.Name("pk"))
}

// MarkDone sets messages DONE with their last response, takes them out of
// the pending partition and sets their expiry; absent ones are skipped.
func (s *OutboxStore) MarkDone(ctx context.Context, outcomes []integration.Outcome) error {
	now := time.Now().UTC()
	updates := make([]outboxUpdate, len(outcomes))
	for i, o := range outcomes {
		updates[i] = outboxUpdate{ref: o.Ref, cond: outboxExists(), upd: expression.
			Set(expression.Name("state"), expression.Value(string(outbox.Done))).
			Set(expression.Name("lastResponse"), expression.Value(o.LastResponse)).
			Set(expression.Name("doneAt"), expression.Value(dynamo.Time(now))).
			Set(expression.Name("ttl"), expression.Value(now.Add(outboxDoneTTL).Unix())).
			Remove(expression.Name("gsi1pk")).Remove(expression.Name("gsi1sk"))}
	}
	return s.outboxApply(ctx, updates, "mark messages done")
}

// RecordFailure sets the last response of the messages that are still
// NEW.
func (s *OutboxStore) RecordFailure(ctx context.Context, refs []integration.Ref, lastResponse string) error {
	updates := make([]outboxUpdate, len(refs))
	for i, r := range refs {
		updates[i] = outboxUpdate{ref: r,
			cond: outboxExists().And(expression.Name("state").Equal(expression.Value(string(outbox.New)))),
			upd:  expression.Set(expression.Name("lastResponse"), expression.Value(lastResponse))}
	}
	return s.outboxApply(ctx, updates, "record a delivery failure")
}

// MarkEnqueued takes messages out of the pending partition (they reached
// SQS); absent ones are skipped.
func (s *OutboxStore) MarkEnqueued(ctx context.Context, refs []integration.Ref) error {
	updates := make([]outboxUpdate, len(refs))
	for i, r := range refs {
		updates[i] = outboxUpdate{ref: r, cond: outboxExists(), upd: expression.
			Set(expression.Name("enqueued"), expression.Value(true)).
			Remove(expression.Name("gsi1pk")).Remove(expression.Name("gsi1sk"))}
	}
	return s.outboxApply(ctx, updates, "mark messages enqueued")
}

// outboxPendingPage bounds one page of the pending partition.
const outboxPendingPage = 500

// Pending pages through the sparse gsi1 partitions of NEW messages of
// every tenant not yet in SQS (OUTBOX#PENDING#<nn>, and the legacy
// OUTBOX#PENDING) for messages created before before, oldest first within
// each partition, hence within each integration. It is the one cross-tenant
// read: only the sync function calls it.
func (s *OutboxStore) Pending(ctx context.Context, before time.Time, fn func([]integration.Pending) (bool, error)) error {
	for _, pk := range outboxPendingPartitions() {
		more, err := s.pending(ctx, pk, before, fn)
		if err != nil || !more {
			return err
		}
	}
	return nil
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
		WithProjection(expression.NamesList(expression.Name("tenant"), expression.Name("serviceId"), expression.Name("id"))).
		Build()
	if err != nil {
		return 0, fmt.Errorf("build enqueued outbox scan: %w", err)
	}
	var refs []integration.Ref
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
		}
	}
	updates := make([]outboxUpdate, len(refs))
	for i, r := range refs {
		updates[i] = outboxUpdate{ref: r,
			cond: outboxExists().And(expression.Name("state").Equal(expression.Value(string(outbox.New)))),
			upd: expression.Remove(expression.Name("enqueued")).
				Set(expression.Name("gsi1pk"), expression.Value(outboxPendingPK(r.Tenant, r.ServiceID))).
				Set(expression.Name("gsi1sk"), expression.Value(r.ID+"#"+r.Tenant+"#"+r.ServiceID))}
	}
	return len(refs), s.outboxApply(ctx, updates, "requeue enqueued messages")
}

// Scanner is a DynamoDB client that may also Scan (*dynamodb.Client is one).
type Scanner interface {
	dynamo.API
	dynamodb.ScanAPIClient
}
