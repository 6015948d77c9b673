package dynamo_test

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
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

func newTrackerStore(t *testing.T) *dynamo.TrackerStore {
	t.Helper()
	env := testenv.AWS(t)
	return dynamo.NewTrackerStore(env.DynamoDB, env.TrackerTable)
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

func TestTrackerLinks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := newTrackerStore(t)
	links := []tracker.Link{
		link("A", "DEMO", "R1", 0, "implements"),
		link("A", "DEMO", "R1", 0, "tests"),
		link("A", "DEMO", "R1", 2, "implements"), // a baseline copy is another requirement
		link("B", "DEMO", "R1", 0, "implements"),
		link("A", "DEMO", "R1", 0, "implements"), // duplicate in one call
	}
	// Many links in one call: more than one BatchWriteItem chunk.
	for i := range 40 {
		links = append(links, link("C", "DEMO", fmt.Sprintf("K%02d", i), 0, "implements"))
	}
	if err := s.PutLinks(ctx, "demo", links); err != nil {
		t.Fatal(err)
	}
	if err := s.PutLinks(ctx, "demo", links[:1]); err != nil { // again: still one item
		t.Fatal(err)
	}
	if err := s.PutLinks(ctx, "acme", []tracker.Link{link("A", "DEMO", "R1", 0, "acme-only")}); err != nil {
		t.Fatal(err)
	}

	got, err := s.IssueLinks(ctx, "demo", "A")
	want := []tracker.Link{links[0], links[2], links[1]}
	if err != nil || !reflect.DeepEqual(sortLinks(got), sortLinks(want)) {
		t.Errorf("IssueLinks(A) = %+v, %v", got, err)
	}
	if got, _ := s.IssueLinks(ctx, "demo", "C"); len(got) != 40 {
		t.Errorf("IssueLinks(C) has %d links", len(got))
	}
	got, err = s.RequirementLinks(ctx, "demo", links[0].Req)
	want = []tracker.Link{links[0], links[1], links[3]}
	if err != nil || !reflect.DeepEqual(sortLinks(got), sortLinks(want)) {
		t.Errorf("RequirementLinks(R1) = %+v, %v", got, err)
	}
	if got, _ := s.IssueLinks(ctx, "demo", "nobody"); len(got) != 0 {
		t.Errorf("links of an issue without links: %+v", got)
	}

	if err := s.DeleteLinks(ctx, "demo", []tracker.Link{links[0], links[0], link("A", "X", "Y", 0, "z")}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.IssueLinks(ctx, "demo", "A"); len(got) != 2 {
		t.Errorf("after delete: %+v", got)
	}
	if got, _ := s.IssueLinks(ctx, "acme", "A"); len(got) != 1 || got[0].Relationship != "acme-only" {
		t.Errorf("acme's links: %+v", got)
	}
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
	if err := s.DeleteRequirement(ctx, "demo", refs[0]); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.GetRequirements(ctx, "demo", refs[:2]); len(got) != 1 {
		t.Errorf("after delete: %+v", got)
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
	batch := []tracker.Pending{
		{ApplinkID: "wiki-1", ReceivedAt: t0, Index: 0, Message: m1},
		{ApplinkID: "wiki-1", ReceivedAt: t0, Index: 1, Message: m2},
		{ApplinkID: "wiki-2", ReceivedAt: t0, Index: 2, Message: m3},
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
	want := []tracker.Pending{batch[1], batch[2], {ApplinkID: "wiki-1", ReceivedAt: t0.Add(time.Minute), Message: again}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("ListPending:\n got %+v\nwant %+v", got, want)
	}
	if *got[0].Message.NewHTMLExcerpt != "" || got[0].Message.NewURL != nil {
		t.Error("empty and absent values are not kept apart")
	}
	if other, _ := s.ListPending(ctx, "acme"); len(other) != 0 {
		t.Errorf("acme sees demo's pending messages")
	}
	if err := s.DeletePending(ctx, "demo", got[:2]); err != nil {
		t.Fatal(err)
	}
	if rest, _ := s.ListPending(ctx, "demo"); len(rest) != 1 || *rest[0].Message.ID != 7 {
		t.Errorf("after delete: %+v", rest)
	}
}
