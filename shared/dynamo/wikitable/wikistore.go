package wikitable

import (
	"context"
	"errors"
	"fmt"
	"slices"
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
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// WikiStore implements wiki.Store on the WikiTable: pages, the current
// requirement rows with their search index items and reverse dependencies,
// the spaces registry, and the outbound messages written with the changes
// they report. docs/indexing.md describes the write path and its DynamoDB
// call counts.
type WikiStore struct {
	db    dynamo.API
	table string
	reqs  *RequirementStore
	// Now is the clock of page leases (time.Now when nil); tests replace it.
	Now func() time.Time
	// spaces remembers the spaces this store registered or found
	// registered ("<tenant>\x00<space>"): nothing removes a space from the
	// registry, so a warm process skips the registration's conditional
	// PutItem on every later new page of a known space.
	spaces sync.Map
}

var _ wiki.Store = (*WikiStore)(nil)

// NewWikiStore returns a WikiStore on table.
func NewWikiStore(db dynamo.API, table string) *WikiStore {
	return &WikiStore{db: db, table: table, reqs: NewRequirementStore(db, table)}
}

// Requirement returns one row with one GetItem, or apperr.ErrNotFound (also
// for a stub).
func (s *WikiStore) Requirement(ctx context.Context, tenant string, id requirement.ID) (*requirement.Requirement, error) {
	return s.reqs.Get(ctx, tenant, id)
}

// BaselineExists reports whether the record of baseline n of the space
// exists (one GetItem of its key; BaselineStore.Exists).
func (s *WikiStore) BaselineExists(ctx context.Context, tenant, space string, n int) (bool, error) {
	return (&BaselineStore{db: s.db, table: s.table}).Exists(ctx, tenant, space, n)
}

// Requirements returns the current rows among ids that exist, stubs
// included, keyed by requirement.ID.Fold(), with one BatchGetItem per 100 ids.
func (s *WikiStore) Requirements(ctx context.Context, tenant string, ids []requirement.ID) (map[requirement.ID]*requirement.Requirement, error) {
	current := make([]requirement.ID, 0, len(ids))
	for _, id := range ids {
		current = append(current, id.Current())
	}
	return s.reqs.GetMany(ctx, tenant, current)
}

// Integrations lists the tenant's integrations: one Query of the
// T#t#INTEG partition projecting the serviceId (sort key) and version.
func (s *WikiStore) Integrations(ctx context.Context, tenant string) ([]wiki.Integration, error) {
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key("pk").Equal(expression.Value(dynamo.TenantPrefix(tenant) + "INTEG"))).
		WithProjection(expression.NamesList(expression.Name("sk"), expression.Name("version"))).Build()
	if err != nil {
		return nil, fmt.Errorf("list integrations: build query: %w", err)
	}
	var out []wiki.Integration
	err = dynamo.QueryEach(ctx, s.db, &dynamodb.QueryInput{
		TableName: &s.table, KeyConditionExpression: expr.KeyCondition(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(), ConsistentRead: aws.Bool(true),
	}, "list integrations", func(av map[string]types.AttributeValue) error {
		var it struct {
			SK      string `dynamodbav:"sk"`
			Version int    `dynamodbav:"version"`
		}
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return dynamo.Errorf("decode integration", err)
		}
		out = append(out, wiki.Integration{ServiceID: it.SK, Version: it.Version})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// AddPendingRemovals adds to the pendingRemovals counter of integrations
// (one atomic ADD each, conditioned on the integration existing).
func (s *WikiStore) AddPendingRemovals(ctx context.Context, tenant string, counts map[string]int) error {
	for serviceID, n := range counts {
		if n == 0 {
			continue
		}
		expr, err := expression.NewBuilder().
			WithCondition(expression.AttributeExists(expression.Name("pk"))).
			WithUpdate(expression.Add(expression.Name("pendingRemovals"), expression.Value(n))).Build()
		if err != nil {
			return fmt.Errorf("count pending removals: build update: %w", err)
		}
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.table, Key: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: dynamo.TenantPrefix(tenant) + "INTEG"},
				"sk": &types.AttributeValueMemberS{Value: serviceID},
			},
			UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		})
		var ccf *types.ConditionalCheckFailedException
		if err != nil && !errors.As(err, &ccf) {
			return dynamo.Errorf("count pending removals", err)
		}
	}
	return nil
}

// SuspectFields returns the tenant's suspectFields setting (one GetItem of
// the settings item; SettingsStore.SuspectFields).
func (s *WikiStore) SuspectFields(ctx context.Context, tenant string) ([]string, error) {
	return NewSettingsStore(s.db, s.table).SuspectFields(ctx, tenant)
}

// ClearSuspects removes the suspect marks of the current rows of rows and
// their suspect index items: one TransactWriteItems per row (a check that
// no save holds the lease of the row's page, the row's REMOVE on
// condition that the row exists, and its index item's delete), 8 at a
// time. A page save marks a row with its index item in one transaction
// too (saveSuspectEdit), so a mark made while the clear runs is either
// cleared with its index item or kept with it: a marked row never lacks
// its index item. A save of the row's own page holds that page's lease
// from before it reads the row until its commit, so a clear that lands
// never comes between the save's read of the marks and its write of them
// (which would write them back, without their index item); the rows whose
// page was leased are answered in busy, untouched, to clear again once
// the save is over. A row gone meanwhile keeps its index item (a
// superset, which searches check).
func (s *WikiStore) ClearSuspects(ctx context.Context, tenant string, rows []*requirement.Requirement) (busy []*requirement.Requirement, err error) {
	expr, err := expression.NewBuilder().
		WithCondition(expression.AttributeExists(expression.Name("pk"))).
		WithUpdate(expression.Remove(expression.Name("sus"))).Build()
	if err != nil {
		return nil, fmt.Errorf("clear suspects: build update: %w", err)
	}
	var mu sync.Mutex
	err = dynamo.Each(ctx, rows, 8, func(ctx context.Context, r *requirement.Requirement) error {
		id := r.ID().Current()
		items := []types.TransactWriteItem{
			leaseFree(s.table, tenant, r.Origin.PageID, s.now()),
			{Update: &types.Update{
				TableName: &s.table, Key: rowKey(tenant, id),
				UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
				ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
			}},
			{Delete: &types.Delete{TableName: &s.table, Key: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: indexPK(tenant, indexSuspect, indexSuspectValue)},
				"sk": &types.AttributeValueMemberS{Value: indexSK(id.SpaceKey, id.Key)},
			}}},
		}
		err := dynamo.Transact(ctx, s.db, items)
		switch codes := dynamo.CancellationCodes(err, len(items)); {
		case codes != nil && codes[0] == "ConditionalCheckFailed":
			mu.Lock()
			busy = append(busy, r)
			mu.Unlock()
			return nil
		case codes != nil && codes[1] == "ConditionalCheckFailed":
			return nil // gone meanwhile: nothing to clear
		}
		return dynamo.Translate(err, "clear suspects")
	})
	return busy, err
}

// Spaces lists the spaces in which the tenant has stored pages, in order.
func (s *WikiStore) Spaces(ctx context.Context, tenant string) ([]string, error) {
	return s.saveSortKeys(ctx, spacesPK(tenant), "list spaces")
}

// WordIndexed reports whether every space of spaces (nil: every space of
// the tenant) is registered with its word index (saveSpaceItem.Words), so
// that the word index holds every ACTIVE row of them: one Query of the
// space registry.
func (s *WikiStore) WordIndexed(ctx context.Context, tenant string, spaces []string) (bool, error) {
	status, err := s.WordIndexStatus(ctx, tenant)
	if err != nil {
		return false, err
	}
	indexed := map[string]bool{}
	for _, sp := range status {
		indexed[sp.Space] = sp.Words
	}
	if spaces == nil {
		for _, ok := range indexed {
			if !ok {
				return false, nil
			}
		}
		return true, nil
	}
	for _, sp := range spaces {
		if !indexed[sp] {
			return false, nil
		}
	}
	return true, nil
}

func (s *WikiStore) saveSortKeys(ctx context.Context, pk, what string) ([]string, error) {
	var out []string
	err := s.saveQueryEach(ctx, pk, what, []string{"sk"}, func(av map[string]types.AttributeValue) error {
		if sk, ok := av["sk"].(*types.AttributeValueMemberS); ok {
			out = append(out, sk.Value)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// saveQueryEach calls fn with the attributes names (only) of each item of
// partition pk, in order.
func (s *WikiStore) saveQueryEach(ctx context.Context, pk, what string, names []string, fn func(map[string]types.AttributeValue) error) error {
	proj := expression.NamesList(expression.Name(names[0]))
	for _, n := range names[1:] {
		proj = proj.AddNames(expression.Name(n))
	}
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key("pk").Equal(expression.Value(pk))).
		WithProjection(proj).Build()
	if err != nil {
		return fmt.Errorf("%s: build query: %w", what, err)
	}
	return dynamo.QueryEach(ctx, s.db, &dynamodb.QueryInput{
		TableName: &s.table, KeyConditionExpression: expr.KeyCondition(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}, what, fn)
}

// saveSpaceItem registers a space: pk T#t#SPACES, sk <SPACE>. Words says
// that every ACTIVE row of the space has its word index items: true for
// spaces registered since the word index exists (their rows were all
// written by its indexing), absent for older ones, whose rows may lack
// them (docs/search.md, "Word index").
type saveSpaceItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Space     string `dynamodbav:"spaceKey"`
	CreatedAt string `dynamodbav:"createdAt"`
	Words     bool   `dynamodbav:"words,omitempty"`
}

// saveRegisterSpace adds a space to the registry unless it is there
// already: known to this store (no call) or found by the conditional put.
func (s *WikiStore) saveRegisterSpace(ctx context.Context, tenant, space string) error {
	known := tenant + "\x00" + space
	if _, ok := s.spaces.Load(known); ok {
		return nil
	}
	av, err := attributevalue.MarshalMap(saveSpaceItem{
		PK: spacesPK(tenant), SK: space, Space: space, CreatedAt: dynamo.Time(time.Now()), Words: true,
	})
	if err != nil {
		return dynamo.Errorf("encode space", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: av, ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	var ccf *types.ConditionalCheckFailedException
	if err != nil && !errors.As(err, &ccf) {
		return dynamo.Errorf("register space", err)
	}
	s.spaces.Store(known, true)
	return nil
}

// saveStringSet marshals as a DynamoDB string set (attributevalue would make
// a list of a []string given to expression.Value).
type saveStringSet []string

// MarshalDynamoDBAttributeValue implements attributevalue.Marshaler.
func (ss saveStringSet) MarshalDynamoDBAttributeValue() (types.AttributeValue, error) {
	return &types.AttributeValueMemberSS{Value: ss}, nil
}

// saveMaxRow is the most a requirement row may weigh: DynamoDB's 400 KB per
// item, less a margin for the estimate.
const saveMaxRow = 400*1024 - 4096

// Limits of one TransactWriteItems call (DynamoDB: 100 elements, 4 MB).
const (
	saveTxItems = 100
	saveTxBytes = 3 << 20
)

// saveRDepUpdate is the transaction element that adds (or removes) members of
// a row's reverse dependencies without reading it. An absent row becomes a
// stub: keys, space, key and rdeps, no status, invisible to reads.
func (s *WikiStore) saveRDepUpdate(tenant string, target requirement.ID, deps []requirement.Dependency, add bool) (types.TransactWriteItem, error) {
	members := make(saveStringSet, 0, len(deps))
	for _, d := range deps {
		members = append(members, encodeDep(d))
	}
	ifAbsent := func(name, v string) expression.SetValueBuilder {
		return expression.IfNotExists(expression.Name(name), expression.Value(v))
	}
	upd := expression.Set(expression.Name("gsi1pk"), ifAbsent("gsi1pk", curGSI1PK(tenant))).
		Set(expression.Name("gsi1sk"), ifAbsent("gsi1sk", curGSI1SK(target.SpaceKey, target.Key))).
		Set(expression.Name("space"), ifAbsent("space", target.SpaceKey)).
		Set(expression.Name("key"), ifAbsent("key", target.Key))
	if add {
		upd = upd.Add(expression.Name("rdeps"), expression.Value(members))
	} else {
		upd = upd.Delete(expression.Name("rdeps"), expression.Value(members))
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("build reverse dependency update: %w", err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: &s.table, Key: rowKey(tenant, requirement.ID{SpaceKey: target.SpaceKey, Key: target.Key}),
		UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}}, nil
}

// saveSuspectEdit returns the transaction elements that add e's marks to
// its row without reading it (ADD of string-set members: adding a mark
// twice is harmless) and put the row's suspect index item. An absent row
// (its page deleted meanwhile) becomes a stub, invisible to reads.
func (s *WikiStore) saveSuspectEdit(tenant string, e wiki.SuspectEdit) ([]types.TransactWriteItem, error) {
	members := make(saveStringSet, 0, len(e.Marks))
	for _, m := range e.Marks {
		members = append(members, encodeSuspect(m))
	}
	expr, err := expression.NewBuilder().WithUpdate(expression.Add(expression.Name("sus"), expression.Value(members))).Build()
	if err != nil {
		return nil, fmt.Errorf("build suspect update: %w", err)
	}
	sk := indexSK(e.Row.SpaceKey, e.Row.Key)
	ix := indexItem{
		PK: indexPK(tenant, indexSuspect, indexSuspectValue), SK: sk,
		GSI1PK: spaceIndexPK(tenant, e.Row.SpaceKey, indexSuspect, indexSuspectValue), GSI1SK: sk,
		Space: e.Row.SpaceKey, Key: e.Row.Key,
	}.item()
	return []types.TransactWriteItem{
		{Update: &types.Update{
			TableName: &s.table, Key: rowKey(tenant, requirement.ID{SpaceKey: e.Row.SpaceKey, Key: e.Row.Key}),
			UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		}},
		{Put: &types.Put{TableName: &s.table, Item: ix}},
	}, nil
}

// saveDropSuspects removes from d.Rows the suspect marks a failed
// operation on d.Page made (after version d.After): one strongly
// consistent BatchGetItem per 100 rows, then one UpdateItem DELETE of
// exactly those set members per row that holds any. Their suspect index
// items stay (a superset, which searches check).
func (s *WikiStore) saveDropSuspects(ctx context.Context, tenant string, d *wiki.DropSuspects) error {
	keys := make([]map[string]types.AttributeValue, 0, len(d.Rows))
	for _, id := range d.Rows {
		keys = append(keys, rowKey(tenant, id.Current()))
	}
	items, err := dynamo.BatchGet(ctx, s.db, s.table, keys, true)
	if err != nil {
		return err
	}
	type drop struct {
		key     map[string]types.AttributeValue
		members saveStringSet
	}
	var drops []drop
	for _, av := range items {
		var it requirementItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return dynamo.Errorf("decode requirement", err)
		}
		var members saveStringSet
		for _, m := range it.Suspects {
			if mark, ok := decodeSuspect(m); ok && mark.MadeAfter(d.Page, d.After) {
				members = append(members, m)
			}
		}
		if len(members) > 0 {
			drops = append(drops, drop{key: map[string]types.AttributeValue{"pk": av["pk"], "sk": av["sk"]}, members: members})
		}
	}
	return dynamo.Each(ctx, drops, 8, func(ctx context.Context, dr drop) error {
		expr, err := expression.NewBuilder().WithUpdate(expression.Delete(expression.Name("sus"), expression.Value(dr.members))).Build()
		if err != nil {
			return fmt.Errorf("build suspect drop: %w", err)
		}
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.table, Key: dr.key, UpdateExpression: expr.Update(),
			ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		})
		return dynamo.Translate(err, "drop suspect marks")
	})
}

// Commit applies a change (wiki.Store). Everything is encoded first, so a
// page or a requirement too large to store fails (apperr.TooLarge) with
// nothing written. Then, in order:
//
//  0. under a lease, the rows the change may write that the page's key
//     list does not name (c.Pending) and the reverse dependencies it edits
//     on other rows are recorded on the page item (one conditional
//     UpdateItem), so that if it fails half way the next operation on the
//     page finds and reconciles them (Lease.Leftover, LeftoverEdges);
//  1. the space is registered (one conditional PutItem, when asked),
//     while step 2 runs;
//  2. additions: search index item puts (BatchWriteItem calls of 25) and
//     reverse dependencies added to other rows (ADD updates, 100 rows per
//     TransactWriteItems), at once;
//  3. the rows, in BatchWriteItem calls of 25; a row whose change marks
//     rows of other pages suspect goes with those marks and its outbound
//     messages in TransactWriteItems calls of up to 100 elements, several
//     rows each, at once;
//  4. removals and messages: search index item deletes, reverse
//     dependencies removed from other rows (DELETE updates) and the
//     outbound messages of the rows of step 3 (BatchWriteItem calls of
//     25), at once. A message is written only once its row is: a commit
//     that fails in between leaves rows whose messages are missing, and
//     the operation that reconciles the page next (wiki.Service redoes
//     the stored version before a save, a recovery, a reindex) reports
//     the difference between those rows and what it writes;
//  5. the page item is put (or deleted) last. Under a lease (c.Lease, as
//     wiki.Service always writes) on condition that the lease is still
//     this one, which ends it; when the page item does not change, the
//     lease is ended by an UpdateItem removing it. Steps 1–4 run with a
//     deadline pgLeaseMargin before the lease expires, so they never
//     overlap another operation's. Without a lease, on condition that the
//     version is still ExpectVersion and no lease is held.
//
// ADD and DELETE of set members, and index puts and deletes, are
// idempotent: a retried save repeats them harmlessly. (A message put that
// the SDK retries after DynamoDB applied it writes the same message again:
// delivered at least once.) A failure before
// step 5 leaves the old page item and its lease, which expires; because
// additions come before the rows and removals after them, the index and
// reverse dependencies are then at worst a superset of what the rows say
// (searches check every row they read), never missing an entry a stored
// row needs, which no later save would write: saves write only what
// differs from the stored rows. A reverse-dependency set that would pass
// DynamoDB's item size is a TooLarge error (413).
func (s *WikiStore) Commit(ctx context.Context, tenant string, c *wiki.Change) error {
	var pageAV map[string]types.AttributeValue
	if c.PutPage != nil {
		it, err := pgNewItem(tenant, c.PutPage)
		if err != nil {
			return err
		}
		if pageAV, err = attributevalue.MarshalMap(it); err != nil {
			return dynamo.Errorf("encode page", err)
		}
	}
	var rowBatch, messageBatch, indexPuts, indexDeletes []types.WriteRequest
	var units [][]types.TransactWriteItem
	for _, w := range c.Writes {
		av, err := newRequirementItem(tenant, w.New).marshal()
		if err != nil {
			return err
		}
		if size := saveItemSize(av); size > saveMaxRow {
			return apperr.TooLargef("requirement %s/%s cannot be stored: its text, excerpt, properties (external ones included) and links take %d bytes, "+
				"over the %d bytes a requirement may take; shorten its description", w.New.SpaceKey, w.New.Key, size, saveMaxRow)
		}
		puts, deletes := indexDiff(tenant, w.Old, w.New)
		indexPuts, indexDeletes = append(indexPuts, puts...), append(indexDeletes, deletes...)
		if len(w.Suspects) == 0 {
			rowBatch = append(rowBatch, types.WriteRequest{PutRequest: &types.PutRequest{Item: av}})
			for _, m := range w.Messages {
				mav, err := attributevalue.MarshalMap(newOutboxItem(tenant, m))
				if err != nil {
					return dynamo.Errorf("encode outbox message", err)
				}
				messageBatch = append(messageBatch, types.WriteRequest{PutRequest: &types.PutRequest{Item: mav}})
			}
			continue
		}
		unit := []types.TransactWriteItem{{Put: &types.Put{TableName: &s.table, Item: av}}}
		for _, e := range w.Suspects {
			els, err := s.saveSuspectEdit(tenant, e)
			if err != nil {
				return err
			}
			unit = append(unit, els...)
		}
		for _, m := range w.Messages {
			el, err := outboxPut(s.table, tenant, m)
			if err != nil {
				return err
			}
			unit = append(unit, el)
		}
		units = append(units, unit)
	}
	var removals, additions []types.TransactWriteItem
	for _, e := range c.RDeps {
		if len(e.Remove) > 0 {
			el, err := s.saveRDepUpdate(tenant, e.Target, e.Remove, false)
			if err != nil {
				return err
			}
			removals = append(removals, el)
		}
		if len(e.Add) > 0 {
			el, err := s.saveRDepUpdate(tenant, e.Target, e.Add, true)
			if err != nil {
				return err
			}
			additions = append(additions, el)
		}
	}

	if c.Lease != nil {
		var cancel context.CancelFunc
		ctx, cancel = s.pgLeaseContext(ctx, c.Lease)
		defer cancel()
	}
	if members := pgPendingMembers(c); c.Lease != nil && len(members) > 0 {
		if err := s.pgRecordPending(ctx, tenant, c.Lease, members); err != nil {
			return err
		}
	}
	// The space is registered while the first phase writes: the registry
	// item is none of the page's, and a page whose save fails registers
	// its space again the next time (it is still new, or still moved).
	var registerErr error
	var registering sync.WaitGroup
	if c.RegisterSpace != "" {
		registering.Go(func() { registerErr = s.saveRegisterSpace(ctx, tenant, c.RegisterSpace) })
	}
	// Additions before the rows, removals after them: a commit that fails
	// half way leaves the index and the reverse dependencies a superset of
	// what the rows say, never short of what a stored row needs (see
	// indexDiff). Within a phase the writes touch disjoint items and run at
	// once.
	phases := []struct {
		batch    []types.WriteRequest
		batchFor string
		tx       func() error
	}{
		{indexPuts, "write search index items", func() error { return s.saveRDeps(ctx, additions) }},
		{rowBatch, "write requirements", func() error { return s.saveTransactUnits(ctx, units) }},
		{append(indexDeletes, messageBatch...), "delete search index items and write outbound messages", func() error { return s.saveRDeps(ctx, removals) }},
	}
	for i, ph := range phases {
		var batchErr error
		var wg sync.WaitGroup
		wg.Go(func() { batchErr = dynamo.BatchWrite(ctx, s.db, s.table, ph.batch) })
		txErr := ph.tx()
		wg.Wait()
		if i == 0 {
			registering.Wait()
			if registerErr != nil {
				return registerErr
			}
		}
		if batchErr != nil {
			return fmt.Errorf("%s: %w", ph.batchFor, batchErr)
		}
		if txErr != nil {
			return txErr
		}
	}
	if c.DropSuspects != nil {
		if err := s.saveDropSuspects(ctx, tenant, c.DropSuspects); err != nil {
			return err
		}
	}
	switch {
	case c.PutPage != nil:
		return s.pgWrite(ctx, tenant, pageAV, c.PutPage.ID, c.ExpectVersion, c.Lease)
	case c.DeletePage != "":
		return s.pgWrite(ctx, tenant, nil, c.DeletePage, c.ExpectVersion, c.Lease)
	case c.Lease != nil:
		err := s.pgEndLease(ctx, tenant, c.Lease, c.Reconciled, c.Lease.Unfinished && !c.Reconciled)
		var ccf *types.ConditionalCheckFailedException
		if errors.As(err, &ccf) {
			return pgLeaseLost(c.Lease.PageID, err)
		}
		if err != nil {
			return dynamo.Errorf("end page lease", err)
		}
	}
	return nil
}

// saveRDeps applies reverse-dependency edits, 100 rows per transaction. A
// row that the edit would take past DynamoDB's item size (a requirement
// that very many others link to) is a TooLarge error.
func (s *WikiStore) saveRDeps(ctx context.Context, els []types.TransactWriteItem) error {
	err := s.saveTransactAll(ctx, slices.Collect(slices.Chunk(els, saveTxItems)), "update reverse dependencies")
	if itemTooLarge(err) {
		return apperr.Wrap(apperr.TooLargef("a requirement this page links to has more reverse dependencies than "+
			"one requirement can store (DynamoDB's 400 KB per item); link it from fewer requirements"), err)
	}
	return err
}

// itemTooLarge reports whether DynamoDB refused a write because the item
// would pass its size limit.
func itemTooLarge(err error) bool {
	if err == nil {
		return false
	}
	sizeText := func(s string) bool { return strings.Contains(s, "Item size") && strings.Contains(s, "exceeded") }
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range tce.CancellationReasons {
			if sizeText(aws.ToString(r.Message)) {
				return true
			}
		}
	}
	return sizeText(err.Error())
}

// saveTransactUnits commits the rows that carry outbound messages with their
// messages: split-off messages first, then the packed transactions.
func (s *WikiStore) saveTransactUnits(ctx context.Context, units [][]types.TransactWriteItem) error {
	early, groups := savePack(units)
	for _, g := range early {
		if err := s.saveTransact(ctx, g, "write outbound messages"); err != nil {
			return err
		}
	}
	return s.saveTransactAll(ctx, groups, "write requirements with outbound messages")
}

// savePack packs units (a row and its messages) into transactions of at most
// saveTxItems elements and saveTxBytes bytes. A unit too big for one
// transaction (a row with more than 99 messages) has its extra messages
// split off into early transactions, to be committed before the row's: if
// the row's transaction then fails, the next save writes them again, so
// such messages are delivered at least once rather than exactly once.
func savePack(units [][]types.TransactWriteItem) (early, groups [][]types.TransactWriteItem) {
	var cur []types.TransactWriteItem
	curBytes := 0
	for _, unit := range units {
		if len(unit) > saveTxItems {
			extra := unit[1 : len(unit)-(saveTxItems-1)]
			early = append(early, slices.Collect(slices.Chunk(extra, saveTxItems))...)
			unit = append([]types.TransactWriteItem{unit[0]}, unit[len(unit)-(saveTxItems-1):]...)
		}
		size := 0
		for _, el := range unit {
			size += saveElementSize(el)
		}
		if len(cur) > 0 && (len(cur)+len(unit) > saveTxItems || curBytes+size > saveTxBytes) {
			groups = append(groups, cur)
			cur, curBytes = nil, 0
		}
		cur = append(cur, unit...)
		curBytes += size
	}
	if len(cur) > 0 {
		groups = append(groups, cur)
	}
	return early, groups
}

// saveTransactAll runs transactions, up to 4 at a time.
func (s *WikiStore) saveTransactAll(ctx context.Context, groups [][]types.TransactWriteItem, what string) error {
	var wg sync.WaitGroup
	errs := make(chan error, len(groups))
	sem := make(chan struct{}, 8)
	for _, g := range groups {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := s.saveTransact(ctx, g, what); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// saveTransact runs one transaction, retrying with backoff when DynamoDB
// cancels it for a conflict with another transaction (nothing was applied).
func (s *WikiStore) saveTransact(ctx context.Context, items []types.TransactWriteItem, what string) error {
	return dynamo.Translate(dynamo.Transact(ctx, s.db, items), what)
}

// saveElementSize estimates the bytes a transaction element weighs.
func saveElementSize(el types.TransactWriteItem) int {
	switch {
	case el.Put != nil:
		return saveItemSize(el.Put.Item)
	case el.Update != nil:
		return saveItemSize(el.Update.Key) + saveItemSize(el.Update.ExpressionAttributeValues) + len(aws.ToString(el.Update.UpdateExpression))
	}
	return 1024
}

func saveItemSize(m map[string]types.AttributeValue) int {
	n := 0
	for k, v := range m {
		n += len(k) + saveValueSize(v)
	}
	return n
}

func saveValueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + saveValueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		return 3 + saveItemSize(v.Value)
	}
	return 21 // numbers, booleans, null
}
