package trackertable_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo/trackertable"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// TestTrackerPurgeApplink: PurgeApplink deletes every requirement item of
// an applink (more than one Query page of them) with the link items their
// states hold, the link items of a requirement whose state was never
// written (read from gsi1 by requirement), the applink's outbox marks and
// pending messages; another applink's and another tenant's stay; a second
// purge finds nothing. DeleteApplink deletes once, then not found.
func TestTrackerPurgeApplink(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := testenv.AWS(t)
	s := trackertable.NewTrackerStore(env.DynamoDB, env.TrackerTable)
	ref := func(applink string, i int) tracker.ReqRef {
		return tracker.ReqRef{ApplinkID: applink, SpaceKey: "DEMO", Key: fmt.Sprintf("REQ-%04d", i)}
	}
	write := func(tenant string, refs []tracker.ReqRef, mark bool) {
		t.Helper()
		var ws []tracker.LinkWrite
		for i, r := range refs {
			st := tracker.EmptyLinkState(r)
			next := st.Clone()
			next.Set(tracker.IssueRelationship{IssueKey: fmt.Sprintf("P-%d", i%50+1), Relationship: "implements"}, tracker.TrackerHold)
			next.Set(tracker.IssueRelationship{IssueKey: "ALL-1", Relationship: "tests"}, tracker.PageHold)
			ws = append(ws, tracker.LinkWrite{Old: st, New: next, Mark: mark})
		}
		if err := s.WriteLinks(ctx, tenant, ws); err != nil {
			t.Fatal(err)
		}
	}
	var mine []tracker.ReqRef
	for i := range 620 { // more than one Query page (500)
		mine = append(mine, ref("wiki-1", i))
	}
	write("demo", mine[:600], false)
	write("demo", mine[600:], true) // with outbox marks
	write("demo", []tracker.ReqRef{ref("wiki-2", 0)}, true)
	write("acme", []tracker.ReqRef{ref("wiki-1", 0)}, true)
	// A requirement whose link state was never written: its link item
	// (stored before states existed) is found through gsi1.
	legacy := ref("wiki-1", 9999)
	if err := s.PutRequirements(ctx, "demo", []tracker.Requirement{{Ref: legacy, HTMLExcerpt: "<p>old</p>", UpdatedAt: time.Now()}}); err != nil {
		t.Fatal(err)
	}
	item := map[string]types.AttributeValue{
		"pk":           &types.AttributeValueMemberS{Value: "T#demo#ISSUE#OLD-1"},
		"sk":           &types.AttributeValueMemberS{Value: "L#wiki-1#DEMO#REQ-9999#-#implements"},
		"gsi1pk":       &types.AttributeValueMemberS{Value: "T#demo#REQ#wiki-1#DEMO#REQ-9999#-"},
		"gsi1sk":       &types.AttributeValueMemberS{Value: "OLD-1#implements"},
		"issueKey":     &types.AttributeValueMemberS{Value: "OLD-1"},
		"applinkId":    &types.AttributeValueMemberS{Value: "wiki-1"},
		"spaceKey":     &types.AttributeValueMemberS{Value: "DEMO"},
		"key":          &types.AttributeValueMemberS{Value: "REQ-9999"},
		"baseline":     &types.AttributeValueMemberN{Value: "0"},
		"relationship": &types.AttributeValueMemberS{Value: "implements"},
	}
	if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &env.TrackerTable, Item: item}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddPending(ctx, "demo", []tracker.Pending{
		{ApplinkID: "wiki-1", ReceivedAt: time.Now(), Message: tracker.Message{ID: ptr(int64(1)), Type: tracker.LinkMessage, SpaceKey: "DEMO", Key: "REQ-1", ObjectKey: "P-1", Relationship: "r"}},
		{ApplinkID: "wiki-2", ReceivedAt: time.Now(), Message: tracker.Message{ID: ptr(int64(1)), Type: tracker.LinkMessage, SpaceKey: "DEMO", Key: "REQ-1", ObjectKey: "P-1", Relationship: "r"}},
	}); err != nil {
		t.Fatal(err)
	}

	// 621 requirement items, 1,240 link items of states, the legacy link,
	// 20 marks and a pending message.
	n, err := s.PurgeApplink(ctx, "demo", "wiki-1")
	if err != nil || n != 621+1240+1+20+1 {
		t.Fatalf("PurgeApplink = %d, %v", n, err)
	}
	for _, issue := range []string{"P-1", "P-50", "ALL-1", "OLD-1"} {
		links, err := s.IssueLinks(ctx, "demo", issue)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if l.Req.ApplinkID == "wiki-1" {
				t.Fatalf("%s still links %s", issue, l.Req)
			}
		}
	}
	if got := heldString(mustLinks(t, s, "demo", "ALL-1")); got != "ALL-1>DEMO/REQ-0000@0#tests:PAGE" {
		t.Errorf("wiki-2's link: %s", got)
	}
	if got := heldString(mustLinks(t, s, "acme", "ALL-1")); got != "ALL-1>DEMO/REQ-0000@0#tests:PAGE" {
		t.Errorf("acme's link: %s", got)
	}
	if reqs, err := s.GetRequirements(ctx, "demo", []tracker.ReqRef{mine[0], mine[619], legacy}); err != nil || len(reqs) != 0 {
		t.Errorf("requirements left: %v, %v", reqs, err)
	}
	if st := state(t, s, "demo", mine[0]); st.Rev != 0 || len(st.Links()) != 0 {
		t.Errorf("state left: %+v", st)
	}
	marks, err := s.PendingMarks(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	others := 0
	for _, m := range marks {
		if m.Tenant == "demo" && m.Ref.ApplinkID == "wiki-1" {
			t.Fatalf("mark left: %+v", m)
		}
		if m.Ref.Key == "REQ-0000" {
			others++
		}
	}
	if others != 2 {
		t.Errorf("%d marks of wiki-2 and acme, want 2", others)
	}
	if p, err := s.ListPending(ctx, "demo"); err != nil || len(p) != 1 || p[0].ApplinkID != "wiki-2" {
		t.Errorf("pending left: %+v, %v", p, err)
	}
	if n, err := s.PurgeApplink(ctx, "demo", "wiki-1"); err != nil || n != 0 {
		t.Errorf("second purge = %d, %v", n, err)
	}

	a := tracker.Applink{ID: "wiki-1", URL: "http://wiki.test", Mode: tracker.Auto, Version: 4, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := s.PutApplink(ctx, "demo", a, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteApplink(ctx, "acme", "wiki-1"); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("DeleteApplink of acme's = %v", err)
	}
	if err := s.DeleteApplink(ctx, "demo", "wiki-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetApplink(ctx, "demo", "wiki-1"); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("GetApplink after DeleteApplink = %v", err)
	}
	if err := s.DeleteApplink(ctx, "demo", "wiki-1"); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("second DeleteApplink = %v", err)
	}
}

func mustLinks(t *testing.T, s *trackertable.TrackerStore, tenant, issue string) []tracker.HeldLink {
	t.Helper()
	links, err := s.IssueLinks(context.Background(), tenant, issue)
	if err != nil {
		t.Fatal(err)
	}
	return links
}

func ptr[T any](v T) *T { return &v }
