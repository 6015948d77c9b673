package tracker_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

func msg(id int64, typ tracker.MessageType, space, key string) tracker.Message {
	return tracker.Message{ID: ptr(id), Type: typ, SpaceKey: space, Key: key, Estate: "_"}
}

func linkMsg(id int64, space, key, issue, rel string) tracker.Message {
	m := msg(id, tracker.LinkMessage, space, key)
	m.ObjectKey, m.Relationship = issue, rel
	return m
}

func updatedMsg(id int64, space, key, html, url string) tracker.Message {
	m := msg(id, tracker.Updated, space, key)
	m.NewHTMLExcerpt, m.NewURL = &html, &url
	return m
}

func movedMsg(id int64, space, key, newSpace, newKey string) tracker.Message {
	m := msg(id, tracker.Moved, space, key)
	m.NewSpaceKey, m.NewKey = newSpace, newKey
	return m
}

func statuses(rs []tracker.Result) string {
	var b strings.Builder
	for _, r := range rs {
		b.WriteString(string(r.Status)[:1])
	}
	return b.String()
}

func TestReceiveAuto(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	batch := []tracker.Message{
		linkMsg(1, "DEMO", "REQ-1", "PROJ-1", "implements"),
		linkMsg(2, "DEMO", "REQ-1", "PROJ-2", "implements"),
		updatedMsg(3, "DEMO", "REQ-1", `<p>Log in<script>alert(1)</script></p>`, "/requirements/DEMO/REQ-1"),
		linkMsg(4, "DEMO", "REQ-2", "PROJ-1", "tests"),
		{ID: ptr(int64(5)), Type: "RENAMED", SpaceKey: "DEMO", Key: "REQ-1"},
		msg(6, tracker.Deleted, "DEMO", ""),
		msg(7, tracker.Deleted, "DEMO", "REQ-2"),
	}
	res, err := f.svc.Receive(ctx, tenant, "wiki-1", batch)
	if err != nil {
		t.Fatal(err)
	}
	if got := statuses(res); got != "OOOOEEO" {
		t.Fatalf("statuses %s: %+v", got, res)
	}
	if *res[4].ID != 5 || !strings.Contains(res[4].Message, "RENAMED") || !strings.Contains(res[5].Message, "key") {
		t.Errorf("error results %+v %+v", res[4], res[5])
	}

	// The excerpt is stored once and seen on both issues, sanitized.
	for _, issue := range []string{"PROJ-1", "PROJ-2"} {
		views, err := f.svc.IssueLinks(ctx, tenant, issue, "implements")
		if err != nil || len(views) != 1 {
			t.Fatalf("%s: %+v, %v", issue, views, err)
		}
		v := views[0]
		if !strings.Contains(v.HTMLExcerpt, "Log in") || strings.Contains(v.HTMLExcerpt, "script") || v.GenericURL != "/requirements/DEMO/REQ-1" {
			t.Errorf("%s sees %+v", issue, v)
		}
	}
	views, _ := f.svc.IssueLinks(ctx, tenant, "PROJ-1", "tests")
	if len(views) != 1 || !views[0].Deleted {
		t.Errorf("deleted REQ-2 is not flagged on its link: %+v", views)
	}

	// The same batch again: the same state.
	links, reqs := f.store.state(tenant)
	if _, err := f.svc.Receive(ctx, tenant, "wiki-1", batch); err != nil {
		t.Fatal(err)
	}
	links2, reqs2 := f.store.state(tenant)
	if !reflect.DeepEqual(links, links2) || !reflect.DeepEqual(reqs, reqs2) {
		t.Errorf("second delivery changed the state:\n%+v\n%+v\n%+v\n%+v", links, links2, reqs, reqs2)
	}

	// An UPDATED message without excerpt empties it and keeps the URL.
	onlyURL := msg(1, tracker.Updated, "DEMO", "REQ-1")
	onlyURL.NewURL = ptr("/requirements/DEMO/REQ-1")
	if res, err := f.svc.Receive(ctx, tenant, "wiki-1", []tracker.Message{onlyURL}); err != nil || statuses(res) != "O" {
		t.Fatalf("%+v %v", res, err)
	}
	if views, _ := f.svc.IssueLinks(ctx, tenant, "PROJ-2", "implements"); views[0].HTMLExcerpt != "" || views[0].GenericURL != "/requirements/DEMO/REQ-1" {
		t.Errorf("after UPDATED without excerpt: %+v", views[0])
	}

	// UPDATED clears the deleted flag.
	if _, err := f.svc.Receive(ctx, tenant, "wiki-1", []tracker.Message{updatedMsg(1, "DEMO", "REQ-2", "<p>Back</p>", "/r")}); err != nil {
		t.Fatal(err)
	}
	views, _ = f.svc.IssueLinks(ctx, tenant, "PROJ-1", "tests")
	if views[0].Deleted || views[0].HTMLExcerpt != "<p>Back</p>" {
		t.Errorf("after UPDATED: %+v", views[0])
	}
}

func TestReceiveMoved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	setup := []tracker.Message{
		linkMsg(1, "DEMO", "REQ-1", "PROJ-1", "implements"),
		linkMsg(2, "DEMO", "REQ-1", "PROJ-2", "tests"),
		updatedMsg(3, "DEMO", "REQ-1", "<p>Text</p>", "/requirements/DEMO/REQ-1"),
	}
	if _, err := f.svc.Receive(ctx, tenant, "wiki-1", setup); err != nil {
		t.Fatal(err)
	}
	move := movedMsg(4, "DEMO", "REQ-1", "OTHER", "REQ-1")
	move.NewURL = ptr("/requirements/OTHER/REQ-1")
	for range 2 { // twice: idempotent
		res, err := f.svc.Receive(ctx, tenant, "wiki-1", []tracker.Message{move})
		if err != nil || statuses(res) != "O" {
			t.Fatalf("%+v, %v", res, err)
		}
		links, reqs := f.store.state(tenant)
		want := []tracker.Link{
			{IssueKey: "PROJ-1", Req: ref("OTHER", "REQ-1"), Relationship: "implements"},
			{IssueKey: "PROJ-2", Req: ref("OTHER", "REQ-1"), Relationship: "tests"},
		}
		if !reflect.DeepEqual(links, want) {
			t.Errorf("links after move: %+v", links)
		}
		// The source keeps its item (with no links): it remembers the
		// last LINKS version applied there, so a late LINKS for the old
		// key changes nothing.
		wantReqs := []tracker.Requirement{
			{Ref: ref("DEMO", "REQ-1"), HTMLExcerpt: "<p>Text</p>", GenericURL: "/requirements/DEMO/REQ-1"},
			{Ref: ref("OTHER", "REQ-1"), HTMLExcerpt: "<p>Text</p>", GenericURL: "/requirements/OTHER/REQ-1"},
		}
		if !reflect.DeepEqual(reqs, wantReqs) {
			t.Errorf("requirements after move: %+v", reqs)
		}
	}
}

func TestReceiveManualThenDisabled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	if _, err := f.svc.SetMode(ctx, tenant, "wiki-1", "MANUAL"); err != nil {
		t.Fatal(err)
	}
	batch := []tracker.Message{linkMsg(1, "DEMO", "REQ-1", "PROJ-1", "implements"), msg(2, "NOPE", "DEMO", "X")}
	for range 2 {
		res, err := f.svc.Receive(ctx, tenant, "wiki-1", batch)
		if err != nil || statuses(res) != "OE" || res[0].Message != tracker.PendingNotice {
			t.Fatalf("%+v, %v", res, err)
		}
	}
	if links, _ := f.store.state(tenant); len(links) != 0 {
		t.Errorf("MANUAL applied messages: %+v", links)
	}
	if p, _ := f.store.ListPending(ctx, tenant); len(p) != 1 {
		t.Errorf("%d pending messages, want 1 (the retried one replaced)", len(p))
	}

	if _, err := f.svc.SetMode(ctx, tenant, "wiki-1", "DISABLED"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Receive(ctx, tenant, "wiki-1", batch); !errors.Is(err, apperr.ErrConflict) {
		t.Errorf("DISABLED: %v, want conflict", err)
	}
}

func TestReceiveRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	one := []tracker.Message{linkMsg(1, "DEMO", "REQ-1", "PROJ-1", "implements")}
	if _, err := f.svc.Receive(ctx, "acme", "wiki-1", one); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("another tenant's applink: %v", err)
	}
	if links, _ := f.store.state("acme"); len(links) != 0 {
		t.Errorf("acme got links")
	}
	big := make([]tracker.Message, tracker.MaxBatch+1)
	if _, err := f.svc.Receive(ctx, tenant, "wiki-1", big); !errors.Is(err, apperr.ErrInvalid) {
		t.Errorf("oversized batch: %v", err)
	}
	boom := errors.New("disk on fire")
	f.store.fail = func(op string) error {
		if op == "WriteLinks" {
			return boom
		}
		return nil
	}
	if _, err := f.svc.Receive(ctx, tenant, "wiki-1", one); !errors.Is(err, boom) {
		t.Errorf("storage failure: %v, want the whole request to fail", err)
	}
}
