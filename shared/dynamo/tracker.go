package dynamo

// TrackerTable: the issue-tracker side's application links, issue links,
// requirement excerpts and pending messages. Key design (every pk starts
// with "T#<tenant>#"; "-" is the baseline of a current version):
//
//	applink      pk T#t#APPLINK                       sk <applinkId>
//	link         pk T#t#ISSUE#<issueKey>              sk L#<applinkId>#<space>#<key>#<baseline|->#<relationship>
//	             gsi1pk T#t#REQ#<applinkId>#<space>#<key>#<baseline|->   gsi1sk <issueKey>#<relationship>
//	requirement  pk T#t#REQ#<applinkId>#<space>#<key>#<baseline|->     sk REQ
//	pending      pk T#t#PENDING                       sk <applinkId>#<message fingerprint>
//
// The links of an issue are one Query of its partition; the links of a
// requirement are one Query of gsi1. A link's key holds its whole identity,
// so the same link can never be stored twice. The excerpt is stored once,
// in the requirement item. Key components never contain '#' (the tracker
// package refuses it), so keys cannot collide.

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// TrackerStore keeps the tracker's data in the TrackerTable.
type TrackerStore struct {
	db    API
	table string
}

var (
	_ tracker.ApplinkStore = (*TrackerStore)(nil)
	_ tracker.LinkStore    = (*TrackerStore)(nil)
	_ tracker.PendingStore = (*TrackerStore)(nil)
)

// NewTrackerStore returns a TrackerStore on table.
func NewTrackerStore(db API, table string) *TrackerStore {
	return &TrackerStore{db: db, table: table}
}

// ---------------------------------------------------------------- keys

const tkLinkPrefix = "L#"

func tkApplinkPK(tenant string) string { return tenantPrefix(tenant) + "APPLINK" }
func tkPendingPK(tenant string) string { return tenantPrefix(tenant) + "PENDING" }
func tkIssuePK(tenant, issueKey string) string {
	return tenantPrefix(tenant) + "ISSUE#" + issueKey
}

func tkBaseline(b int) string {
	if b <= 0 {
		return "-"
	}
	return strconv.Itoa(b)
}

func tkRefPart(r tracker.ReqRef) string {
	return r.ApplinkID + "#" + r.SpaceKey + "#" + r.Key + "#" + tkBaseline(r.Baseline)
}

func tkReqPK(tenant string, r tracker.ReqRef) string {
	return tenantPrefix(tenant) + "REQ#" + tkRefPart(r)
}

func tkLinkSK(l tracker.Link) string { return tkLinkPrefix + tkRefPart(l.Req) + "#" + l.Relationship }

func tkKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberS{Value: sk},
	}
}

func tkTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func tkParseTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s) // written by tkTime; zero if absent
	return t
}

// ---------------------------------------------------------------- applinks

type tkApplinkItem struct {
	PK                string `dynamodbav:"pk"`
	SK                string `dynamodbav:"sk"`
	ID                string `dynamodbav:"applinkId"`
	Name              string `dynamodbav:"name"`
	URL               string `dynamodbav:"url"`
	ServiceID         string `dynamodbav:"serviceId"`
	Mode              string `dynamodbav:"mode"`
	Version           int    `dynamodbav:"version"`
	WikiToken         string `dynamodbav:"wikiToken,omitempty"`
	IncomingTokenHash string `dynamodbav:"incomingTokenHash,omitempty"`
	CreatedAt         string `dynamodbav:"createdAt"`
	UpdatedAt         string `dynamodbav:"updatedAt"`
}

func newTkApplinkItem(tenant string, a tracker.Applink) tkApplinkItem {
	return tkApplinkItem{PK: tkApplinkPK(tenant), SK: a.ID, ID: a.ID, Name: a.Name, URL: a.URL, ServiceID: a.ServiceID,
		Mode: string(a.Mode), Version: a.Version, WikiToken: a.WikiToken, IncomingTokenHash: a.IncomingTokenHash,
		CreatedAt: tkTime(a.CreatedAt), UpdatedAt: tkTime(a.UpdatedAt)}
}

func (it tkApplinkItem) entity() tracker.Applink {
	return tracker.Applink{ID: it.ID, Name: it.Name, URL: it.URL, ServiceID: it.ServiceID, Mode: tracker.Mode(it.Mode),
		Version: it.Version, WikiToken: it.WikiToken, IncomingTokenHash: it.IncomingTokenHash,
		CreatedAt: tkParseTime(it.CreatedAt), UpdatedAt: tkParseTime(it.UpdatedAt)}
}

// GetApplink returns an applink of the tenant, or apperr.ErrNotFound.
func (s *TrackerStore) GetApplink(ctx context.Context, tenant, id string) (tracker.Applink, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: tkKey(tkApplinkPK(tenant), id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return tracker.Applink{}, errorf("get applink", err)
	}
	if out.Item == nil {
		return tracker.Applink{}, apperr.ErrNotFound
	}
	var it tkApplinkItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return tracker.Applink{}, errorf("decode applink", err)
	}
	return it.entity(), nil
}

// ListApplinks returns the tenant's applinks ordered by id.
func (s *TrackerStore) ListApplinks(ctx context.Context, tenant string) ([]tracker.Applink, error) {
	var out []tracker.Applink
	err := s.tkQuery(ctx, &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: tkApplinkPK(tenant)},
		},
		ConsistentRead: aws.Bool(true),
	}, func(av map[string]types.AttributeValue) error {
		var it tkApplinkItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return errorf("decode applink", err)
		}
		out = append(out, it.entity())
		return nil
	})
	return out, err
}

// PutApplink creates a (prev nil: apperr.ErrConflict if it exists) or
// replaces prev (apperr.ErrConflict if the stored applink's updatedAt is no
// longer prev's).
func (s *TrackerStore) PutApplink(ctx context.Context, tenant string, a tracker.Applink, prev *tracker.Applink) error {
	item, err := attributevalue.MarshalMap(newTkApplinkItem(tenant, a))
	if err != nil {
		return errorf("encode applink", err)
	}
	cond := expression.AttributeNotExists(expression.Name("pk"))
	if prev != nil {
		cond = expression.Name("updatedAt").Equal(expression.Value(tkTime(prev.UpdatedAt)))
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return errorf("build applink condition", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: item,
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	return translate(err, "put applink "+a.ID)
}

// ---------------------------------------------------------------- links

type tkLinkItem struct {
	PK           string `dynamodbav:"pk"`
	SK           string `dynamodbav:"sk"`
	GSI1PK       string `dynamodbav:"gsi1pk"`
	GSI1SK       string `dynamodbav:"gsi1sk"`
	IssueKey     string `dynamodbav:"issueKey"`
	ApplinkID    string `dynamodbav:"applinkId"`
	SpaceKey     string `dynamodbav:"spaceKey"`
	Key          string `dynamodbav:"key"`
	Baseline     int    `dynamodbav:"baseline"`
	Relationship string `dynamodbav:"relationship"`
	CreatedAt    string `dynamodbav:"createdAt"`
}

func newTkLinkItem(tenant string, l tracker.Link, now time.Time) tkLinkItem {
	return tkLinkItem{PK: tkIssuePK(tenant, l.IssueKey), SK: tkLinkSK(l), GSI1PK: tkReqPK(tenant, l.Req),
		GSI1SK: l.IssueKey + "#" + l.Relationship, IssueKey: l.IssueKey, ApplinkID: l.Req.ApplinkID,
		SpaceKey: l.Req.SpaceKey, Key: l.Req.Key, Baseline: l.Req.Baseline, Relationship: l.Relationship, CreatedAt: tkTime(now)}
}

func (it tkLinkItem) entity() tracker.Link {
	return tracker.Link{IssueKey: it.IssueKey, Relationship: it.Relationship,
		Req: tracker.ReqRef{ApplinkID: it.ApplinkID, SpaceKey: it.SpaceKey, Key: it.Key, Baseline: it.Baseline}}
}

func tkDecodeLinks(out *[]tracker.Link) func(map[string]types.AttributeValue) error {
	return func(av map[string]types.AttributeValue) error {
		var it tkLinkItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return errorf("decode link", err)
		}
		*out = append(*out, it.entity())
		return nil
	}
}

// IssueLinks returns the links of an issue: one Query of its partition.
func (s *TrackerStore) IssueLinks(ctx context.Context, tenant, issueKey string) ([]tracker.Link, error) {
	var out []tracker.Link
	err := s.tkQuery(ctx, &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :l)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: tkIssuePK(tenant, issueKey)},
			":l":  &types.AttributeValueMemberS{Value: tkLinkPrefix},
		},
		ConsistentRead: aws.Bool(true),
	}, tkDecodeLinks(&out))
	return out, err
}

// RequirementLinks returns every link of a requirement: one Query of gsi1
// (eventually consistent, as every GSI read).
func (s *TrackerStore) RequirementLinks(ctx context.Context, tenant string, ref tracker.ReqRef) ([]tracker.Link, error) {
	var out []tracker.Link
	err := s.tkQuery(ctx, &dynamodb.QueryInput{
		TableName:              &s.table,
		IndexName:              aws.String("gsi1"),
		KeyConditionExpression: aws.String("gsi1pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: tkReqPK(tenant, ref)},
		},
	}, tkDecodeLinks(&out))
	return out, err
}

// PutLinks writes links with ⌈n/25⌉ BatchWriteItem calls; a link written
// again stays one item.
func (s *TrackerStore) PutLinks(ctx context.Context, tenant string, links []tracker.Link) error {
	now := time.Now()
	writes := make([]types.WriteRequest, 0, len(links))
	seen := map[string]bool{}
	for _, l := range links {
		it := newTkLinkItem(tenant, l, now)
		if seen[it.PK+"\x00"+it.SK] {
			continue // BatchWriteItem refuses the same key twice
		}
		seen[it.PK+"\x00"+it.SK] = true
		av, err := attributevalue.MarshalMap(it)
		if err != nil {
			return errorf("encode link", err)
		}
		writes = append(writes, types.WriteRequest{PutRequest: &types.PutRequest{Item: av}})
	}
	return tkWrap(BatchWrite(ctx, s.db, s.table, writes), "put links")
}

// DeleteLinks removes links; absent ones are not an error.
func (s *TrackerStore) DeleteLinks(ctx context.Context, tenant string, links []tracker.Link) error {
	keys := make([]map[string]types.AttributeValue, 0, len(links))
	for _, l := range links {
		keys = append(keys, tkKey(tkIssuePK(tenant, l.IssueKey), tkLinkSK(l)))
	}
	return tkWrap(BatchWrite(ctx, s.db, s.table, tkDeletes(keys)), "delete links")
}

// ---------------------------------------------------------------- requirements

const tkReqSK = "REQ"

type tkReqItem struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	ApplinkID   string `dynamodbav:"applinkId"`
	SpaceKey    string `dynamodbav:"spaceKey"`
	Key         string `dynamodbav:"key"`
	Baseline    int    `dynamodbav:"baseline"`
	HTMLExcerpt string `dynamodbav:"htmlExcerpt"`
	GenericURL  string `dynamodbav:"genericUrl"`
	Deleted     bool   `dynamodbav:"deleted"`
	UpdatedAt   string `dynamodbav:"updatedAt"`
}

func newTkReqItem(tenant string, r tracker.Requirement) tkReqItem {
	return tkReqItem{PK: tkReqPK(tenant, r.Ref), SK: tkReqSK, ApplinkID: r.Ref.ApplinkID, SpaceKey: r.Ref.SpaceKey,
		Key: r.Ref.Key, Baseline: r.Ref.Baseline, HTMLExcerpt: r.HTMLExcerpt, GenericURL: r.GenericURL,
		Deleted: r.Deleted, UpdatedAt: tkTime(r.UpdatedAt)}
}

func (it tkReqItem) entity() tracker.Requirement {
	return tracker.Requirement{
		Ref:         tracker.ReqRef{ApplinkID: it.ApplinkID, SpaceKey: it.SpaceKey, Key: it.Key, Baseline: it.Baseline},
		HTMLExcerpt: it.HTMLExcerpt, GenericURL: it.GenericURL, Deleted: it.Deleted, UpdatedAt: tkParseTime(it.UpdatedAt),
	}
}

// GetRequirements reads the requirements among refs with strongly
// consistent BatchGetItem calls (100 keys each); absent ones are missing
// from the map.
func (s *TrackerStore) GetRequirements(ctx context.Context, tenant string, refs []tracker.ReqRef) (map[tracker.ReqRef]tracker.Requirement, error) {
	seen := map[tracker.ReqRef]bool{}
	keys := make([]map[string]types.AttributeValue, 0, len(refs))
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			keys = append(keys, tkKey(tkReqPK(tenant, r), tkReqSK))
		}
	}
	out := make(map[tracker.ReqRef]tracker.Requirement, len(keys))
	for chunk := range slices.Chunk(keys, 100) {
		items, err := s.tkBatchGet(ctx, chunk)
		if err != nil {
			return nil, err
		}
		for _, av := range items {
			var it tkReqItem
			if err := attributevalue.UnmarshalMap(av, &it); err != nil {
				return nil, errorf("decode requirement", err)
			}
			r := it.entity()
			out[r.Ref] = r
		}
	}
	return out, nil
}

// tkBatchGet reads at most 100 keys consistently, retrying unprocessed
// keys with backoff.
func (s *TrackerStore) tkBatchGet(ctx context.Context, keys []map[string]types.AttributeValue) ([]map[string]types.AttributeValue, error) {
	var items []map[string]types.AttributeValue
	req := map[string]types.KeysAndAttributes{s.table: {Keys: keys, ConsistentRead: aws.Bool(true)}}
	for attempt := 0; len(req) > 0 && len(req[s.table].Keys) > 0; attempt++ {
		if attempt > 0 {
			if attempt > 10 {
				return nil, fmt.Errorf("batch get requirements: %d keys still unprocessed after retries", len(req[s.table].Keys))
			}
			if err := backoff(ctx, attempt); err != nil {
				return nil, err
			}
		}
		out, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: req})
		if err != nil {
			return nil, errorf("batch get requirements", err)
		}
		items = append(items, out.Responses[s.table]...)
		req = out.UnprocessedKeys
	}
	return items, nil
}

// PutRequirements creates or replaces requirements.
func (s *TrackerStore) PutRequirements(ctx context.Context, tenant string, reqs []tracker.Requirement) error {
	byPK := map[string]int{}
	writes := make([]types.WriteRequest, 0, len(reqs))
	for _, r := range reqs {
		av, err := attributevalue.MarshalMap(newTkReqItem(tenant, r))
		if err != nil {
			return errorf("encode requirement", err)
		}
		w := types.WriteRequest{PutRequest: &types.PutRequest{Item: av}}
		if i, ok := byPK[tkReqPK(tenant, r.Ref)]; ok {
			writes[i] = w // the last one wins, as if written in order
			continue
		}
		byPK[tkReqPK(tenant, r.Ref)] = len(writes)
		writes = append(writes, w)
	}
	return tkWrap(BatchWrite(ctx, s.db, s.table, writes), "put requirements")
}

// DeleteRequirement removes a requirement; absent is not an error.
func (s *TrackerStore) DeleteRequirement(ctx context.Context, tenant string, ref tracker.ReqRef) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: &s.table, Key: tkKey(tkReqPK(tenant, ref), tkReqSK)})
	return translate(err, "delete requirement")
}

// ---------------------------------------------------------------- pending messages

type tkPendingItem struct {
	PK             string  `dynamodbav:"pk"`
	SK             string  `dynamodbav:"sk"`
	ApplinkID      string  `dynamodbav:"applinkId"`
	ReceivedAt     int64   `dynamodbav:"receivedAt"` // Unix nanoseconds
	Index          int     `dynamodbav:"index"`
	ID             *int64  `dynamodbav:"id,omitempty"`
	Type           string  `dynamodbav:"type"`
	AuthorKey      string  `dynamodbav:"authorKey,omitempty"`
	AuthorName     string  `dynamodbav:"authorName,omitempty"`
	SpaceKey       string  `dynamodbav:"spaceKey"`
	Key            string  `dynamodbav:"key"`
	Baseline       int     `dynamodbav:"baseline"`
	Estate         string  `dynamodbav:"estate,omitempty"`
	ObjectKey      string  `dynamodbav:"objectKey,omitempty"`
	Relationship   string  `dynamodbav:"relationship,omitempty"`
	NewHTMLExcerpt *string `dynamodbav:"newHtmlExcerpt,omitempty"`
	NewSpaceKey    string  `dynamodbav:"newSpaceKey,omitempty"`
	NewKey         string  `dynamodbav:"newKey,omitempty"`
	NewBaseline    *int    `dynamodbav:"newBaseline,omitempty"`
	NewURL         *string `dynamodbav:"newUrl,omitempty"`
}

func tkPendingSK(p tracker.Pending) string { return p.ApplinkID + "#" + p.Message.Fingerprint() }

func newTkPendingItem(tenant string, p tracker.Pending) tkPendingItem {
	m := p.Message
	return tkPendingItem{PK: tkPendingPK(tenant), SK: tkPendingSK(p), ApplinkID: p.ApplinkID,
		ReceivedAt: p.ReceivedAt.UnixNano(), Index: p.Index, ID: m.ID, Type: string(m.Type),
		AuthorKey: m.AuthorKey, AuthorName: m.AuthorName, SpaceKey: m.SpaceKey, Key: m.Key, Baseline: m.Baseline,
		Estate: m.Estate, ObjectKey: m.ObjectKey, Relationship: m.Relationship, NewHTMLExcerpt: m.NewHTMLExcerpt,
		NewSpaceKey: m.NewSpaceKey, NewKey: m.NewKey, NewBaseline: m.NewBaseline, NewURL: m.NewURL}
}

func (it tkPendingItem) entity() tracker.Pending {
	return tracker.Pending{ApplinkID: it.ApplinkID, ReceivedAt: time.Unix(0, it.ReceivedAt).UTC(), Index: it.Index,
		Message: tracker.Message{ID: it.ID, Type: tracker.MessageType(it.Type), AuthorKey: it.AuthorKey,
			AuthorName: it.AuthorName, SpaceKey: it.SpaceKey, Key: it.Key, Baseline: it.Baseline, Estate: it.Estate,
			ObjectKey: it.ObjectKey, Relationship: it.Relationship, NewHTMLExcerpt: it.NewHTMLExcerpt,
			NewSpaceKey: it.NewSpaceKey, NewKey: it.NewKey, NewBaseline: it.NewBaseline, NewURL: it.NewURL}}
}

// AddPending stores messages; one with the content of a stored message (a
// retried delivery) replaces it, taking its new place in the order.
func (s *TrackerStore) AddPending(ctx context.Context, tenant string, ps []tracker.Pending) error {
	byKey := map[string]int{}
	writes := make([]types.WriteRequest, 0, len(ps))
	for _, p := range ps {
		it := newTkPendingItem(tenant, p)
		av, err := attributevalue.MarshalMap(it)
		if err != nil {
			return errorf("encode pending message", err)
		}
		w := types.WriteRequest{PutRequest: &types.PutRequest{Item: av}}
		if i, ok := byKey[it.SK]; ok {
			writes[i] = w
			continue
		}
		byKey[it.SK] = len(writes)
		writes = append(writes, w)
	}
	return tkWrap(BatchWrite(ctx, s.db, s.table, writes), "put pending messages")
}

// ListPending returns the tenant's pending messages in the order received.
func (s *TrackerStore) ListPending(ctx context.Context, tenant string) ([]tracker.Pending, error) {
	var out []tracker.Pending
	err := s.tkQuery(ctx, &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: tkPendingPK(tenant)},
		},
		ConsistentRead: aws.Bool(true),
	}, func(av map[string]types.AttributeValue) error {
		var it tkPendingItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return errorf("decode pending message", err)
		}
		out = append(out, it.entity())
		return nil
	})
	slices.SortFunc(out, func(a, b tracker.Pending) int {
		return cmp.Or(a.ReceivedAt.Compare(b.ReceivedAt), cmp.Compare(a.Index, b.Index))
	})
	return out, err
}

// DeletePending removes pending messages; absent ones are not an error.
func (s *TrackerStore) DeletePending(ctx context.Context, tenant string, ps []tracker.Pending) error {
	keys := make([]map[string]types.AttributeValue, 0, len(ps))
	for _, p := range ps {
		keys = append(keys, tkKey(tkPendingPK(tenant), tkPendingSK(p)))
	}
	return tkWrap(BatchWrite(ctx, s.db, s.table, tkDeletes(keys)), "delete pending messages")
}

// ---------------------------------------------------------------- helpers

// tkQuery pages through a Query, calling fn for each item.
func (s *TrackerStore) tkQuery(ctx context.Context, in *dynamodb.QueryInput, fn func(map[string]types.AttributeValue) error) error {
	p := dynamodb.NewQueryPaginator(s.db, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return errorf("query tracker table", err)
		}
		for _, av := range page.Items {
			if err := fn(av); err != nil {
				return err
			}
		}
	}
	return nil
}

// tkDeletes turns keys into delete requests, without duplicates
// (BatchWriteItem refuses the same key twice).
func tkDeletes(keys []map[string]types.AttributeValue) []types.WriteRequest {
	seen := map[string]bool{}
	out := make([]types.WriteRequest, 0, len(keys))
	for _, k := range keys {
		id := k["pk"].(*types.AttributeValueMemberS).Value + "\x00" + k["sk"].(*types.AttributeValueMemberS).Value
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: k}})
	}
	return out
}

// tkWrap adds what was being done to a BatchWrite error.
func tkWrap(err error, what string) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", what, err)
}
