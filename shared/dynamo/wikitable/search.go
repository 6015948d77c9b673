package wikitable

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/keyrange"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
)

// SearchStore implements search.Store and search.Settings on the WikiTable.
// Every read is a Query on a key-ordered partition (a space, a baseline,
// the tenant's current or archived key-order index gsi1, a search index
// partition), a BatchGetItem or a GetItem: never a Scan.
//
//	search.Range                 reads
//	search.Range                 reads ([lo, hi): From/Before, intersected
//	                             with [prefix, keyrange.PrefixEnd(prefix)))
//	Space, current               pk T#t#S#<SPACE>, sk BETWEEN R#<lo> AND
//	                             R#<hi> (or R$), the row at R#<hi> dropped
//	                             (read twice at most once a bound)
//	tenant, current              gsi1 T#t#CUR, gsi1sk BETWEEN <lo> AND <hi>
//	                             (or >= <lo>, < <hi>)
//	tenant, archived             gsi1 T#t#ARCH, the same
//	Space, archived              the same, filtered on the space (an exact
//	                             key reads <KEYU>#<SPACE># only)
//	Space, Baseline n            pk T#t#S#<SPACE>#B#<n8>, as Space, current
//	exact key                    sk = R#<KEYU>, or gsi1sk BETWEEN <KEYU># AND
//	                             <KEYU>$
type SearchStore struct {
	db       dynamo.API
	table    string
	reqs     *RequirementStore
	wiki     *WikiStore
	settings *SettingsStore
}

var (
	_ search.Store    = (*SearchStore)(nil)
	_ search.Settings = (*SearchStore)(nil)
)

// NewSearchStore returns a SearchStore on table.
func NewSearchStore(db dynamo.API, table string) *SearchStore {
	return &SearchStore{db: db, table: table, reqs: NewRequirementStore(db, table),
		wiki: NewWikiStore(db, table), settings: NewSettingsStore(db, table)}
}

// Rows implements search.Store: one Query of the range, Limit limit.
func (s *SearchStore) Rows(ctx context.Context, tenant string, r search.Range, after search.Token, limit int) ([]*requirement.Requirement, search.Token, error) {
	in, lo, hi, err := s.searchRangeQuery(tenant, r)
	if err != nil {
		return nil, "", err
	}
	out, err := s.searchQuery(ctx, in, after, limit)
	if err != nil {
		return nil, "", dynamo.Errorf("query requirements in key order", err)
	}
	rows := make([]*requirement.Requirement, 0, len(out.Items))
	for _, av := range out.Items {
		row, err := decodeRequirement(av)
		if err != nil {
			return nil, "", err
		}
		// The key condition is BETWEEN, inclusive: the row at hi belongs
		// to the next segment (or is past a strict bound).
		if k := requirement.FoldKey(row.Key); k < lo || hi != "" && k >= hi {
			continue
		}
		rows = append(rows, row)
	}
	next, err := searchEncodeToken(out.LastEvaluatedKey)
	return rows, next, err
}

// searchRangeQuery builds the Query of a range (see SearchStore) and the
// bounds [lo, hi) of the folded keys it keeps: a prefix is the range from
// it to keyrange.PrefixEnd, read with BETWEEN rather than begins_with
// (which DynamoDB Local evaluates slowly deep in a partition); Rows drops
// the rows outside the bounds (the row at hi that BETWEEN includes, or
// bounds that are not keys).
func (s *SearchStore) searchRangeQuery(tenant string, r search.Range) (*dynamodb.QueryInput, string, string, error) {
	prefix := requirement.FoldKey(r.Prefix)
	lo, hi := r.From, r.Before
	if r.Exact && (lo != "" || hi != "") {
		return nil, "", "", fmt.Errorf("key-order query: a key range (From, Before) with an exact key")
	}
	if prefix != "" && !r.Exact {
		lo = max(lo, prefix)
		if end := keyrange.PrefixEnd(prefix); hi == "" || end != "" && end < hi {
			hi = end
		}
	}
	var kc expression.KeyConditionBuilder
	var filter *expression.ConditionBuilder
	index := ""
	switch {
	case r.Baseline > 0 || r.Space != "" && !r.Archived:
		pk := spacePK(tenant, r.Space)
		if r.Baseline > 0 {
			pk = baselinePK(tenant, r.Space, r.Baseline)
		}
		kc = expression.Key("pk").Equal(expression.Value(pk))
		if r.Exact {
			kc = kc.And(expression.Key("sk").Equal(expression.Value(reqSK(prefix))))
		} else {
			// [R#lo, R#hi] (Rows drops the row at hi), or to the end of
			// the R# rows: every R# key sorts below "R$". The bounds are
			// folded keys already, or keys between them
			// (keyrange.Split): folding them again could reorder them.
			top := "R$"
			if hi != "" {
				top = "R#" + hi
			}
			kc = kc.And(expression.Key("sk").Between(expression.Value("R#"+lo), expression.Value(top)))
		}
	default:
		index = "gsi1"
		pk := curGSI1PK(tenant)
		if r.Archived {
			pk = archGSI1PK(tenant)
		}
		kc = expression.Key("gsi1pk").Equal(expression.Value(pk))
		sk := expression.Key("gsi1sk")
		// gsi1sk is <KEY>#<SPACE>[#<n>]: '#' sorts below every byte of a
		// key, so the sort keys of the keys in [lo, hi) are those in
		// [lo, hi) (no sort key equals hi: it holds a '#').
		switch {
		case r.Exact && r.Archived && r.Space != "":
			lo, hi = prefix+"#"+r.Space+"#", prefix+"#"+r.Space+"$"
		case r.Exact:
			lo, hi = prefix+"#", prefix+"$"
		}
		switch {
		case lo != "" && hi != "":
			kc = kc.And(sk.Between(expression.Value(lo), expression.Value(hi)))
		case lo != "":
			kc = kc.And(sk.GreaterThanEqual(expression.Value(lo)))
		case hi != "":
			kc = kc.And(sk.LessThan(expression.Value(hi)))
		}
		if r.Exact {
			lo, hi = prefix, prefix+"-" // the keys Rows keeps: the key itself
		}
		if r.Space != "" && !(r.Exact && r.Archived) {
			f := expression.Name("space").Equal(expression.Value(r.Space))
			filter = &f
		}
	}
	b := expression.NewBuilder().WithKeyCondition(kc)
	if filter != nil {
		b = b.WithFilter(*filter)
	}
	expr, err := b.Build()
	if err != nil {
		return nil, "", "", fmt.Errorf("build key-order query: %w", err)
	}
	in := &dynamodb.QueryInput{
		TableName: &s.table, KeyConditionExpression: expr.KeyCondition(), FilterExpression: expr.Filter(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ScanIndexForward: aws.Bool(!r.Desc),
	}
	if index != "" {
		in.IndexName = aws.String(index)
	}
	if r.Exact && index == "" {
		lo, hi = "", "" // the key condition is the key itself
	}
	return in, lo, hi, nil
}

// searchQuery runs one page of in from after with at most limit items read.
func (s *SearchStore) searchQuery(ctx context.Context, in *dynamodb.QueryInput, after search.Token, limit int) (*dynamodb.QueryOutput, error) {
	start, err := searchDecodeToken(after)
	if err != nil {
		return nil, err
	}
	in.ExclusiveStartKey = start
	if limit > 0 {
		in.Limit = aws.Int32(int32(min(limit, 1<<30)))
	}
	return s.db.Query(ctx, in)
}

// Index implements search.Store: one Query of an index partition.
func (s *SearchStore) Index(ctx context.Context, tenant string, ix search.IndexRef, desc bool, after search.Token, limit int) ([]requirement.ID, search.Token, error) {
	kind, value := indexIssue, indexValue(ix.Value)
	switch ix.Kind {
	case search.IndexProperty:
		kind, value = indexProperty, indexPropertyValue(ix.Name, ix.Value)
	case search.IndexExternal:
		kind, value = indexExternal, indexPropertyValue(ix.Name, ix.Value)
	case search.IndexSuspect:
		kind, value = indexSuspect, indexSuspectValue
	case search.IndexWord:
		kind = indexWord
	}
	// Every space: the index partition; one space: its gsi1 partition.
	kc := expression.Key("pk").Equal(expression.Value(indexPK(tenant, kind, value)))
	var index *string
	if ix.Space != "" {
		kc = expression.Key("gsi1pk").Equal(expression.Value(spaceIndexPK(tenant, ix.Space, kind, value)))
		index = aws.String("gsi1")
	}
	// The id is all a search takes from an index item: the answer carries
	// its two attributes only.
	proj := expression.NamesList(expression.Name("spaceKey"), expression.Name("key"))
	expr, err := expression.NewBuilder().WithKeyCondition(kc).WithProjection(proj).Build()
	if err != nil {
		return nil, "", fmt.Errorf("build index query: %w", err)
	}
	out, err := s.searchQuery(ctx, &dynamodb.QueryInput{
		TableName: &s.table, IndexName: index, KeyConditionExpression: expr.KeyCondition(),
		ProjectionExpression:     expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ScanIndexForward: aws.Bool(!desc),
	}, after, limit)
	if err != nil {
		return nil, "", dynamo.Errorf("query search index", err)
	}
	ids := make([]requirement.ID, 0, len(out.Items))
	for _, av := range out.Items {
		space, key, err := decodeIndexID(av)
		if err != nil {
			return nil, "", err
		}
		ids = append(ids, requirement.ID{SpaceKey: space, Key: key})
	}
	next, err := searchEncodeToken(out.LastEvaluatedKey)
	return ids, next, err
}

// Get implements search.Store with RequirementStore.GetMany: ⌈n/100⌉
// BatchGetItem calls in parallel.
func (s *SearchStore) Get(ctx context.Context, tenant string, ids []requirement.ID) ([]*requirement.Requirement, error) {
	found, err := s.reqs.GetManyEventual(ctx, tenant, ids)
	if err != nil {
		return nil, err
	}
	rows := make([]*requirement.Requirement, 0, len(found))
	for _, r := range found {
		rows = append(rows, r)
	}
	return rows, nil
}

// PageKeys implements search.Store with one GetItem of the page (its body
// is not read).
func (s *SearchStore) PageKeys(ctx context.Context, tenant, pageID string) (string, []string, error) {
	p, err := s.wiki.PageInfo(ctx, tenant, pageID)
	if err != nil {
		return "", nil, err
	}
	return p.SpaceKey, p.Keys, nil
}

// PagesTitled implements search.Store with WikiStore.PagesTitled (one
// Query of the title index gsi2).
func (s *SearchStore) PagesTitled(ctx context.Context, tenant, title string) ([]requirement.PageRef, error) {
	return s.wiki.PagesTitled(ctx, tenant, title)
}

// Baselines implements search.Store with BaselineStore.Numbers (one
// Query of the space's BL# sort keys).
func (s *SearchStore) Baselines(ctx context.Context, tenant, space string) (map[int]bool, error) {
	return (&BaselineStore{db: s.db, table: s.table}).Numbers(ctx, tenant, space)
}

// WordIndexed implements search.Store with WikiStore.WordIndexed (one
// Query of the space registry).
func (s *SearchStore) WordIndexed(ctx context.Context, tenant string, spaces []string) (bool, error) {
	return s.wiki.WordIndexed(ctx, tenant, spaces)
}

// Spaces implements search.Store with one Query of the spaces registry.
func (s *SearchStore) Spaces(ctx context.Context, tenant string) ([]string, error) {
	return s.wiki.Spaces(ctx, tenant)
}

// IsolateSpaces implements search.Settings with one GetItem of the
// tenant's settings (false when never set).
func (s *SearchStore) IsolateSpaces(ctx context.Context, tenant string) (bool, error) {
	st, err := s.settings.Get(ctx, tenant)
	if err != nil {
		return false, err
	}
	return st.IsolateSpaces, nil
}

// searchEncodeToken turns a LastEvaluatedKey (string attributes only: every key
// of the WikiTable and its index is a string) into a search.Token.
func searchEncodeToken(key map[string]types.AttributeValue) (search.Token, error) {
	if len(key) == 0 {
		return "", nil
	}
	plain := make(map[string]string, len(key))
	for name, av := range key {
		sv, ok := av.(*types.AttributeValueMemberS)
		if !ok {
			return "", fmt.Errorf("encode search position: attribute %s is not a string", name)
		}
		plain[name] = sv.Value
	}
	b, err := json.Marshal(plain)
	if err != nil {
		return "", fmt.Errorf("encode search position: %w", err)
	}
	return search.Token(b), nil
}

func searchDecodeToken(t search.Token) (map[string]types.AttributeValue, error) {
	if t == "" {
		return nil, nil
	}
	var plain map[string]string
	if err := json.NewDecoder(strings.NewReader(string(t))).Decode(&plain); err != nil || len(plain) == 0 {
		return nil, fmt.Errorf("decode search position %q: not a token of this store", t)
	}
	key := make(map[string]types.AttributeValue, len(plain))
	for name, v := range plain {
		key[name] = &types.AttributeValueMemberS{Value: v}
	}
	return key, nil
}
