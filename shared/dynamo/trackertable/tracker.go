package trackertable

// TrackerTable: the issue-tracker side's application links, issue links,
// requirement excerpts and pending messages. Key design (every pk starts
// with "T#<tenant>#"; "-" is the baseline of a current version):
//
//	applink      pk T#t#APPLINK                       sk <applinkId>
//	link         pk T#t#ISSUE#<issueKey>              sk L#<applinkId>#<space>#<key>#<baseline|->#<relationship>
//	             gsi1pk T#t#REQ#<applinkId>#<space>#<key>#<baseline|->   gsi1sk <issueKey>#<relationship>
//	requirement  pk T#t#REQ#<applinkId>#<space>#<key>#<baseline|->     sk REQ
//	issue lease  pk T#t#ISSUE#<issueKey>              sk LOCK
//	outbox mark  pk T#t#TOUTBOX                       sk <applinkId>#<space>#<key>#<baseline|->
//	             gsi1pk TOUTBOX#PENDING (sparse)      gsi1sk <tenant>#<sk>
//	pending      pk T#t#PENDING                       sk <applinkId>#<message fingerprint>
//
// The links of an issue are one Query of its partition. A requirement item
// holds the excerpt and the link state (PAGE and TRACKER sets, LINKS
// version, origin page, rev); link items mirror it (holds) and are written
// in the same transactions, conditional on rev. gsi1 (links by requirement)
// is read only for requirements whose state was never written. A link's key
// holds its whole identity, so the same link can never be stored twice. Key components never contain '#' (the tracker
// package refuses it), so keys cannot collide.

import (
	"cmp"
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
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// TrackerStore keeps the tracker's data in the TrackerTable.
type TrackerStore struct {
	db    dynamo.API
	table string
}

var (
	_ tracker.ApplinkStore   = (*TrackerStore)(nil)
	_ tracker.LinkStore      = (*TrackerStore)(nil)
	_ tracker.PendingStore   = (*TrackerStore)(nil)
	_ tracker.IssueLockStore = (*TrackerStore)(nil)
	_ tracker.OutboxStore    = (*TrackerStore)(nil)
)

// NewTrackerStore returns a TrackerStore on table.
func NewTrackerStore(db dynamo.API, table string) *TrackerStore {
	return &TrackerStore{db: db, table: table}
}

// ---------------------------------------------------------------- keys

const tkLinkPrefix = "L#"

func tkApplinkPK(tenant string) string { return dynamo.TenantPrefix(tenant) + "APPLINK" }
func tkPendingPK(tenant string) string { return dynamo.TenantPrefix(tenant) + "PENDING" }
func tkIssuePK(tenant, issueKey string) string {
	return dynamo.TenantPrefix(tenant) + "ISSUE#" + issueKey
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
	return dynamo.TenantPrefix(tenant) + "REQ#" + tkRefPart(r)
}

func tkLinkSK(l tracker.Link) string { return tkLinkPrefix + tkRefPart(l.Req) + "#" + l.Relationship }

func tkKey(pk, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: pk},
		"sk": &types.AttributeValueMemberS{Value: sk},
	}
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
		CreatedAt: dynamo.Time(a.CreatedAt), UpdatedAt: dynamo.Time(a.UpdatedAt)}
}

func (it tkApplinkItem) entity() tracker.Applink {
	return tracker.Applink{ID: it.ID, Name: it.Name, URL: it.URL, ServiceID: it.ServiceID, Mode: tracker.Mode(it.Mode),
		Version: it.Version, WikiToken: it.WikiToken, IncomingTokenHash: it.IncomingTokenHash,
		CreatedAt: dynamo.ParseTime(it.CreatedAt), UpdatedAt: dynamo.ParseTime(it.UpdatedAt)}
}

// GetApplink returns an applink of the tenant, or apperr.ErrNotFound.
func (s *TrackerStore) GetApplink(ctx context.Context, tenant, id string) (tracker.Applink, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: tkKey(tkApplinkPK(tenant), id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return tracker.Applink{}, dynamo.Errorf("get applink", err)
	}
	if out.Item == nil {
		return tracker.Applink{}, apperr.ErrNotFound
	}
	var it tkApplinkItem
	if err := attributevalue.UnmarshalMap(out.Item, &it); err != nil {
		return tracker.Applink{}, dynamo.Errorf("decode applink", err)
	}
	return it.entity(), nil
}

// ListApplinks returns the tenant's applinks ordered by id.
func (s *TrackerStore) ListApplinks(ctx context.Context, tenant string) ([]tracker.Applink, error) {
	var out []tracker.Applink
	err := dynamo.QueryEach(ctx, s.db, &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: tkApplinkPK(tenant)},
		},
		ConsistentRead: aws.Bool(true),
	}, "list applinks", func(av map[string]types.AttributeValue) error {
		var it tkApplinkItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return dynamo.Errorf("decode applink", err)
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
		return dynamo.Errorf("encode applink", err)
	}
	cond := expression.AttributeNotExists(expression.Name("pk"))
	if prev != nil {
		cond = expression.Name("updatedAt").Equal(expression.Value(dynamo.Time(prev.UpdatedAt)))
	}
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return dynamo.Errorf("build applink condition", err)
	}
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &s.table, Item: item,
		ConditionExpression:       expr.Condition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	})
	return dynamo.Translate(err, "put applink "+a.ID)
}

// ---------------------------------------------------------------- links

// tkHolds is a link item's holds attribute: "PAGE", "TRACKER" or
// "PAGE,TRACKER". Items written before holds existed have none and are
// TRACKER links.
func tkHolds(h tracker.Holds) string {
	switch h {
	case tracker.PageHold:
		return "PAGE"
	case tracker.TrackerHold:
		return "TRACKER"
	}
	return "PAGE,TRACKER"
}

func tkParseHolds(s string) tracker.Holds {
	var h tracker.Holds
	for _, p := range strings.Split(s, ",") {
		switch p {
		case "PAGE":
			h |= tracker.PageHold
		case "TRACKER":
			h |= tracker.TrackerHold
		}
	}
	if h == 0 {
		h = tracker.TrackerHold // a legacy item
	}
	return h
}

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
	Holds        string `dynamodbav:"holds,omitempty"`
	CreatedAt    string `dynamodbav:"createdAt"`
}

func newTkLinkItem(tenant string, l tracker.Link, h tracker.Holds, now time.Time) tkLinkItem {
	return tkLinkItem{PK: tkIssuePK(tenant, l.IssueKey), SK: tkLinkSK(l), GSI1PK: tkReqPK(tenant, l.Req),
		GSI1SK: l.IssueKey + "#" + l.Relationship, IssueKey: l.IssueKey, ApplinkID: l.Req.ApplinkID,
		SpaceKey: l.Req.SpaceKey, Key: l.Req.Key, Baseline: l.Req.Baseline, Relationship: l.Relationship,
		Holds: tkHolds(h), CreatedAt: dynamo.Time(now)}
}

func (it tkLinkItem) entity() tracker.HeldLink {
	return tracker.HeldLink{Link: tracker.Link{IssueKey: it.IssueKey, Relationship: it.Relationship,
		Req: tracker.ReqRef{ApplinkID: it.ApplinkID, SpaceKey: it.SpaceKey, Key: it.Key, Baseline: it.Baseline}},
		Holds: tkParseHolds(it.Holds)}
}

func tkDecodeLinks(out *[]tracker.HeldLink) func(map[string]types.AttributeValue) error {
	return func(av map[string]types.AttributeValue) error {
		var it tkLinkItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return dynamo.Errorf("decode link", err)
		}
		*out = append(*out, it.entity())
		return nil
	}
}

// IssueLinks returns the links of an issue: one consistent Query of its
// partition.
func (s *TrackerStore) IssueLinks(ctx context.Context, tenant, issueKey string) ([]tracker.HeldLink, error) {
	var out []tracker.HeldLink
	err := dynamo.QueryEach(ctx, s.db, &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String("pk = :pk AND begins_with(sk, :l)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: tkIssuePK(tenant, issueKey)},
			":l":  &types.AttributeValueMemberS{Value: tkLinkPrefix},
		},
		ConsistentRead: aws.Bool(true),
	}, "query issue links", tkDecodeLinks(&out))
	return out, err
}

// requirementLinks returns the link items of a requirement: one Query of
// gsi1 (eventually consistent). Only states never written as such (links
// stored before holds existed) are read this way.
func (s *TrackerStore) requirementLinks(ctx context.Context, tenant string, ref tracker.ReqRef) ([]tracker.HeldLink, error) {
	var out []tracker.HeldLink
	err := dynamo.QueryEach(ctx, s.db, &dynamodb.QueryInput{
		TableName:              &s.table,
		IndexName:              aws.String("gsi1"),
		KeyConditionExpression: aws.String("gsi1pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: tkReqPK(tenant, ref)},
		},
	}, "query requirement links", tkDecodeLinks(&out))
	return out, err
}

// ---------------------------------------------------------------- requirements

const tkReqSK = "REQ"

// tkReqItem is a requirement: its excerpt, and its link state (the PAGE and
// TRACKER sets as "<issueKey>#<relationship>" string sets, the last LINKS
// version, the defining page, and rev, the revision every state write is
// conditional on; no rev: a state never written, whose links are read from
// gsi1).
type tkReqItem struct {
	PK           string   `dynamodbav:"pk"`
	SK           string   `dynamodbav:"sk"`
	ApplinkID    string   `dynamodbav:"applinkId"`
	SpaceKey     string   `dynamodbav:"spaceKey"`
	Key          string   `dynamodbav:"key"`
	Baseline     int      `dynamodbav:"baseline"`
	HTMLExcerpt  string   `dynamodbav:"htmlExcerpt"`
	GenericURL   string   `dynamodbav:"genericUrl"`
	Deleted      bool     `dynamodbav:"deleted"`
	UpdatedAt    string   `dynamodbav:"updatedAt"`
	PageLinks    []string `dynamodbav:"pageLinks,stringset,omitempty"`
	TrackerLinks []string `dynamodbav:"trackerLinks,stringset,omitempty"`
	LinksVersion *int     `dynamodbav:"linksVersion,omitempty"`
	OriginPageID string   `dynamodbav:"originPageId,omitempty"`
	OriginTitle  string   `dynamodbav:"originTitle,omitempty"`
	Rev          int64    `dynamodbav:"rev,omitempty"`
}

func (it tkReqItem) ref() tracker.ReqRef {
	return tracker.ReqRef{ApplinkID: it.ApplinkID, SpaceKey: it.SpaceKey, Key: it.Key, Baseline: it.Baseline}
}

func (it tkReqItem) entity() tracker.Requirement {
	return tracker.Requirement{Ref: it.ref(), HTMLExcerpt: it.HTMLExcerpt, GenericURL: it.GenericURL,
		Deleted: it.Deleted, UpdatedAt: dynamo.ParseTime(it.UpdatedAt)}
}

func tkRelMember(r tracker.IssueRelationship) string { return r.IssueKey + "#" + r.Relationship }

func tkParseRel(m string) (tracker.IssueRelationship, bool) {
	issue, rel, ok := strings.Cut(m, "#")
	return tracker.IssueRelationship{IssueKey: issue, Relationship: rel}, ok
}

func tkRelSet(members []string) map[tracker.IssueRelationship]bool {
	out := make(map[tracker.IssueRelationship]bool, len(members))
	for _, m := range members {
		if r, ok := tkParseRel(m); ok {
			out[r] = true
		}
	}
	return out
}

func tkMembers(set map[tracker.IssueRelationship]bool) []string {
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, tkRelMember(r))
	}
	slices.Sort(out)
	return out
}

func (it tkReqItem) state() tracker.LinkState {
	st := tracker.EmptyLinkState(it.ref())
	st.Page, st.Tracker = tkRelSet(it.PageLinks), tkRelSet(it.TrackerLinks)
	if it.LinksVersion != nil {
		st.Version = *it.LinksVersion
	}
	st.Origin = tracker.PageOrigin{PageID: it.OriginPageID, Title: it.OriginTitle}
	st.Rev = it.Rev
	return st
}

// GetRequirements reads the requirements among refs with strongly
// consistent BatchGetItem calls (100 keys each); absent ones are missing
// from the map.
func (s *TrackerStore) GetRequirements(ctx context.Context, tenant string, refs []tracker.ReqRef) (map[tracker.ReqRef]tracker.Requirement, error) {
	items, err := s.tkReqItems(ctx, tenant, refs)
	if err != nil {
		return nil, err
	}
	out := make(map[tracker.ReqRef]tracker.Requirement, len(items))
	for ref, it := range items {
		out[ref] = it.entity()
	}
	return out, nil
}

func (s *TrackerStore) tkReqItems(ctx context.Context, tenant string, refs []tracker.ReqRef) (map[tracker.ReqRef]tkReqItem, error) {
	seen := map[tracker.ReqRef]bool{}
	keys := make([]map[string]types.AttributeValue, 0, len(refs))
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			keys = append(keys, tkKey(tkReqPK(tenant, r), tkReqSK))
		}
	}
	out := make(map[tracker.ReqRef]tkReqItem, len(keys))
	items, err := dynamo.BatchGet(ctx, s.db, s.table, keys, true)
	if err != nil {
		return nil, err
	}
	for _, av := range items {
		var it tkReqItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return nil, dynamo.Errorf("decode requirement", err)
		}
		out[it.ref()] = it
	}
	return out, nil
}

// LinkStates reads the link states of refs: a consistent BatchGetItem of
// their requirement items. A requirement whose state was never written
// (no rev: links stored before holds existed, or no links) gets its links
// from gsi1, all of them TRACKER links unless their item says otherwise;
// such links only change through a state write, which records them.
func (s *TrackerStore) LinkStates(ctx context.Context, tenant string, refs []tracker.ReqRef) (map[tracker.ReqRef]tracker.LinkState, error) {
	items, err := s.tkReqItems(ctx, tenant, refs)
	if err != nil {
		return nil, err
	}
	out := make(map[tracker.ReqRef]tracker.LinkState, len(refs))
	var legacy []tracker.ReqRef
	for _, r := range refs {
		if _, done := out[r]; done {
			continue
		}
		it, ok := items[r]
		if ok && it.Rev > 0 {
			out[r] = it.state()
			continue
		}
		st := tracker.EmptyLinkState(r)
		if ok {
			st = it.state()
		}
		out[r] = st
		legacy = append(legacy, r)
	}
	var mu sync.Mutex
	err = dynamo.Each(ctx, legacy, 8, func(ctx context.Context, r tracker.ReqRef) error {
		links, err := s.requirementLinks(ctx, tenant, r)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		st := out[r]
		for _, l := range links {
			rel := tracker.IssueRelationship{IssueKey: l.IssueKey, Relationship: l.Relationship}
			st.Set(rel, st.Holds(rel)|l.Holds)
		}
		out[r] = st
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PutRequirements creates requirements or sets their excerpt, URL and
// deleted flag (one UpdateItem each, a few at a time); their link state is
// never touched.
func (s *TrackerStore) PutRequirements(ctx context.Context, tenant string, reqs []tracker.Requirement) error {
	last := map[tracker.ReqRef]int{}
	for i, r := range reqs {
		last[r.Ref] = i // the last one wins, as if written in order
	}
	var todo []tracker.Requirement
	for i, r := range reqs {
		if last[r.Ref] == i {
			todo = append(todo, r)
		}
	}
	return dynamo.Each(ctx, todo, 8, func(ctx context.Context, r tracker.Requirement) error {
		upd := tkRefSet(expression.UpdateBuilder{}, r.Ref).
			Set(expression.Name("htmlExcerpt"), expression.Value(r.HTMLExcerpt)).
			Set(expression.Name("genericUrl"), expression.Value(r.GenericURL)).
			Set(expression.Name("deleted"), expression.Value(r.Deleted)).
			Set(expression.Name("updatedAt"), expression.Value(dynamo.Time(r.UpdatedAt)))
		expr, err := expression.NewBuilder().WithUpdate(upd).Build()
		if err != nil {
			return dynamo.Errorf("build requirement update", err)
		}
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.table, Key: tkKey(tkReqPK(tenant, r.Ref), tkReqSK),
			UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		})
		return dynamo.Translate(err, "put requirement "+r.Ref.String())
	})
}

// tkRefSet sets the identity attributes of a requirement item.
func tkRefSet(u expression.UpdateBuilder, r tracker.ReqRef) expression.UpdateBuilder {
	return u.Set(expression.Name("applinkId"), expression.Value(r.ApplinkID)).
		Set(expression.Name("spaceKey"), expression.Value(r.SpaceKey)).
		Set(expression.Name("key"), expression.Value(r.Key)).
		Set(expression.Name("baseline"), expression.Value(r.Baseline))
}

// ---------------------------------------------------------------- link state writes

// tkMaxTransact is the most items of one TransactWriteItems.
const tkMaxTransact = 100

// WriteLinks writes each requirement's new link state with its link items
// and outbox mark: one group per requirement (its item, conditional on its
// rev; the link items whose holds change; the mark), groups packed into
// TransactWriteItems of at most 100 items. A group is atomic, so a
// requirement's sets, its link items and its mark never disagree; a group
// of more than 98 link changes (one requirement) is split, its requirement
// item in the first transaction. A failed condition is apperr.ErrConflict;
// the groups of transactions already committed stay written (each is
// consistent on its own) and the caller's next round reads them.
func (s *TrackerStore) WriteLinks(ctx context.Context, tenant string, writes []tracker.LinkWrite) error {
	now := time.Now()
	var batch []types.TransactWriteItem
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: batch})
		batch = nil
		if dynamo.TxConditionFailed(err) {
			return apperr.Wrap(apperr.Conflictf("link state changed concurrently"), err)
		}
		return dynamo.Translate(err, "write links")
	}
	for _, w := range writes {
		group, err := s.tkGroup(tenant, w, now)
		if err != nil {
			return err
		}
		if len(batch)+min(len(group), tkMaxTransact) > tkMaxTransact {
			if err := flush(); err != nil {
				return err
			}
		}
		for len(group) > 0 {
			n := min(len(group), tkMaxTransact-len(batch))
			batch = append(batch, group[:n]...)
			group = group[n:]
			if len(group) > 0 {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}

// tkGroup builds the writes of one requirement's state change: its
// requirement item first, then its mark, then its link items.
func (s *TrackerStore) tkGroup(tenant string, w tracker.LinkWrite, now time.Time) ([]types.TransactWriteItem, error) {
	ref := w.New.Ref
	upd := tkRefSet(expression.UpdateBuilder{}, ref).Set(expression.Name("rev"), expression.Value(w.Old.Rev+1))
	for name, set := range map[string]map[tracker.IssueRelationship]bool{"pageLinks": w.New.Page, "trackerLinks": w.New.Tracker} {
		if len(set) == 0 {
			upd = upd.Remove(expression.Name(name))
		} else {
			av := &types.AttributeValueMemberSS{Value: tkMembers(set)}
			upd = upd.Set(expression.Name(name), expression.Value(av))
		}
	}
	if w.New.Version >= 0 {
		upd = upd.Set(expression.Name("linksVersion"), expression.Value(w.New.Version))
	} else {
		upd = upd.Remove(expression.Name("linksVersion"))
	}
	for name, v := range map[string]string{"originPageId": w.New.Origin.PageID, "originTitle": w.New.Origin.Title} {
		if v == "" {
			upd = upd.Remove(expression.Name(name))
		} else {
			upd = upd.Set(expression.Name(name), expression.Value(v))
		}
	}
	cond := expression.AttributeNotExists(expression.Name("rev"))
	if w.Old.Rev > 0 {
		cond = expression.Name("rev").Equal(expression.Value(w.Old.Rev))
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return nil, dynamo.Errorf("build link state update", err)
	}
	items := []types.TransactWriteItem{{Update: &types.Update{
		TableName: &s.table, Key: tkKey(tkReqPK(tenant, ref), tkReqSK),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}}}
	if w.Mark {
		m, err := s.tkMarkUpdate(tenant, ref, now)
		if err != nil {
			return nil, err
		}
		items = append(items, m)
	}
	all := map[tracker.IssueRelationship]bool{}
	for _, set := range []map[tracker.IssueRelationship]bool{w.Old.Page, w.Old.Tracker, w.New.Page, w.New.Tracker} {
		for r := range set {
			all[r] = true
		}
	}
	rels := make([]tracker.IssueRelationship, 0, len(all))
	for r := range all {
		rels = append(rels, r)
	}
	slices.SortFunc(rels, func(a, b tracker.IssueRelationship) int {
		return cmp.Or(cmp.Compare(a.IssueKey, b.IssueKey), cmp.Compare(a.Relationship, b.Relationship))
	})
	for _, r := range rels {
		oh, nh := w.Old.Holds(r), w.New.Holds(r)
		if oh == nh && (w.Old.Rev > 0 || nh == 0) {
			continue // unchanged (a legacy item is rewritten with its holds spelt out)
		}
		l := tracker.Link{IssueKey: r.IssueKey, Req: ref, Relationship: r.Relationship}
		if nh == 0 {
			items = append(items, types.TransactWriteItem{Delete: &types.Delete{
				TableName: &s.table, Key: tkKey(tkIssuePK(tenant, l.IssueKey), tkLinkSK(l))}})
			continue
		}
		av, err := attributevalue.MarshalMap(newTkLinkItem(tenant, l, nh, now))
		if err != nil {
			return nil, dynamo.Errorf("encode link", err)
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: av}})
	}
	return items, nil
}

// ---------------------------------------------------------------- issue leases

const tkLockSK = "LOCK"

// LockIssue takes the lease of an issue (an item in the issue's partition,
// beside its links) unless another owner holds an unexpired one.
func (s *TrackerStore) LockIssue(ctx context.Context, tenant, issueKey, owner string, now, until time.Time) error {
	upd := expression.Set(expression.Name("owner"), expression.Value(owner)).
		Set(expression.Name("until"), expression.Value(until.UnixMilli()))
	cond := expression.AttributeNotExists(expression.Name("pk")).
		Or(expression.Name("until").LessThan(expression.Value(now.UnixMilli()))).
		Or(expression.Name("owner").Equal(expression.Value(owner)))
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return dynamo.Errorf("build issue lease", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: tkKey(tkIssuePK(tenant, issueKey), tkLockSK),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	return dynamo.Translate(err, "lock issue "+issueKey)
}

// UnlockIssue deletes owner's lease of an issue.
func (s *TrackerStore) UnlockIssue(ctx context.Context, tenant, issueKey, owner string) error {
	expr, err := expression.NewBuilder().WithCondition(expression.Name("owner").Equal(expression.Value(owner))).Build()
	if err != nil {
		return dynamo.Errorf("build issue unlock", err)
	}
	_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.table, Key: tkKey(tkIssuePK(tenant, issueKey), tkLockSK),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	if err = dynamo.Translate(err, "unlock issue "+issueKey); errors.Is(err, apperr.ErrConflict) {
		return nil // expired and taken by another: nothing of ours left
	}
	return err
}

// ---------------------------------------------------------------- tracker outbox marks

// A mark (pk T#t#TOUTBOX, sk <applinkId>#<space>#<key>#<baseline|->) says
// that a requirement's TRACKER set must reach its wiki. While it exists it
// is in the sparse gsi1 partition TOUTBOX#PENDING (gsi1sk
// <tenant>#<sk>), which the TrackerOutbox function reads across tenants.
// seq grows with every edit that marks it; a sender leases it, and deletes
// it only if seq is still the one it read.
const tkOutboxPending = "TOUTBOX#PENDING"

func tkOutboxPK(tenant string) string { return dynamo.TenantPrefix(tenant) + "TOUTBOX" }

type tkMarkItem struct {
	PK         string `dynamodbav:"pk"`
	SK         string `dynamodbav:"sk"`
	Tenant     string `dynamodbav:"tenant"`
	ApplinkID  string `dynamodbav:"applinkId"`
	SpaceKey   string `dynamodbav:"spaceKey"`
	Key        string `dynamodbav:"key"`
	Baseline   int    `dynamodbav:"baseline"`
	Seq        int64  `dynamodbav:"seq"`
	Attempts   int    `dynamodbav:"attempts"`
	LastError  string `dynamodbav:"lastError"`
	MarkedAt   string `dynamodbav:"markedAt"`
	LeaseOwner string `dynamodbav:"leaseOwner"`
}

func (it tkMarkItem) entity() tracker.Mark {
	return tracker.Mark{Tenant: it.Tenant, Seq: it.Seq, Attempts: it.Attempts, LastError: it.LastError,
		MarkedAt: dynamo.ParseTime(it.MarkedAt),
		Ref:      tracker.ReqRef{ApplinkID: it.ApplinkID, SpaceKey: it.SpaceKey, Key: it.Key, Baseline: it.Baseline}}
}

// tkMarkUpdate marks ref (a transaction item of WriteLinks).
func (s *TrackerStore) tkMarkUpdate(tenant string, ref tracker.ReqRef, now time.Time) (types.TransactWriteItem, error) {
	upd := tkRefSet(expression.UpdateBuilder{}, ref).
		Add(expression.Name("seq"), expression.Value(1)).
		Set(expression.Name("tenant"), expression.Value(tenant)).
		Set(expression.Name("markedAt"), expression.Value(dynamo.Time(now))).
		Set(expression.Name("gsi1pk"), expression.Value(tkOutboxPending)).
		Set(expression.Name("gsi1sk"), expression.Value(tenant+"#"+tkRefPart(ref)))
	expr, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return types.TransactWriteItem{}, dynamo.Errorf("build outbox mark", err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName: &s.table, Key: tkKey(tkOutboxPK(tenant), tkRefPart(ref)),
		UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}}, nil
}

// PendingMarks lists the marks of every tenant from the sparse gsi1
// partition TOUTBOX#PENDING (eventually consistent), at most limit.
func (s *TrackerStore) PendingMarks(ctx context.Context, limit int) ([]tracker.Mark, error) {
	var out []tracker.Mark
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName:              &s.table,
		IndexName:              aws.String("gsi1"),
		KeyConditionExpression: aws.String("gsi1pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: tkOutboxPending},
		},
	})
	for p.HasMorePages() && len(out) < limit {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, dynamo.Errorf("query outbox marks", err)
		}
		for _, av := range page.Items {
			var it tkMarkItem
			if err := attributevalue.UnmarshalMap(av, &it); err != nil {
				return nil, dynamo.Errorf("decode outbox mark", err)
			}
			out = append(out, it.entity())
		}
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// TakeMark leases the mark of ref to owner; apperr.ErrConflict when there
// is none or another owner's lease has not expired.
func (s *TrackerStore) TakeMark(ctx context.Context, tenant string, ref tracker.ReqRef, owner string, now, until time.Time) (tracker.Mark, error) {
	upd := expression.Set(expression.Name("leaseOwner"), expression.Value(owner)).
		Set(expression.Name("leaseUntil"), expression.Value(until.UnixMilli()))
	cond := expression.AttributeExists(expression.Name("pk")).And(
		expression.AttributeNotExists(expression.Name("leaseUntil")).
			Or(expression.Name("leaseUntil").LessThan(expression.Value(now.UnixMilli()))))
	expr, err := expression.NewBuilder().WithUpdate(upd).WithCondition(cond).Build()
	if err != nil {
		return tracker.Mark{}, dynamo.Errorf("build outbox lease", err)
	}
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: tkKey(tkOutboxPK(tenant), tkRefPart(ref)),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValues: types.ReturnValueAllNew,
	})
	if err != nil {
		return tracker.Mark{}, dynamo.Translate(err, "take outbox mark "+ref.String())
	}
	var it tkMarkItem
	if err := attributevalue.UnmarshalMap(out.Attributes, &it); err != nil {
		return tracker.Mark{}, dynamo.Errorf("decode outbox mark", err)
	}
	return it.entity(), nil
}

// ClearMark deletes the mark if its seq is still m's and owner leases it;
// otherwise (marked again meanwhile) it releases owner's lease.
func (s *TrackerStore) ClearMark(ctx context.Context, tenant string, m tracker.Mark, owner string) (bool, error) {
	cond := expression.Name("seq").Equal(expression.Value(m.Seq)).And(expression.Name("leaseOwner").Equal(expression.Value(owner)))
	expr, err := expression.NewBuilder().WithCondition(cond).Build()
	if err != nil {
		return false, dynamo.Errorf("build outbox clear", err)
	}
	_, err = s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: &s.table, Key: tkKey(tkOutboxPK(tenant), tkRefPart(m.Ref)),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	err = dynamo.Translate(err, "clear outbox mark "+m.Ref.String())
	if errors.Is(err, apperr.ErrConflict) {
		return false, s.ReleaseMark(ctx, tenant, m, owner, "")
	}
	return err == nil, err
}

// ReleaseMark ends owner's lease on m, recording reason (and one more
// attempt) when it is not empty.
func (s *TrackerStore) ReleaseMark(ctx context.Context, tenant string, m tracker.Mark, owner, reason string) error {
	upd := expression.Remove(expression.Name("leaseOwner")).Remove(expression.Name("leaseUntil"))
	if reason != "" {
		if len(reason) > 1000 {
			reason = strings.ToValidUTF8(reason[:1000], "")
		}
		upd = upd.Set(expression.Name("lastError"), expression.Value(reason)).Add(expression.Name("attempts"), expression.Value(1))
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).
		WithCondition(expression.Name("leaseOwner").Equal(expression.Value(owner))).Build()
	if err != nil {
		return dynamo.Errorf("build outbox release", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: tkKey(tkOutboxPK(tenant), tkRefPart(m.Ref)),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	if err = dynamo.Translate(err, "release outbox mark "+m.Ref.String()); errors.Is(err, apperr.ErrConflict) {
		return nil // gone or no longer ours
	}
	return err
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
	// LINKS (version 5) and UPDATED's version-5 fields.
	Links         []tkPendingLink `dynamodbav:"links,omitempty"`
	HasLinks      bool            `dynamodbav:"hasLinks,omitempty"`
	LinksVersion  *int            `dynamodbav:"linksVersion,omitempty"`
	OriginPageID  string          `dynamodbav:"originPageId,omitempty"`
	OriginTitle   string          `dynamodbav:"originTitle,omitempty"`
	ChangedFields []string        `dynamodbav:"changedFields,omitempty"`
	Suspect       *bool           `dynamodbav:"suspect,omitempty"`
}

type tkPendingLink struct {
	ObjectKey    string `dynamodbav:"objectKey"`
	Relationship string `dynamodbav:"relationship"`
}

func tkPendingSK(p tracker.Pending) string { return p.ApplinkID + "#" + p.Message.Fingerprint() }

func newTkPendingItem(tenant string, p tracker.Pending) tkPendingItem {
	m := p.Message
	return tkPendingItem{PK: tkPendingPK(tenant), SK: tkPendingSK(p), ApplinkID: p.ApplinkID,
		ReceivedAt: p.ReceivedAt.UnixNano(), Index: p.Index, ID: m.ID, Type: string(m.Type),
		AuthorKey: m.AuthorKey, AuthorName: m.AuthorName, SpaceKey: m.SpaceKey, Key: m.Key, Baseline: m.Baseline,
		Estate: m.Estate, ObjectKey: m.ObjectKey, Relationship: m.Relationship, NewHTMLExcerpt: m.NewHTMLExcerpt,
		NewSpaceKey: m.NewSpaceKey, NewKey: m.NewKey, NewBaseline: m.NewBaseline, NewURL: m.NewURL,
		Links: tkPendingLinks(m.Links), HasLinks: m.Links != nil, LinksVersion: m.LinksVersion,
		OriginPageID: m.Origin.PageID, OriginTitle: m.Origin.Title, ChangedFields: m.ChangedFields, Suspect: m.Suspect}
}

func tkPendingLinks(links []tracker.IssueRelationship) []tkPendingLink {
	if len(links) == 0 {
		return nil
	}
	out := make([]tkPendingLink, len(links))
	for i, l := range links {
		out[i] = tkPendingLink{ObjectKey: l.IssueKey, Relationship: l.Relationship}
	}
	return out
}

func (it tkPendingItem) entity() tracker.Pending {
	p := tracker.Pending{ApplinkID: it.ApplinkID, ReceivedAt: time.Unix(0, it.ReceivedAt).UTC(), Index: it.Index,
		Message: tracker.Message{ID: it.ID, Type: tracker.MessageType(it.Type), AuthorKey: it.AuthorKey,
			AuthorName: it.AuthorName, SpaceKey: it.SpaceKey, Key: it.Key, Baseline: it.Baseline, Estate: it.Estate,
			ObjectKey: it.ObjectKey, Relationship: it.Relationship, NewHTMLExcerpt: it.NewHTMLExcerpt,
			NewSpaceKey: it.NewSpaceKey, NewKey: it.NewKey, NewBaseline: it.NewBaseline, NewURL: it.NewURL,
			LinksVersion: it.LinksVersion, Origin: tracker.PageOrigin{PageID: it.OriginPageID, Title: it.OriginTitle},
			ChangedFields: it.ChangedFields, Suspect: it.Suspect}}
	if it.HasLinks {
		p.Message.Links = make([]tracker.IssueRelationship, len(it.Links))
		for i, l := range it.Links {
			p.Message.Links[i] = tracker.IssueRelationship{IssueKey: l.ObjectKey, Relationship: l.Relationship}
		}
	}
	return p
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
			return dynamo.Errorf("encode pending message", err)
		}
		w := types.WriteRequest{PutRequest: &types.PutRequest{Item: av}}
		if i, ok := byKey[it.SK]; ok {
			writes[i] = w
			continue
		}
		byKey[it.SK] = len(writes)
		writes = append(writes, w)
	}
	if err := dynamo.BatchWrite(ctx, s.db, s.table, writes); err != nil {
		return fmt.Errorf("put pending messages: %w", err)
	}
	return nil
}

// ListPending returns the tenant's pending messages in the order received.
func (s *TrackerStore) ListPending(ctx context.Context, tenant string) ([]tracker.Pending, error) {
	var out []tracker.Pending
	err := dynamo.QueryEach(ctx, s.db, &dynamodb.QueryInput{
		TableName:              &s.table,
		KeyConditionExpression: aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk": &types.AttributeValueMemberS{Value: tkPendingPK(tenant)},
		},
		ConsistentRead: aws.Bool(true),
	}, "list pending messages", func(av map[string]types.AttributeValue) error {
		var it tkPendingItem
		if err := attributevalue.UnmarshalMap(av, &it); err != nil {
			return dynamo.Errorf("decode pending message", err)
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
	if err := dynamo.BatchWrite(ctx, s.db, s.table, dynamo.Deletes(keys)); err != nil {
		return fmt.Errorf("delete pending messages: %w", err)
	}
	return nil
}

// ---------------------------------------------------------------- helpers
