package trackertable_test

// These tests run on DynamoDB Local through infra/testenv. The package has
// no TestMain of its own here on purpose: several stores share package
// dynamo and a test binary may declare only one TestMain (if one is added,
// it should call testenv.Main). Stand-ins started by testenv die with the
// test binary either way.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo/trackertable"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

func newTrackerStore(t *testing.T) *trackertable.TrackerStore {
	t.Helper()
	env := testenv.AWS(t)
	return trackertable.NewTrackerStore(env.DynamoDB, env.TrackerTable)
}

func TestTrackerApplinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTrackerStore(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	a := tracker.Applink{ID: "wiki-1", Name: "Wiki", URL: "http://wiki.test", ServiceID: "jira-1", Mode: tracker.Auto,
		Version: 4, WikiToken: "secret", IncomingTokenHash: "abc", CreatedAt: now, UpdatedAt: now}
	if err := s.PutApplink(ctx, "demo", a, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutApplink(ctx, "demo", a, nil); !errors.Is(err, apperr.ErrConflict) {
		t.Errorf("second create: %v, want conflict", err)
	}
	got, err := s.GetApplink(ctx, "demo", "wiki-1")
	if err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("GetApplink = %+v, %v", got, err)
	}
	if _, err := s.GetApplink(ctx, "acme", "wiki-1"); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("other tenant: %v", err)
	}

	b := a
	b.Mode, b.UpdatedAt = tracker.Manual, now.Add(time.Second)
	if err := s.PutApplink(ctx, "demo", b, &a); err != nil {
		t.Fatal(err)
	}
	stale := a
	stale.Mode = tracker.Disabled
	if err := s.PutApplink(ctx, "demo", stale, &a); !errors.Is(err, apperr.ErrConflict) {
		t.Errorf("stale update: %v, want conflict", err)
	}
	missing := a
	missing.ID = "wiki-9"
	if err := s.PutApplink(ctx, "demo", missing, &a); !errors.Is(err, apperr.ErrConflict) {
		t.Errorf("update of a missing applink: %v, want conflict", err)
	}

	c := a
	c.ID, c.WikiToken = "wiki-0", ""
	if err := s.PutApplink(ctx, "demo", c, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.PutApplink(ctx, "acme", c, nil); err != nil {
		t.Fatal(err)
	}
	list, err := s.ListApplinks(ctx, "demo")
	if err != nil || len(list) != 2 || list[0].ID != "wiki-0" || list[1].Mode != tracker.Manual || list[0].WikiToken != "" {
		t.Errorf("ListApplinks = %+v, %v", list, err)
	}
}

func link(issue, space, key string, baseline int, rel string) tracker.Link {
	return tracker.Link{IssueKey: issue, Relationship: rel,
		Req: tracker.ReqRef{ApplinkID: "wiki-1", SpaceKey: space, Key: key, Baseline: baseline}}
}

func sortLinks(ls []tracker.Link) []tracker.Link {
	slices.SortFunc(ls, func(a, b tracker.Link) int {
		x := fmt.Sprintf("%s|%s|%s|%d|%s", a.IssueKey, a.Req.SpaceKey, a.Req.Key, a.Req.Baseline, a.Relationship)
		y := fmt.Sprintf("%s|%s|%s|%d|%s", b.IssueKey, b.Req.SpaceKey, b.Req.Key, b.Req.Baseline, b.Relationship)
		if x < y {
			return -1
		}
		if x > y {
			return 1
		}
		return 0
	})
	return ls
}

// rels builds a set of "issue#relationship" links.
func rels(members ...string) map[tracker.IssueRelationship]bool {
	out := map[tracker.IssueRelationship]bool{}
	for _, m := range members {
		issue, rel, _ := strings.Cut(m, "#")
		out[tracker.IssueRelationship{IssueKey: issue, Relationship: rel}] = true
	}
	return out
}

func heldString(ls []tracker.HeldLink) string {
	var parts []string
	for _, l := range ls {
		parts = append(parts, fmt.Sprintf("%s>%s/%s@%d#%s:%s", l.IssueKey, l.Req.SpaceKey, l.Req.Key, l.Req.Baseline, l.Relationship, l.Holds.Origin()+holdsSuffix(l.Holds)))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func holdsSuffix(h tracker.Holds) string {
	if h == tracker.PageHold|tracker.TrackerHold {
		return "+T"
	}
	return ""
}

func state(t *testing.T, s *trackertable.TrackerStore, tenant string, ref tracker.ReqRef) tracker.LinkState {
	t.Helper()
	got, err := s.LinkStates(context.Background(), tenant, []tracker.ReqRef{ref})
	if err != nil {
		t.Fatal(err)
	}
	return got[ref]
}

func TestTrackerLinkStates(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTrackerStore(t)
	r1 := link("", "DEMO", "R1", 0, "").Req
	r1b := link("", "DEMO", "R1", 2, "").Req // a baseline copy is another requirement

	empty := state(t, s, "demo", r1)
	if empty.Rev != 0 || empty.Version != -1 || len(empty.Page)+len(empty.Tracker) != 0 {
		t.Fatalf("state of a requirement never written: %+v", empty)
	}
	n := empty.Clone()
	n.Page = rels("A-1#implements", "B-1#implements")
	n.Tracker = rels("A-1#implements", "A-1#tests")
	n.Version, n.Origin = 3, tracker.PageOrigin{PageID: "123", Title: "Specs"}
	nb := tracker.EmptyLinkState(r1b)
	nb.Tracker = rels("A-1#implements")
	if err := s.WriteLinks(ctx, "demo", []tracker.LinkWrite{{Old: empty, New: n, Mark: true}, {Old: tracker.EmptyLinkState(r1b), New: nb}}); err != nil {
		t.Fatal(err)
	}
	got := state(t, s, "demo", r1)
	if got.Rev != 1 || got.Version != 3 || got.Origin != n.Origin || !reflect.DeepEqual(got.Page, n.Page) || !reflect.DeepEqual(got.Tracker, n.Tracker) {
		t.Fatalf("state after write: %+v", got)
	}
	a, err := s.IssueLinks(ctx, "demo", "A-1")
	if want := "A-1>DEMO/R1@0#implements:PAGE+T A-1>DEMO/R1@0#tests:TRACKER A-1>DEMO/R1@2#implements:TRACKER"; err != nil || heldString(a) != want {
		t.Errorf("IssueLinks(A-1) = %s, %v; want %s", heldString(a), err, want)
	}
	if b, _ := s.IssueLinks(ctx, "demo", "B-1"); heldString(b) != "B-1>DEMO/R1@0#implements:PAGE" {
		t.Errorf("IssueLinks(B-1) = %s", heldString(b))
	}
	if other, _ := s.IssueLinks(ctx, "acme", "A-1"); len(other) != 0 {
		t.Errorf("acme sees demo's links: %s", heldString(other))
	}

	// A stale write (old revision) is a conflict and writes nothing.
	stale := n.Clone()
	stale.Page = rels()
	if err := s.WriteLinks(ctx, "demo", []tracker.LinkWrite{{Old: empty, New: stale}}); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("stale write: %v, want conflict", err)
	}
	if b, _ := s.IssueLinks(ctx, "demo", "B-1"); len(b) != 1 {
		t.Errorf("a refused write removed links: %s", heldString(b))
	}

	// Dropping holds: a link left without one goes; the excerpt stays.
	if err := s.PutRequirements(ctx, "demo", []tracker.Requirement{{Ref: r1, HTMLExcerpt: "<p>x</p>"}}); err != nil {
		t.Fatal(err)
	}
	n2 := got.Clone()
	n2.Page = rels("A-1#implements")
	n2.Tracker = rels()
	if err := s.WriteLinks(ctx, "demo", []tracker.LinkWrite{{Old: got, New: n2}}); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.IssueLinks(ctx, "demo", "A-1"); heldString(a) != "A-1>DEMO/R1@0#implements:PAGE A-1>DEMO/R1@2#implements:TRACKER" {
		t.Errorf("after dropping holds: %s", heldString(a))
	}
	if b, _ := s.IssueLinks(ctx, "demo", "B-1"); len(b) != 0 {
		t.Errorf("B-1 kept a link without holds: %s", heldString(b))
	}
	if st := state(t, s, "demo", r1); st.Rev != 2 || len(st.Tracker) != 0 || st.Version != 3 {
		t.Errorf("state: %+v", st)
	}
	if req, _ := s.GetRequirements(ctx, "demo", []tracker.ReqRef{r1}); req[r1].HTMLExcerpt != "<p>x</p>" {
		t.Errorf("the excerpt went with the links: %+v", req)
	}
	// PutRequirements never touches the link state.
	if st := state(t, s, "demo", r1); len(st.Page) != 1 {
		t.Errorf("PutRequirements changed the link state: %+v", st)
	}
}

func TestTrackerLinkStatesManyLinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTrackerStore(t)
	// 150 links of one requirement and 60 requirements of one issue: more
	// than one transaction.
	big := tracker.EmptyLinkState(link("", "DEMO", "BIG", 0, "").Req)
	for i := range 150 {
		big.Page[tracker.IssueRelationship{IssueKey: fmt.Sprintf("P-%d", i), Relationship: "implements"}] = true
	}
	writes := []tracker.LinkWrite{{Old: tracker.EmptyLinkState(big.Ref), New: big}}
	for i := range 60 {
		st := tracker.EmptyLinkState(link("", "DEMO", fmt.Sprintf("K%02d", i), 0, "").Req)
		st.Tracker = rels("C-1#tests")
		writes = append(writes, tracker.LinkWrite{Old: tracker.EmptyLinkState(st.Ref), New: st, Mark: true})
	}
	if err := s.WriteLinks(ctx, "demo", writes); err != nil {
		t.Fatal(err)
	}
	if got := state(t, s, "demo", big.Ref); len(got.Page) != 150 {
		t.Errorf("big requirement has %d PAGE links", len(got.Page))
	}
	if got, _ := s.IssueLinks(ctx, "demo", "C-1"); len(got) != 60 {
		t.Errorf("C-1 has %d links", len(got))
	}
	if got, _ := s.IssueLinks(ctx, "demo", "P-149"); len(got) != 1 || got[0].Holds != tracker.PageHold {
		t.Errorf("P-149: %s", heldString(got))
	}
	marks, err := s.PendingMarks(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, m := range marks {
		if m.Tenant == "demo" && strings.HasPrefix(m.Ref.Key, "K") {
			n++
		}
	}
	if n != 60 {
		t.Errorf("%d marks, want 60", n)
	}
}

// TestTrackerLegacyLinks: link items written before holds existed (no
// holds attribute, no state on the requirement) read as TRACKER links, and
// the first state write records them.
func TestTrackerLegacyLinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := testenv.AWS(t)
	s := trackertable.NewTrackerStore(env.DynamoDB, env.TrackerTable)
	ref := link("", "DEMO", "OLD", 0, "").Req
	for _, issue := range []string{"L-1", "L-2"} {
		item := map[string]types.AttributeValue{
			"pk":           &types.AttributeValueMemberS{Value: "T#demo#ISSUE#" + issue},
			"sk":           &types.AttributeValueMemberS{Value: "L#wiki-1#DEMO#OLD#-#implements"},
			"gsi1pk":       &types.AttributeValueMemberS{Value: "T#demo#REQ#wiki-1#DEMO#OLD#-"},
			"gsi1sk":       &types.AttributeValueMemberS{Value: issue + "#implements"},
			"issueKey":     &types.AttributeValueMemberS{Value: issue},
			"applinkId":    &types.AttributeValueMemberS{Value: "wiki-1"},
			"spaceKey":     &types.AttributeValueMemberS{Value: "DEMO"},
			"key":          &types.AttributeValueMemberS{Value: "OLD"},
			"baseline":     &types.AttributeValueMemberN{Value: "0"},
			"relationship": &types.AttributeValueMemberS{Value: "implements"},
		}
		if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &env.TrackerTable, Item: item}); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.IssueLinks(ctx, "demo", "L-1"); heldString(got) != "L-1>DEMO/OLD@0#implements:TRACKER" {
		t.Errorf("legacy link: %s", heldString(got))
	}
	var st tracker.LinkState
	for range 50 { // gsi1 is eventually consistent
		if st = state(t, s, "demo", ref); len(st.Tracker) == 2 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st.Rev != 0 || !reflect.DeepEqual(st.Tracker, rels("L-1#implements", "L-2#implements")) || len(st.Page) != 0 {
		t.Fatalf("legacy state: %+v", st)
	}
	n := st.Clone()
	n.Page = rels("L-1#implements")
	if err := s.WriteLinks(ctx, "demo", []tracker.LinkWrite{{Old: st, New: n}}); err != nil {
		t.Fatal(err)
	}
	if got := state(t, s, "demo", ref); got.Rev != 1 || len(got.Tracker) != 2 || len(got.Page) != 1 {
		t.Errorf("after the first write: %+v", got)
	}
	if got, _ := s.IssueLinks(ctx, "demo", "L-1"); heldString(got) != "L-1>DEMO/OLD@0#implements:PAGE+T" {
		t.Errorf("L-1 after the first write: %s", heldString(got))
	}
}

func TestTrackerIssueLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTrackerStore(t)
	now := time.Now()
	if err := s.LockIssue(ctx, "demo", "A-1", "me", now, now.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := s.LockIssue(ctx, "demo", "A-1", "you", now, now.Add(30*time.Second)); !errors.Is(err, apperr.ErrConflict) {
		t.Errorf("second owner: %v, want conflict", err)
	}
	if err := s.LockIssue(ctx, "acme", "A-1", "you", now, now.Add(30*time.Second)); err != nil {
		t.Errorf("another tenant's issue: %v", err)
	}
	if err := s.LockIssue(ctx, "demo", "A-1", "you", now.Add(31*time.Second), now.Add(61*time.Second)); err != nil {
		t.Errorf("expired lease not taken over: %v", err)
	}
	if err := s.UnlockIssue(ctx, "demo", "A-1", "me"); err != nil { // no longer mine: nothing happens
		t.Fatal(err)
	}
	if err := s.LockIssue(ctx, "demo", "A-1", "me", now.Add(32*time.Second), now.Add(62*time.Second)); !errors.Is(err, apperr.ErrConflict) {
		t.Errorf("the old owner's unlock released the new lease: %v", err)
	}
	if err := s.UnlockIssue(ctx, "demo", "A-1", "you"); err != nil {
		t.Fatal(err)
	}
	if err := s.LockIssue(ctx, "demo", "A-1", "me", now, now.Add(30*time.Second)); err != nil {
		t.Errorf("after unlock: %v", err)
	}
	if links, _ := s.IssueLinks(ctx, "demo", "A-1"); len(links) != 0 {
		t.Errorf("the lease reads as a link: %+v", links)
	}
}

func TestTrackerOutboxMarks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTrackerStore(t)
	tenant := "outbox-" + fmt.Sprint(time.Now().UnixNano()) // marks are listed across tenants
	ref := link("", "DEMO", "M1", 0, "").Req
	st := tracker.EmptyLinkState(ref)
	st.Tracker = rels("A-1#implements")
	if err := s.WriteLinks(ctx, tenant, []tracker.LinkWrite{{Old: tracker.EmptyLinkState(ref), New: st, Mark: true}}); err != nil {
		t.Fatal(err)
	}
	find := func() (tracker.Mark, bool) {
		marks, err := s.PendingMarks(ctx, 10000)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range marks {
			if m.Tenant == tenant && m.Ref == ref {
				return m, true
			}
		}
		return tracker.Mark{}, false
	}
	if _, ok := find(); !ok {
		t.Fatal("mark not listed")
	}
	now := time.Now()
	m, err := s.TakeMark(ctx, tenant, ref, "me", now, now.Add(time.Minute))
	if err != nil || m.Seq != 1 {
		t.Fatalf("TakeMark = %+v, %v", m, err)
	}
	if _, err := s.TakeMark(ctx, tenant, ref, "you", now, now.Add(time.Minute)); !errors.Is(err, apperr.ErrConflict) {
		t.Errorf("leased mark taken again: %v", err)
	}
	// Marked again while being sent: clearing keeps the newer mark.
	cur := state(t, s, tenant, ref)
	n := cur.Clone()
	n.Tracker = rels("A-1#implements", "A-2#implements")
	if err := s.WriteLinks(ctx, tenant, []tracker.LinkWrite{{Old: cur, New: n, Mark: true}}); err != nil {
		t.Fatal(err)
	}
	if cleared, err := s.ClearMark(ctx, tenant, m, "me"); err != nil || cleared {
		t.Fatalf("ClearMark of an older seq = %v, %v", cleared, err)
	}
	m2, err := s.TakeMark(ctx, tenant, ref, "you", now, now.Add(time.Minute))
	if err != nil || m2.Seq != 2 {
		t.Fatalf("after release: %+v, %v", m2, err)
	}
	if err := s.ReleaseMark(ctx, tenant, m2, "you", "HTTP 503"); err != nil {
		t.Fatal(err)
	}
	m3, err := s.TakeMark(ctx, tenant, ref, "me", now, now.Add(time.Minute))
	if err != nil || m3.Attempts != 1 || m3.LastError != "HTTP 503" {
		t.Fatalf("after a failed send: %+v, %v", m3, err)
	}
	if cleared, err := s.ClearMark(ctx, tenant, m3, "me"); err != nil || !cleared {
		t.Fatalf("ClearMark = %v, %v", cleared, err)
	}
	if _, err := s.TakeMark(ctx, tenant, ref, "me", now, now.Add(time.Minute)); !errors.Is(err, apperr.ErrConflict) {
		t.Errorf("cleared mark taken: %v", err)
	}
	for range 50 {
		if _, ok := find(); !ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Error("cleared mark still listed")
}

func TestTrackerRequirements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTrackerStore(t)
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var reqs []tracker.Requirement
	var refs []tracker.ReqRef
	for i := range 130 { // more than one BatchGetItem call
		r := tracker.Requirement{Ref: tracker.ReqRef{ApplinkID: "wiki-1", SpaceKey: "DEMO", Key: fmt.Sprintf("R%03d", i)},
			HTMLExcerpt: fmt.Sprintf("<p>%d</p>", i), GenericURL: "/r", UpdatedAt: now}
		reqs = append(reqs, r)
		refs = append(refs, r.Ref)
	}
	reqs[0].HTMLExcerpt, reqs[1].Deleted = "", true
	reqs[2].Ref.Baseline = 3
	refs[2].Baseline = 3
	if err := s.PutRequirements(ctx, "demo", reqs); err != nil {
		t.Fatal(err)
	}
	got, err := s.GetRequirements(ctx, "demo", append(refs, refs[5], tracker.ReqRef{ApplinkID: "wiki-1", SpaceKey: "X", Key: "none"}))
	if err != nil || len(got) != 130 {
		t.Fatalf("GetRequirements: %d, %v", len(got), err)
	}
	for _, r := range reqs {
		if !reflect.DeepEqual(got[r.Ref], r) {
			t.Errorf("%s: got %+v, want %+v", r.Ref, got[r.Ref], r)
		}
	}
	if other, _ := s.GetRequirements(ctx, "acme", refs[:3]); len(other) != 0 {
		t.Errorf("acme sees demo's requirements: %+v", other)
	}
}

func TestTrackerPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTrackerStore(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	id := func(n int64) *int64 { return &n }
	empty, two := "", 2
	m1 := tracker.Message{ID: id(1), Type: tracker.LinkMessage, SpaceKey: "S", Key: "K", ObjectKey: "A", Relationship: "implements", Estate: "_"}
	m2 := tracker.Message{ID: id(2), Type: tracker.Updated, SpaceKey: "S", Key: "K", NewHTMLExcerpt: &empty, AuthorKey: "u1", AuthorName: "User"}
	m3 := tracker.Message{ID: id(3), Type: tracker.Moved, SpaceKey: "S", Key: "K", NewSpaceKey: "T", NewKey: "K", NewBaseline: &two, Baseline: 1}
	seven, no := 7, false
	m4 := tracker.Message{ID: id(4), Type: tracker.LinksMessage, SpaceKey: "S", Key: "K", LinksVersion: &seven,
		Links:  []tracker.IssueRelationship{{IssueKey: "A-1", Relationship: "implements"}},
		Origin: tracker.PageOrigin{PageID: "123", Title: "Specs"}}
	m5 := tracker.Message{ID: id(5), Type: tracker.LinksMessage, SpaceKey: "S", Key: "L", LinksVersion: &two, Links: []tracker.IssueRelationship{}}
	m6 := tracker.Message{ID: id(6), Type: tracker.Updated, SpaceKey: "S", Key: "K", NewHTMLExcerpt: &empty, ChangedFields: []string{"text"}, Suspect: &no}
	batch := []tracker.Pending{
		{ApplinkID: "wiki-1", ReceivedAt: t0, Index: 0, Message: m1},
		{ApplinkID: "wiki-1", ReceivedAt: t0, Index: 1, Message: m2},
		{ApplinkID: "wiki-2", ReceivedAt: t0, Index: 2, Message: m3},
		{ApplinkID: "wiki-2", ReceivedAt: t0, Index: 3, Message: m4},
		{ApplinkID: "wiki-2", ReceivedAt: t0, Index: 4, Message: m5},
		{ApplinkID: "wiki-2", ReceivedAt: t0, Index: 5, Message: m6},
	}
	if err := s.AddPending(ctx, "demo", batch); err != nil {
		t.Fatal(err)
	}
	// m1 delivered again later (another id): replaces the first copy.
	again := m1
	again.ID = id(7)
	if err := s.AddPending(ctx, "demo", []tracker.Pending{{ApplinkID: "wiki-1", ReceivedAt: t0.Add(time.Minute), Message: again}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.ListPending(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	want := []tracker.Pending{batch[1], batch[2], batch[3], batch[4], batch[5], {ApplinkID: "wiki-1", ReceivedAt: t0.Add(time.Minute), Message: again}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ListPending:\n got %+v\nwant %+v", got, want)
	}
	if *got[0].Message.NewHTMLExcerpt != "" || got[0].Message.NewURL != nil {
		t.Error("empty and absent values are not kept apart")
	}
	if other, _ := s.ListPending(ctx, "acme"); len(other) != 0 {
		t.Errorf("acme sees demo's pending messages")
	}
	if got[3].Message.Links == nil || len(got[3].Message.Links) != 0 {
		t.Error("an empty LINKS set is not kept apart from an absent one")
	}
	if err := s.DeletePending(ctx, "demo", got[:5]); err != nil {
		t.Fatal(err)
	}
	if rest, _ := s.ListPending(ctx, "demo"); len(rest) != 1 || *rest[0].Message.ID != 7 {
		t.Errorf("after delete: %+v", rest)
	}
}

// TestTrackerOutboxMarkShards: the marks of many tenants are spread over
// the pending partitions (by tenant), every one of them is listed, a mark a
// former release left in the single legacy partition too, and limit holds.
func TestTrackerOutboxMarkShards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := testenv.AWS(t)
	s := trackertable.NewTrackerStore(env.DynamoDB, env.TrackerTable)
	ref := link("", "DEMO", "M1", 0, "").Req
	st := tracker.EmptyLinkState(ref)
	st.Tracker = rels("A-1#implements")
	for i := range 40 {
		if err := s.WriteLinks(ctx, fmt.Sprintf("t%02d", i), []tracker.LinkWrite{{Old: tracker.EmptyLinkState(ref), New: st, Mark: true}}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := env.DynamoDB.Scan(ctx, &dynamodb.ScanInput{TableName: &env.TrackerTable, IndexName: aws.String("gsi1"),
		FilterExpression:          aws.String("begins_with(gsi1pk, :p)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "TOUTBOX#"}}})
	if err != nil {
		t.Fatal(err)
	}
	partitions := map[string]int{}
	for _, it := range out.Items {
		pk := it["gsi1pk"].(*types.AttributeValueMemberS).Value
		if !strings.HasPrefix(pk, "TOUTBOX#PENDING#") {
			t.Fatalf("mark in %q", pk)
		}
		partitions[pk]++
	}
	if len(out.Items) != 40 || len(partitions) < 16 {
		t.Fatalf("40 tenants' marks: %d in %d partitions, want them spread", len(out.Items), len(partitions))
	}
	// One mark moved to the legacy partition, as a former release wrote it.
	moved := out.Items[0]
	if _, err := env.DynamoDB.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &env.TrackerTable,
		Key:                       map[string]types.AttributeValue{"pk": moved["pk"], "sk": moved["sk"]},
		UpdateExpression:          aws.String("SET gsi1pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": &types.AttributeValueMemberS{Value: "TOUTBOX#PENDING"}}}); err != nil {
		t.Fatal(err)
	}
	marks, err := s.PendingMarks(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	tenants := map[string]bool{}
	for _, m := range marks {
		tenants[m.Tenant] = true
	}
	if len(marks) != 40 || len(tenants) != 40 {
		t.Fatalf("PendingMarks listed %d marks of %d tenants, want 40 of 40", len(marks), len(tenants))
	}
	if marks, err := s.PendingMarks(ctx, 7); err != nil || len(marks) != 7 {
		t.Fatalf("PendingMarks(7) = %d, %v", len(marks), err)
	}
}
