package wikitable

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Search index items (wikikeys.go): one item per (property value or issue
// key, requirement), only for current ACTIVE rows, written and deleted by
// the indexing write path as requirements change:
//
//	property  pk T#t#IX#P#<name>#<value>   sk <KEYU>#<SPACE>
//	external  pk T#t#IX#E#<name>#<value>   sk <KEYU>#<SPACE>
//	issue     pk T#t#IX#J#<issueKey>       sk <KEYU>#<SPACE>
//	word      pk T#t#IX#W#<word>           sk <KEYU>#<SPACE>
//
// The same item sits in gsi1 under its space, so that a search of one
// space reads that space's items only (a space key holds no '#'):
//
//	gsi1pk T#t#IXS#<SPACE>#<kind>#<value>   gsi1sk <KEYU>#<SPACE>
//
// Values are lower-cased (and cut to indexMaxValue bytes), so a partition holds
// a superset of the exact matches: the search evaluator checks each row.
type indexItem struct {
	PK     string `dynamodbav:"pk"`
	SK     string `dynamodbav:"sk"`
	GSI1PK string `dynamodbav:"gsi1pk"`
	GSI1SK string `dynamodbav:"gsi1sk"`
	Space  string `dynamodbav:"spaceKey"`
	Key    string `dynamodbav:"key"`
}

// item is it as a DynamoDB item, what attributevalue.MarshalMap makes of it
// (TestIndexItemAsMarshalled) without reflection: a fresh page writes
// about 19 items per requirement, most of them index items.
func (it indexItem) item() map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk":       &types.AttributeValueMemberS{Value: it.PK},
		"sk":       &types.AttributeValueMemberS{Value: it.SK},
		"gsi1pk":   &types.AttributeValueMemberS{Value: it.GSI1PK},
		"gsi1sk":   &types.AttributeValueMemberS{Value: it.GSI1SK},
		"spaceKey": &types.AttributeValueMemberS{Value: it.Space},
		"key":      &types.AttributeValueMemberS{Value: it.Key},
	}
}

// Index kinds (the <kind> of the partition key).
const (
	indexProperty = "P"
	// indexExternal items are those of external properties: a kind of
	// their own, so that `@Cost` and `ext@Cost` read different partitions.
	indexExternal = "E"
	indexIssue    = "J"
	// indexService items say that a requirement's page holds (or held) links
	// to an integration: pk T#t#IX#S#<serviceId> (indexAnyService for jira
	// macros naming none). They are written as the page comes to hold such
	// links, whether the integration exists or not, and never deleted by
	// the indexing: a tracker may still hold links the page dropped, so
	// reconcile (the only reader) must find the requirement to send it its
	// set, even an empty one.
	indexService = "S"
	// indexSuspect items list the requirements with a suspect dependency
	// or issue link (`suspect IS TRUE`), all in one value partition.
	indexSuspect = "X"
	// indexWord items list the requirements whose key or text holds a
	// word (requirement.Words, lower-cased by indexValue): the word index
	// of `text ~` patterns and bare strings. Spaces registered before it
	// existed have rows without them: the space registry item says which
	// spaces have it (saveSpaceItem.Words).
	indexWord = "W"
)

// indexSuspectValue is the one value of the suspect index.
const indexSuspectValue = "1"

// indexAnyService is the indexService value of links whose macro names no
// integration (they go to every integration).
const indexAnyService = "*"

// serviceIndexValue is the indexService value of serviceID.
func serviceIndexValue(serviceID string) string {
	if serviceID == "" {
		return indexAnyService
	}
	return indexValue(serviceID)
}

// indexMaxValue bounds the value part of an index partition key (DynamoDB
// allows 2048 bytes per partition key): longer values share the partition
// of their first indexMaxValue bytes, which keeps the index a superset.
const indexMaxValue = 1024

// indexValue is the value part of an index partition key: v folded, then
// cut. Folding goes through upper case first, as the query language does
// (query.Fold), so runes like 'ſ' land in the same partition on both sides;
// it comes before the cut because folding may change a value's length in
// bytes ('ı' is 2 bytes, 'I' 1): the writer (the property name as written)
// and the search (the name folded) must cut the same string.
func indexValue(v string) string {
	v = strings.ToLower(strings.ToUpper(v))
	if len(v) <= indexMaxValue {
		return v
	}
	i := indexMaxValue
	for i > 0 && !utf8.RuneStart(v[i]) {
		i--
	}
	return v[:i]
}

func indexPropertyPK(tenant, name, value string) string {
	return indexPK(tenant, indexProperty, indexPropertyValue(name, value))
}

func indexExternalPK(tenant, name, value string) string {
	return indexPK(tenant, indexExternal, indexPropertyValue(name, value))
}

func indexIssuePK(tenant, issueKey string) string {
	return indexPK(tenant, indexIssue, indexValue(issueKey))
}

func indexPropertyValue(name, value string) string { return indexValue(name + "#" + value) }

// indexItemID is an index item's key.
type indexItemID struct{ pk, sk string }

// indexItems returns the index items of a row by key; none unless the row
// is ACTIVE.
func indexItems(tenant string, r *requirement.Requirement) map[indexItemID]indexItem {
	if r == nil || r.Status != requirement.Active || r.Baseline != 0 {
		return nil
	}
	// Sized for the words of a typical text (about 14), so that the map
	// is not grown and copied item by item: a save builds one for each
	// row it writes and one for the row's stored version.
	out := make(map[indexItemID]indexItem, len(r.Properties)+2*len(r.Issues)+16)
	sk := indexSK(r.SpaceKey, r.Key)
	add := func(kind, value string) {
		pk := indexPK(tenant, kind, value)
		out[indexItemID{pk, sk}] = indexItem{PK: pk, SK: sk, GSI1PK: spaceIndexPK(tenant, r.SpaceKey, kind, value), GSI1SK: sk,
			Space: r.SpaceKey, Key: r.Key}
	}
	for _, p := range r.Properties {
		kind := indexProperty
		if p.Type == requirement.External {
			kind = indexExternal
		}
		add(kind, indexPropertyValue(p.Key, p.Value))
	}
	for _, l := range r.Issues {
		add(indexIssue, indexValue(l.IssueKey))
		if l.Page {
			add(indexService, serviceIndexValue(l.ServiceID))
		}
	}
	if r.IsSuspect() {
		add(indexSuspect, indexSuspectValue)
	}
	for _, w := range requirement.Words(r.Key) {
		add(indexWord, indexValue(w))
	}
	for _, w := range requirement.Words(r.Text) {
		add(indexWord, indexValue(w))
	}
	return out
}

// indexDiff returns the writes that take the index items of old to those of n:
// puts of new (or re-spelt) items, deletes of items n no longer has. Write
// the puts before the row and the deletes after it: a write that fails half
// way then leaves the index a superset of the rows (which searches check),
// never without an item a stored row needs, which no later save would
// write again (saves write only what differs from the stored rows).
func indexDiff(tenant string, old, n *requirement.Requirement) (puts, deletes []types.WriteRequest) {
	before, after := indexItems(tenant, old), indexItems(tenant, n)
	for id, it := range after {
		if prev, ok := before[id]; ok && prev == it {
			continue
		}
		puts = append(puts, types.WriteRequest{PutRequest: &types.PutRequest{Item: it.item()}})
	}
	for id, it := range before {
		if _, ok := after[id]; ok || strings.HasPrefix(it.PK, indexPK(tenant, indexService, "")) {
			continue
		}
		deletes = append(deletes, types.WriteRequest{DeleteRequest: &types.DeleteRequest{Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: it.PK},
			"sk": &types.AttributeValueMemberS{Value: it.SK},
		}}})
	}
	return puts, deletes
}

// QueryPropertyIndex pages through the current ACTIVE requirements that may
// have a property name = value (compared ignoring case: check the rows),
// in key order then space, starting at keys beginning with keyPrefix
// ("" for all), calling fn with each one's id until fn returns false. Fetch
// the rows with GetMany. pageSize bounds each Query call.
func (s *RequirementStore) QueryPropertyIndex(ctx context.Context, tenant, name, value, keyPrefix string, pageSize int32, fn func(requirement.ID) bool) error {
	return s.indexQuery(ctx, indexPropertyPK(tenant, name, value), keyPrefix, pageSize, fn)
}

// QueryExternalIndex is QueryPropertyIndex for external properties.
func (s *RequirementStore) QueryExternalIndex(ctx context.Context, tenant, name, value, keyPrefix string, pageSize int32, fn func(requirement.ID) bool) error {
	return s.indexQuery(ctx, indexExternalPK(tenant, name, value), keyPrefix, pageSize, fn)
}

// QueryIssueIndex is QueryPropertyIndex for the requirements whose issue
// links name issueKey (ignoring case).
func (s *RequirementStore) QueryIssueIndex(ctx context.Context, tenant, issueKey, keyPrefix string, pageSize int32, fn func(requirement.ID) bool) error {
	return s.indexQuery(ctx, indexIssuePK(tenant, issueKey), keyPrefix, pageSize, fn)
}

func (s *RequirementStore) indexQuery(ctx context.Context, pk, keyPrefix string, pageSize int32, fn func(requirement.ID) bool) error {
	kc := expression.Key("pk").Equal(expression.Value(pk))
	if keyPrefix != "" {
		kc = kc.And(expression.Key("sk").BeginsWith(requirement.FoldKey(keyPrefix)))
	}
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return fmt.Errorf("build index query: %w", err)
	}
	in := &dynamodb.QueryInput{
		TableName: &s.table, KeyConditionExpression: expr.KeyCondition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}
	if pageSize > 0 {
		in.Limit = aws.Int32(pageSize)
	}
	return dynamo.QueryEach(ctx, s.db, in, "query index", func(av map[string]types.AttributeValue) error {
		var it indexItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return dynamo.Errorf("decode index item", err)
		}
		if !fn(requirement.ID{SpaceKey: it.Space, Key: it.Key}) {
			return dynamo.StopQuery
		}
		return nil
	})
}
