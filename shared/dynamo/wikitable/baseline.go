package wikitable

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/keyrange"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// BaselineStore implements baseline.Store and baseline.Source on the
// WikiTable. A baseline is the record pk T#t#S#<SPACE>, sk BL#<n8>; its
// archived copies are requirement rows in partition T#t#S#<SPACE>#B#<n8>
// (written with RequirementStore.Put, so they carry the gsi1 keys of
// archived copies); the number counter is pk T#t#S#<SPACE>, sk BLCOUNTER.
//
// Visibility rule: an archived copy exists for readers only when the
// record of its baseline exists. Copies are written before the record and
// deleted after it, so a failed or half-done freeze or delete leaves
// nothing visible. While a freeze runs, its partition also holds a mark
// (sk FREEZE) that the record's transaction deletes. docs/baselines.md has
// the details.
type BaselineStore struct {
	db    dynamo.API
	table string
	reqs  *RequirementStore
	wiki  *WikiStore
	// ReadPageSize is the Limit of each Query that reads a space's rows.
	// DynamoDB Local slows down sharply on 1 MB pages of large items, so
	// the default is a few hundred rows.
	ReadPageSize int32
	// ReadSegments is how many key ranges of a space are read in parallel.
	ReadSegments int
}

var (
	_ baseline.Store  = (*BaselineStore)(nil)
	_ baseline.Source = (*BaselineStore)(nil)
)

// NewBaselineStore returns a BaselineStore on table.
func NewBaselineStore(db dynamo.API, table string) *BaselineStore {
	return &BaselineStore{db: db, table: table, reqs: NewRequirementStore(db, table), wiki: NewWikiStore(db, table), ReadPageSize: 500, ReadSegments: 4}
}

// baselineCounterSK is the sort key of a space's baseline number counter.
const baselineCounterSK = "BLCOUNTER"

// baselineMaxPages is the most bytes the compressed page summary may take in a
// baseline record (items are limited to 400 KB); a larger summary is not
// stored and Pages computes it from the copies instead.
const baselineMaxPages = 256 << 10

func baselineSK(n int) string { return fmt.Sprintf("BL#%08d", n) }

func baselineKey(tenant, space string, n int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: spacePK(tenant, space)},
		"sk": &types.AttributeValueMemberS{Value: baselineSK(n)},
	}
}

// baselineItem is the DynamoDB shape of a baseline record.
type baselineItem struct {
	PK        string `dynamodbav:"pk"`
	SK        string `dynamodbav:"sk"`
	Space     string `dynamodbav:"spaceKey"`
	Number    int    `dynamodbav:"number"`
	Name      string `dynamodbav:"name"`
	Label     string `dynamodbav:"label"`
	CEO       string `dynamodbav:"ceo"`
	Instant   bool   `dynamodbav:"instant,omitempty"`
	CreatedAt string `dynamodbav:"createdAt"`
	CreatedBy string `dynamodbav:"createdBy"`
	Count     int    `dynamodbav:"count"`
	// Pages is the gzip-compressed JSON page summary; absent when too large.
	Pages []byte `dynamodbav:"pages,omitempty"`
}

// baselinePage is one page of the compressed summary.
type baselinePage struct {
	ID    string `json:"i"`
	Title string `json:"t"`
	Count int    `json:"c"`
}

// baselineMeta is every record attribute but the page summary.
var baselineMeta = expression.NamesList(expression.Name("spaceKey"), expression.Name("number"), expression.Name("name"),
	expression.Name("label"), expression.Name("ceo"), expression.Name("instant"), expression.Name("createdAt"),
	expression.Name("createdBy"), expression.Name("count"))

func baselineNewItem(tenant string, b *baseline.Baseline, pages []baseline.PageCount) (baselineItem, error) {
	it := baselineItem{
		PK: spacePK(tenant, b.SpaceKey), SK: baselineSK(b.Number), Space: b.SpaceKey, Number: b.Number, Name: b.Name,
		Label: b.Label, CEO: b.CEO, Instant: b.Instant, CreatedAt: dynamo.Time(b.CreatedAt),
		CreatedBy: b.CreatedBy, Count: b.Count,
	}
	if pages == nil {
		return it, nil
	}
	list := make([]baselinePage, 0, len(pages))
	for _, p := range pages {
		list = append(list, baselinePage{ID: p.PageID, Title: p.Title, Count: p.Count})
	}
	raw, err := json.Marshal(list)
	if err != nil {
		return it, fmt.Errorf("encode page summary: %w", err)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(raw); err != nil {
		return it, fmt.Errorf("compress page summary: %w", err)
	}
	if err := zw.Close(); err != nil {
		return it, fmt.Errorf("compress page summary: %w", err)
	}
	if buf.Len() <= baselineMaxPages {
		it.Pages = buf.Bytes()
	}
	return it, nil
}

func (it *baselineItem) entity() *baseline.Baseline {
	created := dynamo.ParseTime(it.CreatedAt)
	return &baseline.Baseline{
		SpaceKey: it.Space, Number: it.Number, Name: it.Name, Label: it.Label, CEO: it.CEO, Instant: it.Instant,
		CreatedAt: created, CreatedBy: it.CreatedBy, Count: it.Count, Status: baseline.StatusComplete,
	}
}

func baselineDecode(av map[string]types.AttributeValue) (*baselineItem, error) {
	var it baselineItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return nil, dynamo.Errorf("decode baseline", err)
	}
	return &it, nil
}

func baselineNotFound(space string, n int) *apperr.Error {
	return apperr.NotFoundf("baseline %d not found in space %s", n, space)
}

// PutCopies writes archived copies with RequirementStore.Put: ⌈n/25⌉
// BatchWriteItem calls in parallel, unprocessed items retried.
func (s *BaselineStore) PutCopies(ctx context.Context, tenant string, copies []*requirement.Requirement) error {
	for _, c := range copies {
		if c.Baseline < 1 || c.Baseline > maxBaseline || c.Status != requirement.Archived {
			return fmt.Errorf("put copies: %s/%s is not an archived copy (baseline %d, status %q)", c.SpaceKey, c.Key, c.Baseline, c.Status)
		}
	}
	if err := s.reqs.Put(ctx, tenant, copies); err != nil {
		return fmt.Errorf("write archived copies: %w", err)
	}
	return nil
}

// DeleteCopies deletes every item of baseline n's partition: one
// keys-only Query per 1,000 items, then ⌈n/25⌉ BatchWriteItem deletes in
// parallel.
func (s *BaselineStore) DeleteCopies(ctx context.Context, tenant, space string, n int) error {
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key("pk").Equal(expression.Value(baselinePK(tenant, space, n)))).
		WithProjection(expression.NamesList(expression.Name("pk"), expression.Name("sk"))).Build()
	if err != nil {
		return fmt.Errorf("build copies query: %w", err)
	}
	var deletes []types.WriteRequest
	err = dynamo.QueryEach(ctx, s.db, &dynamodb.QueryInput{
		TableName: &s.table, KeyConditionExpression: expr.KeyCondition(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(), Limit: aws.Int32(1000),
	}, "list archived copies", func(av map[string]types.AttributeValue) error {
		deletes = append(deletes, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{"pk": av["pk"], "sk": av["sk"]}}})
		return nil
	})
	if err != nil {
		return err
	}
	if err := dynamo.BatchWrite(ctx, s.db, s.table, deletes); err != nil {
		return fmt.Errorf("delete archived copies: %w", err)
	}
	return nil
}

// Commit writes the record on condition that it does not exist and
// deletes the freeze's mark on condition that it exists, in one
// TransactWriteItems; with retitle the same transaction sets the page's
// title to the name (and bumps its version, as any change of a page does)
// on condition that the page exists. A transaction cancelled by a
// concurrent one touching the page is retried.
func (s *BaselineStore) Commit(ctx context.Context, job *baseline.Job, retitle bool) error {
	tenant, b, pages := job.Tenant, &job.Baseline, job.Pages
	if job.PagesLost {
		pages = nil
	}
	it, err := baselineNewItem(tenant, b, pages)
	if err != nil {
		return err
	}
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return dynamo.Errorf("encode baseline", err)
	}
	items := []types.TransactWriteItem{
		{Put: &types.Put{TableName: &s.table, Item: av, ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{Delete: &types.Delete{TableName: &s.table, Key: baselineJobKey(tenant, b.SpaceKey, b.Number),
			ConditionExpression:       aws.String("attribute_exists(pk) AND #o = :o"),
			ExpressionAttributeNames:  map[string]string{"#o": "owner"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":o": &types.AttributeValueMemberS{Value: job.Owner}}}},
	}
	if retitle {
		upd, err := expression.NewBuilder().
			WithCondition(expression.AttributeExists(expression.Name("pk"))).
			WithUpdate(expression.Set(expression.Name("title"), expression.Value(b.Name)).
				Set(expression.Name("gsi2pk"), expression.Value(titlePK(tenant, b.Name))).
				Set(expression.Name("gsi2sk"), expression.Value(b.CEO)).
				Set(expression.Name("version"), expression.Name("version").Plus(expression.Value(1))).
				Set(expression.Name("updatedAt"), expression.Value(dynamo.Time(b.CreatedAt))).
				Set(expression.Name("updatedBy"), expression.Value(b.CreatedBy))).Build()
		if err != nil {
			return fmt.Errorf("build page title update: %w", err)
		}
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: &s.table, Key: pgKey(tenant, b.CEO), ConditionExpression: upd.Condition(),
			UpdateExpression: upd.Update(), ExpressionAttributeNames: upd.Names(), ExpressionAttributeValues: upd.Values(),
		}}, titledByUpdate(s.table, tenant, b))
	}
	err = dynamo.Transact(ctx, s.db, items)
	if err == nil {
		s.baselineDeleteKeyChunks(ctx, job)
		return nil
	}
	codes := dynamo.CancellationCodes(err, len(items))
	switch {
	case codes == nil:
	case codes[0] == "ConditionalCheckFailed":
		return apperr.Wrap(apperr.Conflictf("baseline %d of space %s exists already", b.Number, b.SpaceKey), err)
	case codes[1] == "ConditionalCheckFailed":
		return apperr.Wrap(apperr.Conflictf("the freeze of baseline %d of space %s was cancelled or is worked on by another run", b.Number, b.SpaceKey), err)
	case retitle && codes[2] == "ConditionalCheckFailed":
		return apperr.Wrap(apperr.NotFoundf("ceo: page %s not found (it was deleted during the freeze)", b.CEO), err)
	case retitle && codes[3] == "ConditionalCheckFailed":
		// A later baseline of the space titled the page first (two
		// freezes ran at once and this one finished last): the page keeps
		// the later name, this baseline commits without retitling it.
		return s.Commit(ctx, job, false)
	}
	return dynamo.Errorf("write baseline", err)
}

// titledBySK is the item, in a page's partition, that records which
// baseline last gave the page its title: page saves never write it, so it
// survives them.
const titledBySK = "TITLEDBY"

// titledByUpdate records that baseline b titles its CEO page, on condition
// that no later baseline of the same space did: freezes of one space may
// commit out of number order, and the page must end with the name of the
// latest one.
func titledByUpdate(table, tenant string, b *baseline.Baseline) types.TransactWriteItem {
	return types.TransactWriteItem{Update: &types.Update{
		TableName: &table,
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: pagePK(tenant, b.CEO)},
			"sk": &types.AttributeValueMemberS{Value: titledBySK},
		},
		ConditionExpression:      aws.String("attribute_not_exists(#n) OR #s <> :s OR #n < :n"),
		UpdateExpression:         aws.String("SET #n = :n, #s = :s"),
		ExpressionAttributeNames: map[string]string{"#n": "number", "#s": "spaceKey"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":n": &types.AttributeValueMemberN{Value: strconv.Itoa(b.Number)},
			":s": &types.AttributeValueMemberS{Value: b.SpaceKey},
		},
	}}
}

// List returns the records (COMPLETE) and the jobs (FREEZING, FAILED) of
// the space in number order: one Query on the BL range of the space
// partition (page summaries and key lists are not read).
func (s *BaselineStore) List(ctx context.Context, tenant, space string) ([]*baseline.Baseline, error) {
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key("pk").Equal(expression.Value(spacePK(tenant, space))).
			And(expression.Key("sk").BeginsWith("BL"))).
		WithProjection(baselineMeta.AddNames(expression.Name("sk"), expression.Name("state"), expression.Name("total"),
			expression.Name("written"), expression.Name("message"))).Build()
	if err != nil {
		return nil, fmt.Errorf("build baselines query: %w", err)
	}
	list := []*baseline.Baseline{}
	err = dynamo.QueryEach(ctx, s.db, &dynamodb.QueryInput{
		TableName: &s.table, KeyConditionExpression: expr.KeyCondition(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}, "list baselines", func(av map[string]types.AttributeValue) error {
		sk, _ := av["sk"].(*types.AttributeValueMemberS)
		switch {
		case sk == nil:
		case strings.HasPrefix(sk.Value, "BL#"):
			it, err := baselineDecode(av)
			if err != nil {
				return err
			}
			list = append(list, it.entity())
		case strings.HasPrefix(sk.Value, baselineJobPrefix):
			job, err := baselineDecodeJob(av)
			if err != nil {
				return err
			}
			list = append(list, &job.Baseline)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(list, func(a, b *baseline.Baseline) int { return a.Number - b.Number })
	return list, nil
}

// Numbers returns the numbers of the baselines of the space that exist:
// the archived copies a search may show are exactly those of these
// baselines (one Query reading only sort keys).
func (s *BaselineStore) Numbers(ctx context.Context, tenant, space string) (map[int]bool, error) {
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key("pk").Equal(expression.Value(spacePK(tenant, space))).
			And(expression.Key("sk").BeginsWith("BL#"))).
		WithProjection(expression.NamesList(expression.Name("sk"))).Build()
	if err != nil {
		return nil, fmt.Errorf("build baselines query: %w", err)
	}
	nums := map[int]bool{}
	err = dynamo.QueryEach(ctx, s.db, &dynamodb.QueryInput{
		TableName: &s.table, KeyConditionExpression: expr.KeyCondition(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}, "list baselines", func(av map[string]types.AttributeValue) error {
		if sk, ok := av["sk"].(*types.AttributeValueMemberS); ok {
			if n, err := strconv.Atoi(strings.TrimPrefix(sk.Value, "BL#")); err == nil {
				nums[n] = true
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return nums, nil
}

// Exists reports whether baseline n of the space exists (one GetItem of
// the record's key only), for readers of archived copies.
func (s *BaselineStore) Exists(ctx context.Context, tenant, space string, n int) (bool, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &s.table, Key: baselineKey(tenant, space, n), ProjectionExpression: aws.String("pk"),
	})
	if err != nil {
		return false, dynamo.Errorf("get baseline", err)
	}
	return out.Item != nil, nil
}

// Get returns one record without its page summary, or apperr.ErrNotFound.
func (s *BaselineStore) Get(ctx context.Context, tenant, space string, n int) (*baseline.Baseline, error) {
	proj, err := expression.NewBuilder().WithProjection(baselineMeta).Build()
	if err != nil {
		return nil, fmt.Errorf("build baseline projection: %w", err)
	}
	it, err := s.baselineRecord(ctx, &dynamodb.GetItemInput{
		TableName: &s.table, Key: baselineKey(tenant, space, n),
		ProjectionExpression: proj.Projection(), ExpressionAttributeNames: proj.Names(),
	}, space, n)
	if err != nil {
		return nil, err
	}
	return it.entity(), nil
}

// baselineRecord reads the record of baseline n of space with one GetItem
// (in names its key and projection): apperr.ErrNotFound when absent.
func (s *BaselineStore) baselineRecord(ctx context.Context, in *dynamodb.GetItemInput, space string, n int) (*baselineItem, error) {
	out, err := s.db.GetItem(ctx, in)
	if err != nil {
		return nil, dynamo.Errorf("get baseline", err)
	}
	if out.Item == nil {
		return nil, baselineNotFound(space, n)
	}
	return baselineDecode(out.Item)
}

// SetLabel sets the label with one conditional UpdateItem.
func (s *BaselineStore) SetLabel(ctx context.Context, tenant, space string, n int, label string) (*baseline.Baseline, error) {
	expr, err := expression.NewBuilder().
		WithCondition(expression.AttributeExists(expression.Name("pk"))).
		WithUpdate(expression.Set(expression.Name("label"), expression.Value(label))).Build()
	if err != nil {
		return nil, fmt.Errorf("build label update: %w", err)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: baselineKey(tenant, space, n), ConditionExpression: expr.Condition(),
		UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValues: types.ReturnValueAllNew,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil, apperr.Wrap(baselineNotFound(space, n), err)
	}
	if err != nil {
		return nil, dynamo.Errorf("label baseline", err)
	}
	it, err := baselineDecode(out.Attributes)
	if err != nil {
		return nil, err
	}
	return it.entity(), nil
}

// Delete deletes the record first (conditionally), which hides the
// baseline at once, then its copies. A failure while deleting copies
// leaves them orphaned but invisible. Without a record, a job of the
// number (FREEZING or FAILED) is cancelled: the job is deleted, then its
// partition, and the worker holding its lease stops at its next save. With
// neither, it removes what an interrupted freeze or delete left in the
// baseline's partition and returns apperr.ErrNotFound.
func (s *BaselineStore) Delete(ctx context.Context, tenant, space string, n int) error {
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.table, Key: baselineKey(tenant, space, n), ConditionExpression: aws.String("attribute_exists(pk)"),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		out, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
			TableName: &s.table, Key: baselineJobKey(tenant, space, n), ReturnValues: types.ReturnValueAllOld,
		})
		if err != nil {
			return dynamo.Errorf("cancel baseline freeze", err)
		}
		if out.Attributes != nil {
			if job, err := baselineDecodeJob(out.Attributes); err == nil && job.KeysID != "" {
				var c struct {
					Chunks int `dynamodbav:"chunks"`
				}
				_ = attributevalue.UnmarshalMap(out.Attributes, &c)
				job.Keys = nil
				s.baselineDeleteStagedChunks(ctx, job, c.Chunks)
			}
			return s.DeleteCopies(ctx, tenant, space, n)
		}
		if err := s.baselinePurgeLeftovers(ctx, tenant, space, n); err != nil {
			return err
		}
		return apperr.Wrap(baselineNotFound(space, n), ccf)
	}
	if err != nil {
		return dynamo.Errorf("delete baseline", err)
	}
	return s.DeleteCopies(ctx, tenant, space, n)
}

// baselinePurgeLeftovers deletes the partition of baseline n, which has neither
// record nor job, when it holds anything (one Query of one key when it is
// empty).
func (s *BaselineStore) baselinePurgeLeftovers(ctx context.Context, tenant, space string, n int) error {
	q, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: baselinePK(tenant, space, n)},
		},
		ProjectionExpression: aws.String("pk"),
		Limit:                aws.Int32(1),
	})
	if err != nil {
		return dynamo.Errorf("query baseline copies", err)
	}
	if len(q.Items) == 0 {
		return nil
	}
	return s.DeleteCopies(ctx, tenant, space, n)
}

// Pages returns the page summary stored in the record (one GetItem); for
// a summary too large to store it counts the copies' origin pages (one
// Query per 1 MB of copies).
func (s *BaselineStore) Pages(ctx context.Context, tenant, space string, n int) ([]baseline.PageCount, error) {
	it, err := s.baselineRecord(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: baselineKey(tenant, space, n)}, space, n)
	if err != nil {
		return nil, err
	}
	if it.Pages == nil {
		return s.baselineCountPages(ctx, tenant, space, n)
	}
	zr, err := gzip.NewReader(bytes.NewReader(it.Pages))
	if err != nil {
		return nil, fmt.Errorf("decompress page summary: %w", err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("decompress page summary: %w", err)
	}
	var list []baselinePage
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("decode page summary: %w", err)
	}
	pages := make([]baseline.PageCount, 0, len(list))
	for _, p := range list {
		pages = append(pages, baseline.PageCount{PageID: p.ID, Title: p.Title, Count: p.Count})
	}
	return pages, nil
}

// baselineCountPages counts the copies of baseline n by origin page.
func (s *BaselineStore) baselineCountPages(ctx context.Context, tenant, space string, n int) ([]baseline.PageCount, error) {
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key("pk").Equal(expression.Value(baselinePK(tenant, space, n))).
			And(expression.Key("sk").BeginsWith("R#"))).
		WithProjection(expression.NamesList(expression.Name("pageId"), expression.Name("pageTitle"), expression.Name("status"))).Build()
	if err != nil {
		return nil, fmt.Errorf("build copies query: %w", err)
	}
	byID := map[string]*baseline.PageCount{}
	var order []string
	err = dynamo.QueryEach(ctx, s.db, &dynamodb.QueryInput{
		TableName: &s.table, KeyConditionExpression: expr.KeyCondition(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(), Limit: aws.Int32(1000),
	}, "count pages of baseline", func(av map[string]types.AttributeValue) error {
		var row struct {
			PageID string `dynamodbav:"pageId"`
			Title  string `dynamodbav:"pageTitle"`
			Status string `dynamodbav:"status"`
		}
		if err := attributevalue.UnmarshalMap(av, &row); err != nil {
			return dynamo.Errorf("decode archived copy", err)
		}
		if row.Status == "" {
			return nil
		}
		pc := byID[row.PageID]
		if pc == nil {
			pc = &baseline.PageCount{PageID: row.PageID, Title: row.Title}
			byID[row.PageID] = pc
			order = append(order, row.PageID)
		}
		pc.Count++
		return nil
	})
	if err != nil {
		return nil, err
	}
	pages := make([]baseline.PageCount, 0, len(order))
	for _, id := range order {
		pages = append(pages, *byID[id])
	}
	return pages, nil
}

// SpaceExists reports whether the space is registered (one GetItem) or,
// failing that, holds at least one requirement row (one Query of one key).
func (s *BaselineStore) SpaceExists(ctx context.Context, tenant, space string) (bool, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &s.table, ProjectionExpression: aws.String("pk"),
		Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: spacesPK(tenant)},
			"sk": &types.AttributeValueMemberS{Value: space},
		},
	})
	if err != nil {
		return false, dynamo.Errorf("get space", err)
	}
	if out.Item != nil {
		return true, nil
	}
	q, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :r)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: spacePK(tenant, space)},
			":r":  &types.AttributeValueMemberS{Value: "R#"},
		},
		ProjectionExpression: aws.String("pk"),
		Limit:                aws.Int32(1),
	})
	if err != nil {
		return false, dynamo.Errorf("query space", err)
	}
	return len(q.Items) > 0, nil
}

// Page returns a page without its body (WikiStore.PageInfo).
func (s *BaselineStore) Page(ctx context.Context, tenant, id string) (*baseline.Page, error) {
	p, err := s.wiki.PageInfo(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	return &baseline.Page{ID: p.ID, SpaceKey: p.SpaceKey, Title: p.Title, ParentID: p.ParentID, Keys: p.Keys}, nil
}

// PagesTitled returns the pages whose title may be title
// (WikiStore.PagesTitled: one Query of the title index gsi2).
func (s *BaselineStore) PagesTitled(ctx context.Context, tenant, title string) ([]requirement.PageRef, error) {
	return s.wiki.PagesTitled(ctx, tenant, title)
}

// Children returns a page's children (WikiStore.Children: one Query on
// gsi1 T#t#CHILDREN#<id>).
func (s *BaselineStore) Children(ctx context.Context, tenant, id string) ([]*baseline.Page, error) {
	kids, err := s.wiki.Children(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	out := make([]*baseline.Page, 0, len(kids))
	for _, p := range kids {
		out = append(out, &baseline.Page{ID: p.ID, SpaceKey: p.SpaceKey, Title: p.Title, ParentID: p.ParentID, Keys: p.Keys})
	}
	return out, nil
}

// SpaceRequirements reads the current rows of the space in key order. The
// partition's R# range is cut into ReadSegments key ranges, interpolated
// between its first and last keys (keyrange.Split) (one Query of one key each), and the
// ranges are read in parallel, ReadPageSize rows per Query; fn sees the
// rows of one range after the other, so in key order.
func (s *BaselineStore) SpaceRequirements(ctx context.Context, tenant, space string, fn func(*requirement.Requirement) bool) error {
	pk := spacePK(tenant, space)
	first, err := s.baselineEdgeKey(ctx, pk, true)
	if err != nil || first == "" {
		return err
	}
	last, err := s.baselineEdgeKey(ctx, pk, false)
	if err != nil {
		return err
	}
	bounds := keyrange.Split(first, max(last, first), s.ReadSegments)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type segment struct {
		rows []*requirement.Requirement
		err  error
		done chan struct{}
	}
	segs := make([]*segment, len(bounds)-1)
	for i := range segs {
		sg := &segment{done: make(chan struct{})}
		segs[i] = sg
		go func() {
			defer close(sg.done)
			sg.rows, sg.err = s.baselineReadRange(ctx, pk, bounds[i], bounds[i+1], i == len(segs)-1)
		}()
	}
	for _, sg := range segs {
		<-sg.done
		if sg.err != nil {
			return sg.err
		}
		for _, r := range sg.rows {
			if !fn(r) {
				return nil
			}
		}
		sg.rows = nil
	}
	return nil
}

// baselineEdgeKey returns the first (or last) R# sort key of partition pk, ""
// when there is none.
func (s *BaselineStore) baselineEdgeKey(ctx context.Context, pk string, first bool) (string, error) {
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :r)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: pk},
			":r":  &types.AttributeValueMemberS{Value: "R#"},
		},
		ProjectionExpression: aws.String("sk"),
		ScanIndexForward:     aws.Bool(first),
		Limit:                aws.Int32(1),
	})
	if err != nil {
		return "", dynamo.Errorf("query space bounds", err)
	}
	if len(out.Items) == 0 {
		return "", nil
	}
	sk, _ := out.Items[0]["sk"].(*types.AttributeValueMemberS)
	if sk == nil {
		return "", fmt.Errorf("query space bounds: item without a string sk")
	}
	return sk.Value, nil
}

// baselineReadRange reads the rows with lo <= sk < hi (sk <= hi when
// inclusive), stubs left out.
func (s *BaselineStore) baselineReadRange(ctx context.Context, pk, lo, hi string, inclusive bool) ([]*requirement.Requirement, error) {
	var rows []*requirement.Requirement
	err := dynamo.QueryEach(ctx, s.db, &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String("pk = :pk AND sk BETWEEN :lo AND :hi"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: pk},
			":lo": &types.AttributeValueMemberS{Value: lo},
			":hi": &types.AttributeValueMemberS{Value: hi},
		},
		Limit: aws.Int32(s.ReadPageSize),
	}, "query requirements", func(av map[string]types.AttributeValue) error {
		if sk, ok := av["sk"].(*types.AttributeValueMemberS); ok && !inclusive && sk.Value == hi {
			return nil
		}
		r, err := decodeRequirement(av)
		if err != nil {
			return err
		}
		if r.Status != "" {
			rows = append(rows, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// Requirements reads current rows by key (RequirementStore.GetMany:
// ⌈n/100⌉ BatchGetItem calls in parallel); stubs are left out.
func (s *BaselineStore) Requirements(ctx context.Context, tenant, space string, keys []string) ([]*requirement.Requirement, error) {
	ids := make([]requirement.ID, 0, len(keys))
	for _, k := range keys {
		ids = append(ids, requirement.ID{SpaceKey: space, Key: k})
	}
	rows, err := s.reqs.GetMany(ctx, tenant, ids)
	if err != nil {
		return nil, err
	}
	out := make([]*requirement.Requirement, 0, len(rows))
	for _, r := range rows {
		if r.Status != "" {
			out = append(out, r)
		}
	}
	return out, nil
}
