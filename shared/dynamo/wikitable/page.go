package wikitable

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

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

// pgItem is the DynamoDB shape of a page: pk T#t#PAGE#<id>, sk PAGE;
// when it has a parent, gsi1 T#t#CHILDREN#<parentId> / <id> so that a
// page's children are one Query; and gsi2 T#t#TITLE#<title folded> / <id>
// so that the pages of a title are one Query (gsi2 projects the title,
// and its entry is rewritten only when the title changes). The body is
// gzip-compressed: DynamoDB items are limited to 400 KB and storage format
// compresses about tenfold. Keys lists the requirements the page owns, so
// that the page view, reindex and search by page need no index.
type pgItem struct {
	PK        string   `dynamodbav:"pk"`
	SK        string   `dynamodbav:"sk"`
	GSI1PK    string   `dynamodbav:"gsi1pk,omitempty"`
	GSI1SK    string   `dynamodbav:"gsi1sk,omitempty"`
	GSI2PK    string   `dynamodbav:"gsi2pk"`
	GSI2SK    string   `dynamodbav:"gsi2sk"`
	ID        string   `dynamodbav:"id"`
	Space     string   `dynamodbav:"spaceKey"`
	Title     string   `dynamodbav:"title"`
	ParentID  string   `dynamodbav:"parentId,omitempty"`
	Version   int      `dynamodbav:"version"`
	Body      []byte   `dynamodbav:"body,omitempty"` // gzip
	BodySize  int      `dynamodbav:"bodySize"`       // uncompressed bytes
	Keys      []string `dynamodbav:"keys,omitempty"`
	UpdatedAt string   `dynamodbav:"updatedAt"`
	UpdatedBy string   `dynamodbav:"updatedBy,omitempty"`
}

// pgSK is the sort key of every page item.
const pgSK = "PAGE"

// pgMaxItem is the most a page item may weigh: DynamoDB's 400 KB, less a
// margin for attribute names and numbers.
const pgMaxItem = 400*1024 - 2048

func pgKey(tenant, id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pagePK(tenant, id)},
		"sk": &types.AttributeValueMemberS{Value: pgSK},
	}
}

// gzipWriters keeps gzip writers between saves: a new one allocates about
// 1 MB of compressor state, which a page save's profile showed as GC work.
var gzipWriters = sync.Pool{New: func() any { return gzip.NewWriter(nil) }}

// pgNewItem converts a page to its item, compressing the body; a page that
// does not fit in an item even compressed is apperr.TooLarge.
func pgNewItem(tenant string, p *wiki.Page) (pgItem, error) {
	var buf bytes.Buffer
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(&buf)
	if _, err := io.WriteString(zw, p.Body); err != nil {
		return pgItem{}, fmt.Errorf("compress page %s: %w", p.ID, err)
	}
	if err := zw.Close(); err != nil {
		return pgItem{}, fmt.Errorf("compress page %s: %w", p.ID, err)
	}
	it := pgItem{
		PK: pagePK(tenant, p.ID), SK: pgSK, GSI2PK: titlePK(tenant, p.Title), GSI2SK: p.ID,
		ID: p.ID, Space: p.SpaceKey, Title: p.Title, ParentID: p.ParentID,
		Version: p.Version, Body: buf.Bytes(), BodySize: len(p.Body), Keys: p.Keys,
		UpdatedAt: dynamo.Time(p.UpdatedAt), UpdatedBy: p.UpdatedBy,
	}
	if p.ParentID != "" {
		it.GSI1PK, it.GSI1SK = childrenPK(tenant, p.ParentID), p.ID
	}
	size := len(it.Body) + len(it.Title) + len(it.PK) + len(it.GSI1PK) + len(it.GSI2PK) + 3*len(it.ID) + len(it.UpdatedBy)
	for _, k := range it.Keys {
		size += len(k) + 3
	}
	if size > pgMaxItem {
		return pgItem{}, apperr.TooLargef("page %s cannot be stored: its body is %d bytes compressed (%d bytes uncompressed) "+
			"and its %d requirement keys, over the %d bytes a page may take; split the page", p.ID, len(it.Body), len(p.Body), len(it.Keys), pgMaxItem)
	}
	return it, nil
}

// entity converts an item back; withBody decompresses the body.
func (it *pgItem) entity(withBody bool) (*wiki.Page, error) {
	updated := dynamo.ParseTime(it.UpdatedAt)
	p := &wiki.Page{
		ID: it.ID, SpaceKey: it.Space, Title: it.Title, ParentID: it.ParentID, Version: it.Version,
		Keys: it.Keys, UpdatedAt: updated, UpdatedBy: it.UpdatedBy,
	}
	if withBody && len(it.Body) > 0 {
		zr, err := gzip.NewReader(bytes.NewReader(it.Body))
		if err != nil {
			return nil, fmt.Errorf("decompress page %s: %w", it.ID, err)
		}
		body, err := io.ReadAll(zr)
		if err != nil {
			return nil, fmt.Errorf("decompress page %s: %w", it.ID, err)
		}
		p.Body = string(body)
	}
	return p, nil
}

// pgDecode decodes a page item.
func pgDecode(av map[string]types.AttributeValue, withBody bool) (*wiki.Page, error) {
	var it pgItem
	if err := attributevalue.UnmarshalMap(av, &it); err != nil {
		return nil, dynamo.Errorf("decode page", err)
	}
	return it.entity(withBody)
}

// pgPlaceholder reports whether a page item read is no page: absent, or
// the placeholder holding the lease of a page being created (it has no
// version).
func pgPlaceholder(item map[string]types.AttributeValue) bool {
	_, ok := item["version"]
	return !ok
}

// pgMeta is every page attribute but the body.
var pgMeta = expression.NamesList(expression.Name("id"), expression.Name("spaceKey"), expression.Name("title"),
	expression.Name("parentId"), expression.Name("version"), expression.Name("bodySize"), expression.Name("keys"),
	expression.Name("updatedAt"), expression.Name("updatedBy"))

// Page returns a page with its body (one strongly consistent GetItem: the
// version a lease is taken on), or apperr.ErrNotFound.
func (s *WikiStore) Page(ctx context.Context, tenant, id string) (*wiki.Page, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: pgKey(tenant, id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, dynamo.Errorf("get page", err)
	}
	if pgPlaceholder(out.Item) {
		return nil, apperr.NotFoundf("page %s not found", id)
	}
	return pgDecode(out.Item, true)
}

// PageInfo returns a page without its body (one GetItem reading only the
// other attributes), or apperr.ErrNotFound: its space and the keys of the
// requirements it defines (Keys) are what search by page and baselines of
// a page need.
func (s *WikiStore) PageInfo(ctx context.Context, tenant, id string) (*wiki.Page, error) {
	proj, err := expression.NewBuilder().WithProjection(pgMeta).Build()
	if err != nil {
		return nil, fmt.Errorf("build page projection: %w", err)
	}
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: &s.table, Key: pgKey(tenant, id),
		ProjectionExpression: proj.Projection(), ExpressionAttributeNames: proj.Names(),
	})
	if err != nil {
		return nil, dynamo.Errorf("get page", err)
	}
	if pgPlaceholder(out.Item) {
		return nil, apperr.NotFoundf("page %s not found", id)
	}
	return pgDecode(out.Item, false)
}

// Children returns the pages whose parent is parentID, without bodies,
// ordered by page id (one Query per 1 MB of results).
func (s *WikiStore) Children(ctx context.Context, tenant, parentID string) ([]*wiki.Page, error) {
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key("gsi1pk").Equal(expression.Value(childrenPK(tenant, parentID)))).
		WithProjection(pgMeta).Build()
	if err != nil {
		return nil, fmt.Errorf("build children query: %w", err)
	}
	return dynamo.QueryAll(ctx, s.db, &dynamodb.QueryInput{
		TableName: &s.table, IndexName: aws.String("gsi1"),
		KeyConditionExpression: expr.KeyCondition(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}, "query child pages", func(av map[string]types.AttributeValue) (*wiki.Page, error) { return pgDecode(av, false) })
}

// PagesTitled returns the pages whose title may be title ignoring case,
// with their titles, ordered by id: one Query of gsi2 (T#t#TITLE#<title
// folded>), reading nothing but the index. The partition folds as the
// search indexes do (indexValue), so it holds a superset of the pages
// whose title equals title after query.Fold; the caller compares.
func (s *WikiStore) PagesTitled(ctx context.Context, tenant, title string) ([]requirement.PageRef, error) {
	expr, err := expression.NewBuilder().
		WithKeyCondition(expression.Key("gsi2pk").Equal(expression.Value(titlePK(tenant, title)))).
		WithProjection(expression.NamesList(expression.Name("gsi2sk"), expression.Name("title"))).Build()
	if err != nil {
		return nil, fmt.Errorf("build title query: %w", err)
	}
	return dynamo.QueryAll(ctx, s.db, &dynamodb.QueryInput{
		TableName: &s.table, IndexName: aws.String("gsi2"),
		KeyConditionExpression: expr.KeyCondition(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}, "query pages by title", func(av map[string]types.AttributeValue) (requirement.PageRef, error) {
		var it struct {
			ID    string `dynamodbav:"gsi2sk"`
			Title string `dynamodbav:"title"`
		}
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return requirement.PageRef{}, dynamo.Errorf("decode page title", err)
		}
		return requirement.PageRef{PageID: it.ID, Title: it.Title}, nil
	})
}

// pgWrite writes a page conditionally: a put of the encoded item put, or
// (put nil) a delete of page id. Under a lease (l not nil) the condition
// is that the lease is still l's, and the write ends it. Without one,
// expect is the version it replaces (0 when the page must not exist yet,
// not even as a lease placeholder) and no unexpired lease may be held. A
// failed condition is apperr.ErrConflict.
func (s *WikiStore) pgWrite(ctx context.Context, tenant string, put map[string]types.AttributeValue, id string, expect int, l *wiki.Lease) error {
	var (
		cond   string
		names  map[string]string
		values map[string]types.AttributeValue
	)
	switch {
	case l != nil:
		cond, names = "#li = :id", pgNames("#li")
		values = map[string]types.AttributeValue{":id": &types.AttributeValueMemberS{Value: l.ID}}
	case expect > 0:
		cond, names = "#v = :v AND "+pgLeaseFree, pgNames("#v", "#lu")
		values = map[string]types.AttributeValue{
			":v": &types.AttributeValueMemberN{Value: strconv.Itoa(expect)}, ":now": pgMillis(s.now()),
		}
	default:
		cond, names = "attribute_not_exists(#pk)", pgNames("#pk")
	}
	err := dynamo.RetryRejected(ctx, func() (err error) {
		if put != nil {
			_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
				TableName: &s.table, Item: put, ConditionExpression: &cond,
				ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			})
		} else {
			_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
				TableName: &s.table, Key: pgKey(tenant, id), ConditionExpression: &cond,
				ExpressionAttributeNames: names, ExpressionAttributeValues: values,
			})
		}
		return err
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if l != nil {
			return pgLeaseLost(id, err)
		}
		return apperr.Wrap(apperr.Conflictf("page %s was changed by another request meanwhile; send it again", id), err)
	}
	if err != nil {
		return dynamo.Errorf("write page", err)
	}
	return nil
}
