package wikitable

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// requirementItem is the DynamoDB shape of a requirement row.
type requirementItem struct {
	PK      string `dynamodbav:"pk"`
	SK      string `dynamodbav:"sk"`
	GSI1PK  string `dynamodbav:"gsi1pk"`
	GSI1SK  string `dynamodbav:"gsi1sk"`
	Space   string `dynamodbav:"space"`
	Key     string `dynamodbav:"key"`
	Base    int    `dynamodbav:"baseline,omitempty"`
	Status  string `dynamodbav:"status,omitempty"` // empty: a stub carrying reverse dependencies
	Text    string `dynamodbav:"text,omitempty"`
	HTML    string `dynamodbav:"html,omitempty"`
	NeedsHT bool   `dynamodbav:"needsHtml,omitempty"`
	Props   []prop `dynamodbav:"props,omitempty"`
	// Ext are the external properties (set through the API, not on the
	// page), in name order: an attribute of its own, so that setting them
	// is an update of this attribute alone (extstore.go).
	Ext    []prop `dynamodbav:"ext,omitempty"`
	PageID string `dynamodbav:"pageId,omitempty"`
	Title  string `dynamodbav:"pageTitle,omitempty"`
	Deps   []dep  `dynamodbav:"deps,omitempty"`
	// RDeps are the reverse dependencies, encoded by encodeDep so that other
	// pages can ADD/DELETE them as a string set without reading the item.
	RDeps  []string    `dynamodbav:"rdeps,stringset,omitempty"`
	Issues []issueLink `dynamodbav:"issues,omitempty"`
	// Suspects are the suspect marks (encodeSuspect), a string set so that
	// a save of another page can ADD a mark without reading the row.
	Suspects []string `dynamodbav:"sus,stringset,omitempty"`
	// LinksVersion counts the changes of the links the page holds.
	LinksVersion int64  `dynamodbav:"lv,omitempty"`
	NewSpace     string `dynamodbav:"newSpaceKey,omitempty"`
	NewKey       string `dynamodbav:"newKey,omitempty"`
}

type prop struct {
	K string `dynamodbav:"k"`
	V string `dynamodbav:"v"`
}

type dep struct {
	S string `dynamodbav:"s"`
	K string `dynamodbav:"k"`
	R string `dynamodbav:"r"`
}

type issueLink struct {
	SID string `dynamodbav:"sid,omitempty"`
	IK  string `dynamodbav:"ik"`
	R   string `dynamodbav:"r"`
	// O are the link's holds: "P" (the page), "PT" (the page and the
	// tracker), absent for the tracker alone. Links stored before holds
	// existed have none and so read as the tracker's: the tracker was then
	// the master of every link, nothing is lost, and such an item encodes
	// back to exactly what is stored (the links callback's condition
	// compares the stored list).
	O string `dynamodbav:"o,omitempty"`
}

func encodeHolds(l requirement.IssueLink) string {
	switch {
	case l.Page && l.Tracker:
		return "PT"
	case l.Page:
		return "P"
	}
	return ""
}

func decodeHolds(o string) (page, tracker bool) {
	if o == "" {
		return false, true
	}
	return strings.Contains(o, "P"), strings.Contains(o, "T")
}

// encodeDep encodes a dependency as one string-set member.
func encodeDep(d requirement.Dependency) string {
	return d.SpaceKey + "\x1f" + d.Key + "\x1f" + d.Relationship
}

func decodeDep(s string) requirement.Dependency {
	parts := strings.SplitN(s, "\x1f", 3)
	for len(parts) < 3 {
		parts = append(parts, "")
	}
	return requirement.Dependency{SpaceKey: parts[0], Key: parts[1], Relationship: parts[2]}
}

// suspectMember is the JSON of one suspect mark in the row's string set.
type suspectMember struct {
	S string   `json:"s,omitempty"` // target requirement's space
	K string   `json:"k,omitempty"` // target requirement's key (folded)
	I string   `json:"i,omitempty"` // issue key (upper case)
	T string   `json:"t"`           // since
	F []string `json:"f"`           // fields
	P string   `json:"p,omitempty"` // page of the operation that made it
	V int      `json:"v,omitempty"` // the version that operation wrote
}

// encodeSuspect encodes a mark as one string-set member: the same mark
// always gives the same member, so adding it twice is harmless.
func encodeSuspect(m requirement.Suspect) string {
	b, _ := json.Marshal(suspectMember{S: m.Target.SpaceKey, K: m.Target.Key, I: m.IssueKey, T: dynamo.Time(m.Since), F: m.Fields, P: m.Page, V: m.Version})
	return string(b)
}

func decodeSuspect(s string) (requirement.Suspect, bool) {
	var m suspectMember
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return requirement.Suspect{}, false
	}
	out := requirement.Suspect{IssueKey: m.I, Since: dynamo.ParseTime(m.T), Fields: m.F, Page: m.P, Version: m.V}
	if m.I == "" {
		out.Target = requirement.NewID(m.S, m.K, 0)
	}
	return out, true
}

// newRequirementItem converts an entity to its item, keys included.
func newRequirementItem(tenant string, r *requirement.Requirement) requirementItem {
	it := requirementItem{
		PK: reqPK(tenant, r.SpaceKey, r.Baseline), SK: reqSK(r.Key),
		Space: r.SpaceKey, Key: r.Key, Base: r.Baseline, Status: string(r.Status),
		Text: r.Text, HTML: r.HTMLExcerpt, NeedsHT: r.HTMLNeedsUpdating,
		PageID: r.Origin.PageID, Title: r.Origin.Title, NewSpace: r.NewSpaceKey, NewKey: r.NewKey,
		LinksVersion: r.LinksVersion,
	}
	if r.Baseline == 0 {
		it.GSI1PK, it.GSI1SK = curGSI1PK(tenant), curGSI1SK(r.SpaceKey, r.Key)
	} else {
		it.GSI1PK, it.GSI1SK = archGSI1PK(tenant), archGSI1SK(r.SpaceKey, r.Key, r.Baseline)
	}
	for _, p := range r.Properties {
		if p.Type == requirement.External {
			it.Ext = append(it.Ext, prop{K: p.Key, V: p.Value})
			continue
		}
		it.Props = append(it.Props, prop{K: p.Key, V: p.Value})
	}
	for _, d := range r.Dependencies {
		it.Deps = append(it.Deps, dep{S: d.SpaceKey, K: d.Key, R: d.Relationship})
	}
	for _, d := range r.ReverseDependencies {
		it.RDeps = append(it.RDeps, encodeDep(d))
	}
	slices.Sort(it.RDeps)
	it.RDeps = slices.Compact(it.RDeps)
	for _, l := range r.Issues {
		it.Issues = append(it.Issues, issueLink{SID: l.ServiceID, IK: l.IssueKey, R: l.Relationship, O: encodeHolds(l)})
	}
	for _, m := range requirement.MergeSuspects(r.Suspects, nil) {
		it.Suspects = append(it.Suspects, encodeSuspect(m))
	}
	slices.Sort(it.Suspects)
	return it
}

// entity converts an item back; stubs come back with an empty Status.
func (it *requirementItem) entity() *requirement.Requirement {
	r := &requirement.Requirement{
		SpaceKey: it.Space, Key: it.Key, Baseline: it.Base, Status: requirement.Status(it.Status),
		Text: it.Text, HTMLExcerpt: it.HTML, HTMLNeedsUpdating: it.NeedsHT,
		Origin:      requirement.PageRef{PageID: it.PageID, Title: it.Title},
		NewSpaceKey: it.NewSpace, NewKey: it.NewKey, LinksVersion: it.LinksVersion,
	}
	for _, p := range it.Props {
		r.Properties = append(r.Properties, requirement.Property{Key: p.K, Value: p.V})
	}
	for _, p := range it.Ext {
		r.Properties = append(r.Properties, requirement.Property{Key: p.K, Value: p.V, Type: requirement.External})
	}
	for _, d := range it.Deps {
		r.Dependencies = append(r.Dependencies, requirement.Dependency{SpaceKey: d.S, Key: d.K, Relationship: d.R})
	}
	for _, s := range it.RDeps {
		r.ReverseDependencies = append(r.ReverseDependencies, decodeDep(s))
	}
	for _, l := range it.Issues {
		page, tracker := decodeHolds(l.O)
		r.Issues = append(r.Issues, requirement.IssueLink{ServiceID: l.SID, IssueKey: l.IK, Relationship: l.R, Page: page, Tracker: tracker})
	}
	var marks []requirement.Suspect
	for _, m := range it.Suspects {
		if s, ok := decodeSuspect(m); ok {
			marks = append(marks, s)
		}
	}
	r.Suspects = requirement.MergeSuspects(marks, nil)
	return r
}

func decodeRequirement(av map[string]types.AttributeValue) (*requirement.Requirement, error) {
	it, err := decodeRowItem(av)
	if err != nil {
		return nil, err
	}
	return it.entity(), nil
}

func (it requirementItem) marshal() (map[string]types.AttributeValue, error) {
	av, err := attributevalue.MarshalMap(it)
	if err != nil {
		return nil, dynamo.Errorf("encode requirement", err)
	}
	return av, nil
}

// RequirementStore reads and writes requirement rows of the WikiTable.
type RequirementStore struct {
	db    dynamo.API
	table string
}

// NewRequirementStore returns a RequirementStore on table.
func NewRequirementStore(db dynamo.API, table string) *RequirementStore {
	return &RequirementStore{db: db, table: table}
}

// rowKey is the key of the row id names.
func rowKey(tenant string, id requirement.ID) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: reqPK(tenant, id.SpaceKey, id.Baseline)},
		"sk": &types.AttributeValueMemberS{Value: reqSK(id.Key)},
	}
}

// Get returns one requirement row with one GetItem; a missing row or a stub
// is apperr.ErrNotFound (answered as "requirement SPACE/KEY not found").
func (s *RequirementStore) Get(ctx context.Context, tenant string, id requirement.ID) (*requirement.Requirement, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: rowKey(tenant, id)})
	if err != nil {
		return nil, dynamo.Errorf("get requirement", err)
	}
	if out.Item == nil {
		return nil, notFound(id)
	}
	r, err := decodeRequirement(out.Item)
	if err != nil {
		return nil, err
	}
	if r.Status == "" {
		return nil, notFound(id)
	}
	return r, nil
}

func notFound(id requirement.ID) error {
	if id.Baseline > 0 {
		return apperr.NotFoundf("requirement %s/%s not found in baseline %d", id.SpaceKey, id.Key, id.Baseline)
	}
	return apperr.NotFoundf("requirement %s/%s not found", id.SpaceKey, id.Key)
}

// GetMany returns the rows that exist among ids (stubs included, with an
// empty Status), keyed by their folded requirement.ID. It uses
// ⌈len(ids)/100⌉ BatchGetItem calls (more only when DynamoDB returns
// unprocessed keys), run in parallel. Reads are strongly consistent: callers
// read rows to write them back (indexing, links callback, freezes).
func (s *RequirementStore) GetMany(ctx context.Context, tenant string, ids []requirement.ID) (map[requirement.ID]*requirement.Requirement, error) {
	return s.getMany(ctx, tenant, ids, true)
}

// GetManyEventual is GetMany with eventually consistent reads (half the
// read capacity), for searches that only show what they read.
func (s *RequirementStore) GetManyEventual(ctx context.Context, tenant string, ids []requirement.ID) (map[requirement.ID]*requirement.Requirement, error) {
	return s.getMany(ctx, tenant, ids, false)
}

func (s *RequirementStore) getMany(ctx context.Context, tenant string, ids []requirement.ID, consistent bool) (map[requirement.ID]*requirement.Requirement, error) {
	keys := make([]map[string]types.AttributeValue, 0, len(ids))
	seen := map[requirement.ID]bool{}
	for _, id := range ids {
		id = id.Fold()
		if !seen[id] {
			seen[id] = true
			keys = append(keys, rowKey(tenant, id))
		}
	}
	items, err := dynamo.BatchGet(ctx, s.db, s.table, keys, consistent)
	if err != nil {
		return nil, err
	}
	found := make(map[requirement.ID]*requirement.Requirement, len(items))
	for _, av := range items {
		r, err := decodeRequirement(av)
		if err != nil {
			return nil, err
		}
		found[r.ID()] = r
	}
	return found, nil
}

// Put writes requirement rows (full items) with ⌈n/25⌉ BatchWriteItem calls
// in parallel, retrying unprocessed items with backoff.
func (s *RequirementStore) Put(ctx context.Context, tenant string, reqs []*requirement.Requirement) error {
	writes := make([]types.WriteRequest, 0, len(reqs))
	for _, r := range reqs {
		av, err := newRequirementItem(tenant, r).marshal()
		if err != nil {
			return err
		}
		writes = append(writes, types.WriteRequest{PutRequest: &types.PutRequest{Item: av}})
	}
	return dynamo.BatchWrite(ctx, s.db, s.table, writes)
}

// QuerySpace pages through the current rows of a space in key order,
// starting at keys beginning with prefix (upper-cased), calling fn for each
// decoded row (stubs skipped) until fn returns false. pageSize bounds each
// Query call.
func (s *RequirementStore) QuerySpace(ctx context.Context, tenant, space, prefix string, pageSize int32, fn func(*requirement.Requirement) bool) error {
	return s.query(ctx, &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: spacePK(tenant, space)},
			":p":  &types.AttributeValueMemberS{Value: reqSK(prefix)},
		},
		Limit: aws.Int32(pageSize),
	}, fn)
}

// QueryTenant pages through every current row of the tenant (all spaces) in
// key order (archived: archived copies instead, key ascending, baseline
// descending), starting at keys beginning with prefix.
func (s *RequirementStore) QueryTenant(ctx context.Context, tenant, prefix string, archived bool, pageSize int32, fn func(*requirement.Requirement) bool) error {
	pk := curGSI1PK(tenant)
	if archived {
		pk = archGSI1PK(tenant)
	}
	return s.query(ctx, &dynamodb.QueryInput{
		TableName:              &s.table,
		IndexName:              aws.String("gsi1"),
		KeyConditionExpression: aws.String("gsi1pk = :pk AND begins_with(gsi1sk, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: pk},
			":p":  &types.AttributeValueMemberS{Value: requirement.FoldKey(prefix)},
		},
		Limit: aws.Int32(pageSize),
	}, fn)
}

// QueryBaseline pages through the archived copies of one baseline of a space.
func (s *RequirementStore) QueryBaseline(ctx context.Context, tenant, space string, n int, pageSize int32, fn func(*requirement.Requirement) bool) error {
	return s.query(ctx, &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: baselinePK(tenant, space, n)},
			":p":  &types.AttributeValueMemberS{Value: "R#"},
		},
		Limit: aws.Int32(pageSize),
	}, fn)
}

func (s *RequirementStore) query(ctx context.Context, in *dynamodb.QueryInput, fn func(*requirement.Requirement) bool) error {
	return dynamo.QueryEach(ctx, s.db, in, "query requirements", func(av map[string]types.AttributeValue) error {
		r, err := decodeRequirement(av)
		if err != nil {
			return err
		}
		if r.Status == "" {
			return nil
		}
		if !fn(r) {
			return dynamo.StopQuery
		}
		return nil
	})
}

// rowListSwap returns the transaction element that sets the list attribute
// name of row from old to new (removing it when new is empty), on
// condition cond and that the attribute still holds old (is absent when old
// is empty): a read-modify-write of one attribute that a concurrent change
// of it makes fail rather than lose.
func rowListSwap[T any](table string, row requirementItem, cond expression.ConditionBuilder, name string, old, new []T) (types.TransactWriteItem, error) {
	attr := expression.Name(name)
	if len(old) == 0 {
		cond = cond.And(expression.AttributeNotExists(attr))
	} else {
		cond = cond.And(attr.Equal(expression.Value(old)))
	}
	upd := expression.Remove(attr)
	if len(new) > 0 {
		upd = expression.Set(attr, expression.Value(new))
	}
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(upd).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("build %s update: %w", name, err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: &table, Key: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: row.PK}, "sk": &types.AttributeValueMemberS{Value: row.SK},
		},
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}}, nil
}
