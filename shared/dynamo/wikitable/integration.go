package wikitable

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// IntegrationStore keeps integration descriptors in the WikiTable
// (pk T#t#INTEG, sk <serviceId>) and applies the tracker's links callback
// to requirement rows.
type IntegrationStore struct {
	db    dynamo.API
	table string
	reqs  *RequirementStore
}

var (
	_ integration.Store     = (*IntegrationStore)(nil)
	_ integration.LinkStore = (*IntegrationStore)(nil)
)

// NewIntegrationStore returns an IntegrationStore on table.
func NewIntegrationStore(db dynamo.API, table string) *IntegrationStore {
	return &IntegrationStore{db: db, table: table, reqs: NewRequirementStore(db, table)}
}

// integrationItem is the DynamoDB shape of an integration. The descriptor fields
// and the credentials are written by Create/Update (guarded by rev); the
// sync bookkeeping (sweepFrom, lastErrorMailAt, lease) only by their own
// conditional updates, so neither side overwrites the other.
type integrationItem struct {
	PK           string `dynamodbav:"pk"`
	SK           string `dynamodbav:"sk"`
	ServiceID    string `dynamodbav:"serviceId"`
	ApplinkID    string `dynamodbav:"applinkId"`
	Label        string `dynamodbav:"label"`
	DisplayURL   string `dynamodbav:"displayUrl"`
	RPCURL       string `dynamodbav:"rpcUrl"`
	Endpoint     string `dynamodbav:"endpoint"`
	Email        string `dynamodbav:"sendErrorsToEmail"`
	Throttle     int    `dynamodbav:"throttleMinutes"`
	UserKey      string `dynamodbav:"userKey"`
	Username     string `dynamodbav:"username"`
	Version      int    `dynamodbav:"version"`
	Status       string `dynamodbav:"status"`
	Token        string `dynamodbav:"token"`
	IncomingHash string `dynamodbav:"incomingTokenHash"`
	Rev          int64  `dynamodbav:"rev"`
	CreatedAt    string `dynamodbav:"createdAt"`
	UpdatedAt    string `dynamodbav:"updatedAt"`
	SweepFrom    string `dynamodbav:"sweepFrom,omitempty"`
	LastMail     int64  `dynamodbav:"lastErrorMailAt,omitempty"` // unix ms
	LeaseOwner   string `dynamodbav:"leaseOwner,omitempty"`
	LeaseUntil   int64  `dynamodbav:"leaseUntil,omitempty"` // unix ms
	// PendingRemovals is counted by page saves (WikiStore.AddPendingRemovals)
	// and reset by a version-5 reconcile; read-only here.
	PendingRemovals int `dynamodbav:"pendingRemovals,omitempty"`
}

func integrationPK(tenant string) string { return dynamo.TenantPrefix(tenant) + "INTEG" }

func integrationKey(tenant, serviceID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: integrationPK(tenant)},
		"sk": &types.AttributeValueMemberS{Value: serviceID},
	}
}

func integrationNewItem(tenant string, d *integration.Descriptor) integrationItem {
	it := integrationItem{
		PK: integrationPK(tenant), SK: d.ServiceID, ServiceID: d.ServiceID, ApplinkID: d.ApplinkID, Label: d.Label,
		DisplayURL: d.DisplayURL, RPCURL: d.RPCURL, Endpoint: d.Endpoint, Email: d.SendErrorsToEmail,
		Throttle: d.SendErrorsToEmailThrottle, UserKey: d.UserKey, Username: d.Username, Version: d.Version,
		Status: string(d.Status), Token: d.Token, IncomingHash: d.IncomingTokenHash, Rev: d.Rev,
		CreatedAt: dynamo.Time(d.CreatedAt), UpdatedAt: dynamo.Time(d.UpdatedAt), SweepFrom: d.SweepFrom,
	}
	if !d.LastErrorMail.IsZero() {
		it.LastMail = d.LastErrorMail.UnixMilli()
	}
	return it
}

func (it *integrationItem) entity() *integration.Descriptor {
	created := dynamo.ParseTime(it.CreatedAt)
	updated := dynamo.ParseTime(it.UpdatedAt)
	d := &integration.Descriptor{
		ServiceID: it.ServiceID, ApplinkID: it.ApplinkID, Label: it.Label, DisplayURL: it.DisplayURL,
		RPCURL: it.RPCURL, Endpoint: it.Endpoint, SendErrorsToEmail: it.Email, SendErrorsToEmailThrottle: it.Throttle,
		UserKey: it.UserKey, Username: it.Username, Version: it.Version, Status: integration.Status(it.Status),
		Token: it.Token, IncomingTokenHash: it.IncomingHash, SweepFrom: it.SweepFrom, Rev: it.Rev,
		CreatedAt: created, UpdatedAt: updated, PendingRemovals: it.PendingRemovals,
	}
	if it.LastMail > 0 {
		d.LastErrorMail = time.UnixMilli(it.LastMail).UTC()
	}
	return d
}

func integrationDecode(av map[string]types.AttributeValue) (*integration.Descriptor, error) {
	var it integrationItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return nil, dynamo.Errorf("decode integration", err)
	}
	return it.entity(), nil
}

// List returns the tenant's integrations ordered by serviceId.
func (s *IntegrationStore) List(ctx context.Context, tenant string) ([]*integration.Descriptor, error) {
	return dynamo.QueryAll(ctx, s.db, &dynamodb.QueryInput{
		TableName: &s.table, KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: integrationPK(tenant)}},
	}, "list integrations", integrationDecode)
}

// Get returns one integration (strongly consistent), or apperr.ErrNotFound.
func (s *IntegrationStore) Get(ctx context.Context, tenant, serviceID string) (*integration.Descriptor, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: integrationKey(tenant, serviceID), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, dynamo.Errorf("get integration", err)
	}
	if out.Item == nil {
		return nil, apperr.ErrNotFound
	}
	return integrationDecode(out.Item)
}

// Create stores a new integration with rev 1; apperr.ErrConflict when the
// serviceId is taken.
func (s *IntegrationStore) Create(ctx context.Context, tenant string, d *integration.Descriptor) error {
	it := integrationNewItem(tenant, d)
	it.Rev = 1
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return dynamo.Errorf("encode integration", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: av, ConditionExpression: aws.String("attribute_not_exists(pk)"),
	})
	if err := dynamo.Translate(err, "create integration"); err != nil {
		return err
	}
	d.Rev = 1
	return nil
}

// Update writes the descriptor fields and credentials when the stored rev
// is d.Rev, and sets d.Rev to the next one; apperr.ErrNotFound when the
// integration is absent, apperr.ErrConflict when it changed concurrently.
func (s *IntegrationStore) Update(ctx context.Context, tenant string, d *integration.Descriptor) error {
	it := integrationNewItem(tenant, d)
	set := func(u expression.UpdateBuilder, name string, v any) expression.UpdateBuilder {
		return u.Set(expression.Name(name), expression.Value(v))
	}
	u := expression.UpdateBuilder{}
	u = set(u, "applinkId", it.ApplinkID)
	u = set(u, "label", it.Label)
	u = set(u, "displayUrl", it.DisplayURL)
	u = set(u, "rpcUrl", it.RPCURL)
	u = set(u, "endpoint", it.Endpoint)
	u = set(u, "sendErrorsToEmail", it.Email)
	u = set(u, "throttleMinutes", it.Throttle)
	u = set(u, "userKey", it.UserKey)
	u = set(u, "username", it.Username)
	u = set(u, "version", it.Version)
	u = set(u, "status", it.Status)
	u = set(u, "token", it.Token)
	u = set(u, "incomingTokenHash", it.IncomingHash)
	u = set(u, "updatedAt", it.UpdatedAt)
	u = set(u, "rev", d.Rev+1)
	cond := expression.AttributeExists(expression.Name("pk")).And(expression.Name("rev").Equal(expression.Value(d.Rev)))
	expr, err := expression.NewBuilder().WithUpdate(u).WithCondition(cond).Build()
	if err != nil {
		return fmt.Errorf("build integration update: %w", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: integrationKey(tenant, d.ServiceID), UpdateExpression: expr.Update(),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if _, gerr := s.Get(ctx, tenant, d.ServiceID); errors.Is(gerr, apperr.ErrNotFound) {
			return apperr.ErrNotFound
		}
	}
	if err := dynamo.Translate(err, "update integration"); err != nil {
		return err
	}
	d.Rev++
	return nil
}

// Delete removes an integration item (descriptor, credentials, sync
// bookkeeping and reconcile flag are attributes of it) on condition that it
// exists; apperr.ErrNotFound otherwise.
func (s *IntegrationStore) Delete(ctx context.Context, tenant, serviceID string) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.table, Key: integrationKey(tenant, serviceID), ConditionExpression: aws.String("attribute_exists(pk)"),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return apperr.ErrNotFound
	}
	return dynamo.Translate(err, "delete integration")
}

// integrationConditional runs a conditional update and reports whether the
// condition held.
func (s *IntegrationStore) integrationConditional(ctx context.Context, tenant, serviceID string, u expression.UpdateBuilder, cond expression.ConditionBuilder, what string) (bool, error) {
	expr, err := expression.NewBuilder().WithUpdate(u).WithCondition(cond).Build()
	if err != nil {
		return false, fmt.Errorf("build %s: %w", what, err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: integrationKey(tenant, serviceID), UpdateExpression: expr.Update(),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return false, nil
	}
	if err != nil {
		return false, dynamo.Errorf(what, err)
	}
	return true, nil
}

// ClaimErrorMail records now as the last error e-mail time when the
// previous one is at least every old; of concurrent callers one wins.
func (s *IntegrationStore) ClaimErrorMail(ctx context.Context, tenant, serviceID string, now time.Time, every time.Duration) (bool, error) {
	name := expression.Name("lastErrorMailAt")
	cond := expression.AttributeExists(expression.Name("pk")).And(
		expression.AttributeNotExists(name).Or(name.LessThanEqual(expression.Value(now.Add(-every).UnixMilli()))))
	return s.integrationConditional(ctx, tenant, serviceID, expression.Set(name, expression.Value(now.UnixMilli())), cond, "claim the error e-mail")
}

// AcquireLease makes owner the only sync run delivering to the integration
// until until, unless another owner holds an unexpired lease.
func (s *IntegrationStore) AcquireLease(ctx context.Context, tenant, serviceID, owner string, now, until time.Time) (bool, error) {
	o, u := expression.Name("leaseOwner"), expression.Name("leaseUntil")
	cond := expression.AttributeExists(expression.Name("pk")).And(expression.Or(
		expression.AttributeNotExists(u), u.LessThan(expression.Value(now.UnixMilli())), o.Equal(expression.Value(owner))))
	upd := expression.Set(o, expression.Value(owner)).Set(u, expression.Value(until.UnixMilli()))
	return s.integrationConditional(ctx, tenant, serviceID, upd, cond, "lease integration")
}

// ReleaseLease ends owner's lease; nothing happens when owner does not
// hold it.
func (s *IntegrationStore) ReleaseLease(ctx context.Context, tenant, serviceID, owner string) error {
	o := expression.Name("leaseOwner")
	_, err := s.integrationConditional(ctx, tenant, serviceID, expression.Remove(o).Remove(expression.Name("leaseUntil")),
		o.Equal(expression.Value(owner)), "release the integration lease")
	return err
}

// SetSweepFrom stores where the next sweep of the integration's outbox
// starts (nothing happens when the integration is gone).
func (s *IntegrationStore) SetSweepFrom(ctx context.Context, tenant, serviceID, from string) error {
	_, err := s.integrationConditional(ctx, tenant, serviceID, expression.Set(expression.Name("sweepFrom"), expression.Value(from)),
		expression.AttributeExists(expression.Name("pk")), "set the sweep mark")
	return err
}

// ReplaceIssueLinks applies the links callback of serviceID: it reads the
// named requirement rows (⌈n/100⌉ BatchGetItem), answers a not-found error
// naming the first that does not exist without writing anything, replaces
// their links of serviceID (integration.ReplaceLinks), answers TooLarge
// without writing anything when a changed row would pass the size a row
// may take, and writes the changes with their jira search index changes
// (the same items the page indexing writes: only for current ACTIVE rows):
// index puts (BatchWriteItem calls of 25), then the rows' issue links
// (TransactWriteItems of up to 100 conditional updates), then index
// deletes. Each row update sets only the issue links, on condition that
// the links and the status are still those read: a page save in between
// keeps its text, excerpt and properties, and a change of the links or the
// status makes the callback read the rows again and redo its work (at most
// integrationLinkAttempts times, then Conflict). Every step is idempotent, and a
// failure half way leaves the index a superset of the rows.
func (s *IntegrationStore) ReplaceIssueLinks(ctx context.Context, tenant, serviceID string, sets []integration.LinkSet) (int, error) {
	total := 0 // rows updated by every round: a round skips those done
	for attempt := 1; ; attempt++ {
		n, err := s.integrationReplaceLinks(ctx, tenant, serviceID, sets)
		total += n
		if !errors.Is(err, errRowChanged) {
			if err != nil {
				return 0, err
			}
			return total, nil
		}
		if attempt == integrationLinkAttempts {
			return 0, apperr.Wrap(apperr.Conflictf("requirements changed %d times while their issue links were written; send the links again", attempt), err)
		}
		if err := dynamo.Backoff(ctx, attempt); err != nil {
			return 0, err
		}
	}
}

// integrationLinkAttempts bounds the rounds of ReplaceIssueLinks.
const integrationLinkAttempts = 4

// errRowChanged: a row changed between the links callback's read and its
// conditional write.
var errRowChanged = errors.New("a requirement changed since it was read")

// integrationReplaceLinks is one round of ReplaceIssueLinks.
func (s *IntegrationStore) integrationReplaceLinks(ctx context.Context, tenant, serviceID string, sets []integration.LinkSet) (int, error) {
	ids := make([]requirement.ID, len(sets))
	for i, set := range sets {
		ids[i] = requirement.ID{SpaceKey: set.SpaceKey, Key: set.Key, Baseline: set.Baseline}
	}
	rows, err := s.reqs.GetMany(ctx, tenant, ids)
	if err != nil {
		return 0, err
	}
	for _, id := range ids {
		if r := rows[requirement.NewID(id.SpaceKey, id.Key, id.Baseline)]; r == nil || r.Status == "" {
			return 0, notFound(id)
		}
	}
	// One unit per changed row: its conditional update and the index
	// deletes to send once the update is committed.
	type unit struct {
		update  types.TransactWriteItem
		bytes   int
		deletes []types.WriteRequest
		// page is the origin page of a current row: its transaction also
		// checks that no save holds the page's lease (leaseFree), since a
		// save writes back whole rows it read before.
		page string
	}
	var units []unit
	var indexPuts []types.WriteRequest
	for i, set := range sets {
		r := rows[requirement.NewID(ids[i].SpaceKey, ids[i].Key, ids[i].Baseline)]
		old := *r // ReplaceLinks gives r a new Issues slice; old keeps the previous one
		if !integration.ReplaceLinks(r, serviceID, set.Links, set.Whole) {
			continue
		}
		before, after := newRequirementItem(tenant, &old), newRequirementItem(tenant, r)
		av, err := after.marshal()
		if err != nil {
			return 0, err
		}
		if size := saveItemSize(av); size > saveMaxRow {
			return 0, apperr.TooLargef("requirement %s/%s cannot take these links: with them it takes %d bytes, "+
				"over the %d bytes a requirement may take", r.SpaceKey, r.Key, size, saveMaxRow)
		}
		up, err := s.integrationLinksUpdate(before, after)
		if err != nil {
			return 0, err
		}
		puts, deletes := indexDiff(tenant, &old, r)
		// The update carries the links before (its condition) and after:
		// at most the two rows' sizes.
		oldAV, err := before.marshal()
		if err != nil {
			return 0, err
		}
		page := ""
		if old.Baseline == 0 {
			page = old.Origin.PageID
		}
		units = append(units, unit{update: up, bytes: saveItemSize(oldAV) + saveItemSize(av), deletes: deletes, page: page})
		indexPuts = append(indexPuts, puts...)
	}
	if len(units) == 0 {
		return 0, nil
	}
	if err := dynamo.BatchWrite(ctx, s.db, s.table, indexPuts); err != nil {
		return 0, fmt.Errorf("write search index items: %w", err)
	}
	// Transactions of at most saveTxItems elements (updates and the lease
	// checks of their pages) and saveTxBytes bytes, one after the other. A
	// page whose lease is held counts as a changed row: a save is writing
	// it, from rows read before these links. The index deletes of the rows
	// committed are sent even when a later transaction finds a row changed:
	// the next round reads those rows as done and would not send them.
	now := time.Now()
	done, changed := 0, error(nil)
	for start := 0; start < len(units) && changed == nil; {
		end, bytes, pages := start, 0, map[string]bool{}
		for end < len(units) && (end == start || bytes+units[end].bytes <= saveTxBytes) {
			more := 0
			if p := units[end].page; p != "" && !pages[p] {
				more = 1
			}
			if end > start && end-start+len(pages)+1+more > saveTxItems {
				break
			}
			if p := units[end].page; p != "" {
				pages[p] = true
			}
			bytes += units[end].bytes
			end++
		}
		items := make([]types.TransactWriteItem, 0, end-start+len(pages))
		for _, u := range units[start:end] {
			items = append(items, u.update)
		}
		for _, p := range slices.Sorted(maps.Keys(pages)) {
			items = append(items, leaseFree(s.table, tenant, p, now))
		}
		_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		switch {
		case dynamo.TxConditionFailed(err):
			changed = fmt.Errorf("%w: %w", errRowChanged, err)
		case err != nil:
			return 0, dynamo.Translate(err, "write issue links")
		default:
			done, start = end, end
		}
	}
	var deletes []types.WriteRequest
	for _, u := range units[:done] {
		deletes = append(deletes, u.deletes...)
	}
	if err := dynamo.BatchWrite(ctx, s.db, s.table, deletes); err != nil {
		return 0, fmt.Errorf("delete search index items: %w", err)
	}
	return done, changed
}

// integrationLinksUpdate sets a row's issue links from before's to after's, on
// condition that its links and status are still before's.
func (s *IntegrationStore) integrationLinksUpdate(before, after requirementItem) (types.TransactWriteItem, error) {
	cond := expression.Name("status").Equal(expression.Value(before.Status))
	return rowListSwap(s.table, before, cond, "issues", before.Issues, after.Issues)
}
