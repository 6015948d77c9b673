package trackertable

import (
	"cmp"
	"context"
	"errors"
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
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// Links.

// encodeHolds is a link item's holds attribute: "PAGE", "TRACKER" or
// "PAGE,TRACKER". Items written before holds existed have none and are
// TRACKER links.
func encodeHolds(h tracker.Holds) string {
	switch h {
	case tracker.PageHold:
		return "PAGE"
	case tracker.TrackerHold:
		return "TRACKER"
	}
	return "PAGE,TRACKER"
}

func parseHolds(s string) tracker.Holds {
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

type linkItem struct {
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

func newLinkItem(tenant string, l tracker.Link, h tracker.Holds, now time.Time) linkItem {
	return linkItem{PK: issuePK(tenant, l.IssueKey), SK: linkSK(l), GSI1PK: reqPK(tenant, l.Req),
		GSI1SK: l.IssueKey + "#" + l.Relationship, IssueKey: l.IssueKey, ApplinkID: l.Req.ApplinkID,
		SpaceKey: l.Req.SpaceKey, Key: l.Req.Key, Baseline: l.Req.Baseline, Relationship: l.Relationship,
		Holds: encodeHolds(h), CreatedAt: dynamo.Time(now)}
}

func (it linkItem) entity() tracker.HeldLink {
	return tracker.HeldLink{Link: tracker.Link{IssueKey: it.IssueKey, Relationship: it.Relationship,
		Req: tracker.ReqRef{ApplinkID: it.ApplinkID, SpaceKey: it.SpaceKey, Key: it.Key, Baseline: it.Baseline}},
		Holds: parseHolds(it.Holds)}
}

func decodeLinks(out *[]tracker.HeldLink) func(map[string]types.AttributeValue) error {
	return func(av map[string]types.AttributeValue) error {
		var it linkItem
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
			":pk": &types.AttributeValueMemberS{Value: issuePK(tenant, issueKey)},
			":l":  &types.AttributeValueMemberS{Value: linkPrefix},
		},
		ConsistentRead: aws.Bool(true),
	}, "query issue links", decodeLinks(&out))
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
			":pk": &types.AttributeValueMemberS{Value: reqPK(tenant, ref)},
		},
	}, "query requirement links", decodeLinks(&out))
	return out, err
}

// Requirements.

const reqSK = "REQ"

// reqItem is a requirement: its excerpt, and its link state (the PAGE and
// TRACKER sets as "<issueKey>#<relationship>" string sets, the last LINKS
// version, the defining page, and rev, the revision every state write is
// conditional on; no rev: a state never written, whose links are read from
// gsi1).
type reqItem struct {
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
	// Suspects are the suspect marks of the requirement's issue links.
	Suspects []suspectItem `dynamodbav:"suspects,omitempty"`
}

// suspectItem is one suspect mark: an issue, since when, which fields.
type suspectItem struct {
	IssueKey string   `dynamodbav:"i"`
	Since    string   `dynamodbav:"t"`
	Fields   []string `dynamodbav:"f,omitempty"`
}

func (it reqItem) ref() tracker.ReqRef {
	return tracker.ReqRef{ApplinkID: it.ApplinkID, SpaceKey: it.SpaceKey, Key: it.Key, Baseline: it.Baseline}
}

func (it reqItem) entity() tracker.Requirement {
	r := tracker.Requirement{Ref: it.ref(), HTMLExcerpt: it.HTMLExcerpt, GenericURL: it.GenericURL,
		Deleted: it.Deleted, UpdatedAt: dynamo.ParseTime(it.UpdatedAt)}
	for _, m := range it.Suspects {
		r.Suspects = append(r.Suspects, tracker.SuspectMark{IssueKey: m.IssueKey, Since: dynamo.ParseTime(m.Since), Fields: m.Fields})
	}
	return r
}

func relMember(r tracker.IssueRelationship) string { return r.IssueKey + "#" + r.Relationship }

func parseRel(m string) (tracker.IssueRelationship, bool) {
	issue, rel, ok := strings.Cut(m, "#")
	return tracker.IssueRelationship{IssueKey: issue, Relationship: rel}, ok
}

func relSet(members []string) map[tracker.IssueRelationship]bool {
	out := make(map[tracker.IssueRelationship]bool, len(members))
	for _, m := range members {
		if r, ok := parseRel(m); ok {
			out[r] = true
		}
	}
	return out
}

func relMembers(set map[tracker.IssueRelationship]bool) []string {
	out := make([]string, 0, len(set))
	for r := range set {
		out = append(out, relMember(r))
	}
	slices.Sort(out)
	return out
}

func (it reqItem) state() tracker.LinkState {
	st := tracker.EmptyLinkState(it.ref())
	st.Page, st.Tracker = relSet(it.PageLinks), relSet(it.TrackerLinks)
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
	items, err := s.reqItems(ctx, tenant, refs)
	if err != nil {
		return nil, err
	}
	out := make(map[tracker.ReqRef]tracker.Requirement, len(items))
	for ref, it := range items {
		out[ref] = it.entity()
	}
	return out, nil
}

func (s *TrackerStore) reqItems(ctx context.Context, tenant string, refs []tracker.ReqRef) (map[tracker.ReqRef]reqItem, error) {
	seen := map[tracker.ReqRef]bool{}
	keys := make([]map[string]types.AttributeValue, 0, len(refs))
	for _, r := range refs {
		if !seen[r] {
			seen[r] = true
			keys = append(keys, itemKey(reqPK(tenant, r), reqSK))
		}
	}
	out := make(map[tracker.ReqRef]reqItem, len(keys))
	items, err := dynamo.BatchGet(ctx, s.db, s.table, keys, true)
	if err != nil {
		return nil, err
	}
	for _, av := range items {
		var it reqItem
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
	items, err := s.reqItems(ctx, tenant, refs)
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
		upd := reqSet(expression.UpdateBuilder{}, tenant, r.Ref).
			Set(expression.Name("htmlExcerpt"), expression.Value(r.HTMLExcerpt)).
			Set(expression.Name("genericUrl"), expression.Value(r.GenericURL)).
			Set(expression.Name("deleted"), expression.Value(r.Deleted)).
			Set(expression.Name("updatedAt"), expression.Value(dynamo.Time(r.UpdatedAt)))
		if len(r.Suspects) > 0 {
			upd = upd.Set(expression.Name("suspects"), expression.Value(suspectItems(r.Suspects)))
		}
		expr, err := expression.NewBuilder().WithUpdate(upd).Build()
		if err != nil {
			return dynamo.Errorf("build requirement update", err)
		}
		_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: &s.table, Key: itemKey(reqPK(tenant, r.Ref), reqSK),
			UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		})
		return dynamo.Translate(err, "put requirement "+r.Ref.String())
	})
}

// SetSuspects replaces the suspect marks of requirement ref (one
// UpdateItem; none removes the attribute), creating the requirement item
// if it does not exist.
func (s *TrackerStore) SetSuspects(ctx context.Context, tenant string, ref tracker.ReqRef, marks []tracker.SuspectMark) error {
	upd := reqSet(expression.UpdateBuilder{}, tenant, ref)
	if len(marks) == 0 {
		upd = upd.Remove(expression.Name("suspects"))
	} else {
		upd = upd.Set(expression.Name("suspects"), expression.Value(suspectItems(marks)))
	}
	expr, err := expression.NewBuilder().WithUpdate(upd).Build()
	if err != nil {
		return dynamo.Errorf("build suspect update", err)
	}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: itemKey(reqPK(tenant, ref), reqSK),
		UpdateExpression: expr.Update(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	return dynamo.Translate(err, "set suspects of "+ref.String())
}

func suspectItems(marks []tracker.SuspectMark) []suspectItem {
	items := make([]suspectItem, len(marks))
	for i, m := range marks {
		items[i] = suspectItem{IssueKey: m.IssueKey, Since: dynamo.Time(m.Since), Fields: m.Fields}
	}
	return items
}

// refSet sets the identity attributes of a requirement item (and of an
// outbox mark).
func refSet(u expression.UpdateBuilder, r tracker.ReqRef) expression.UpdateBuilder {
	return u.Set(expression.Name("applinkId"), expression.Value(r.ApplinkID)).
		Set(expression.Name("spaceKey"), expression.Value(r.SpaceKey)).
		Set(expression.Name("key"), expression.Value(r.Key)).
		Set(expression.Name("baseline"), expression.Value(r.Baseline))
}

// reqSet sets the identity attributes of a requirement item and its place
// in its applink's gsi1 partition (every write of a requirement item goes
// through it, so that deleting the applink finds every requirement).
func reqSet(u expression.UpdateBuilder, tenant string, r tracker.ReqRef) expression.UpdateBuilder {
	return refSet(u, r).
		Set(expression.Name("gsi1pk"), expression.Value(applinkReqsPK(tenant, r.ApplinkID))).
		Set(expression.Name("gsi1sk"), expression.Value(refPart(r)))
}

// Link state writes.

// maxTransact is the most items of one TransactWriteItems.
const maxTransact = 100

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
		group, err := s.linkWriteItems(tenant, w, now)
		if err != nil {
			return err
		}
		if len(batch)+min(len(group), maxTransact) > maxTransact {
			if err := flush(); err != nil {
				return err
			}
		}
		for len(group) > 0 {
			n := min(len(group), maxTransact-len(batch))
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

// linkWriteItems builds the writes of one requirement's state change: its
// requirement item first, then its mark, then its link items.
func (s *TrackerStore) linkWriteItems(tenant string, w tracker.LinkWrite, now time.Time) ([]types.TransactWriteItem, error) {
	ref := w.New.Ref
	upd := reqSet(expression.UpdateBuilder{}, tenant, ref).Set(expression.Name("rev"), expression.Value(w.Old.Rev+1))
	for name, set := range map[string]map[tracker.IssueRelationship]bool{"pageLinks": w.New.Page, "trackerLinks": w.New.Tracker} {
		if len(set) == 0 {
			upd = upd.Remove(expression.Name(name))
		} else {
			av := &types.AttributeValueMemberSS{Value: relMembers(set)}
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
		TableName: &s.table, Key: itemKey(reqPK(tenant, ref), reqSK),
		UpdateExpression: expr.Update(), ConditionExpression: expr.Condition(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}}}
	if w.Mark {
		m, err := s.markUpdate(tenant, ref, now)
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
				TableName: &s.table, Key: itemKey(issuePK(tenant, l.IssueKey), linkSK(l))}})
			continue
		}
		av, err := attributevalue.MarshalMap(newLinkItem(tenant, l, nh, now))
		if err != nil {
			return nil, dynamo.Errorf("encode link", err)
		}
		items = append(items, types.TransactWriteItem{Put: &types.Put{TableName: &s.table, Item: av}})
	}
	return items, nil
}

// Issue leases.

const lockSK = "LOCK"

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
		TableName: &s.table, Key: itemKey(issuePK(tenant, issueKey), lockSK),
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
		TableName: &s.table, Key: itemKey(issuePK(tenant, issueKey), lockSK),
		ConditionExpression: expr.Condition(), ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	if err = dynamo.Translate(err, "unlock issue "+issueKey); errors.Is(err, apperr.ErrConflict) {
		return nil // expired and taken by another: nothing of ours left
	}
	return err
}
