package tracker_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

func linksMsg(id int64, key string, version int, issues ...string) tracker.Message {
	m := msg(id, tracker.LinksMessage, "DEMO", key)
	m.Links = []tracker.IssueRelationship{}
	for _, i := range issues {
		m.Links = append(m.Links, tracker.IssueRelationship{IssueKey: i, Relationship: "implements"})
	}
	m.LinksVersion = &version
	m.Origin = tracker.PageOrigin{PageID: "123", Title: "Specs"}
	return m
}

// heldOf renders a tenant's links: "PROJ-1>REQ-1:PAGE", "+T" when both
// sides hold it.
func heldOf(f *fixture) string {
	var parts []string
	for _, l := range f.store.held(tenant) {
		s := l.IssueKey + ">" + l.Req.Key + ":" + l.Holds.Origin()
		if l.Holds == tracker.PageHold|tracker.TrackerHold {
			s += "+T"
		}
		parts = append(parts, s)
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func setVersion(t *testing.T, f *fixture, v int) {
	t.Helper()
	if _, err := f.svc.SetVersion(context.Background(), tenant, "wiki-1", v); err != nil {
		t.Fatal(err)
	}
}

func TestLinksMessages(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		msgs     []tracker.Message
		tracker  []string // issues linked to REQ-1 on the tracker first
		want     string
		messages string // result messages, "|"-separated
	}{
		{name: "creates page links", msgs: []tracker.Message{linksMsg(1, "REQ-1", 1, "P-1", "P-2")},
			want: "P-1>REQ-1:PAGE P-2>REQ-1:PAGE", messages: "applied"},
		{name: "removes page links", msgs: []tracker.Message{linksMsg(1, "REQ-1", 1, "P-1", "P-2"), linksMsg(2, "REQ-1", 2, "P-2")},
			want: "P-2>REQ-1:PAGE", messages: "applied|applied"},
		{name: "empty set", msgs: []tracker.Message{linksMsg(1, "REQ-1", 1, "P-1"), linksMsg(2, "REQ-1", 2)},
			want: "", messages: "applied|applied"},
		{name: "older is ignored", msgs: []tracker.Message{linksMsg(1, "REQ-1", 5, "P-1"), linksMsg(2, "REQ-1", 4)},
			want: "P-1>REQ-1:PAGE", messages: "applied|ignored: older than version 5"},
		{name: "equal is applied again", msgs: []tracker.Message{linksMsg(1, "REQ-1", 5, "P-1"), linksMsg(2, "REQ-1", 5, "P-1")},
			want: "P-1>REQ-1:PAGE", messages: "applied|applied"},
		{name: "tracker holds untouched", tracker: []string{"P-1", "T-1"}, msgs: []tracker.Message{linksMsg(1, "REQ-1", 1, "P-1"), linksMsg(2, "REQ-1", 2)},
			want: "P-1>REQ-1:TRACKER T-1>REQ-1:TRACKER", messages: "applied|applied"},
		{name: "both hold", tracker: []string{"P-1"}, msgs: []tracker.Message{linksMsg(1, "REQ-1", 1, "P-1")},
			want: "P-1>REQ-1:PAGE+T", messages: "applied"},
		{name: "version-4 LINK is a page link a LINKS removes", msgs: []tracker.Message{linkMsg(1, "DEMO", "REQ-1", "P-1", "implements"), linksMsg(2, "REQ-1", 0)},
			want: "", messages: "applied|applied"},
		{name: "MOVED carries holds and version", msgs: []tracker.Message{linksMsg(1, "REQ-1", 7, "P-1"), movedMsg(2, "DEMO", "REQ-1", "DEMO", "REQ-2"), linksMsg(3, "REQ-2", 6)},
			want: "P-1>REQ-2:PAGE", messages: "applied|applied|ignored: older than version 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t)
			setVersion(t, f, 5)
			f.wiki.putLinks = func(tracker.WikiEndpoint, string, []tracker.RequirementLinks) error { return nil }
			for _, issue := range tc.tracker {
				if _, err := f.svc.CreateLinks(ctx, tenant, issue, []tracker.LinkInput{input("DEMO", "REQ-1", "implements", nil)}); err != nil {
					t.Fatal(err)
				}
			}
			var got []string
			for _, m := range tc.msgs {
				res, err := f.svc.Receive(ctx, tenant, "wiki-1", []tracker.Message{m})
				if err != nil || res[0].Status != tracker.OK {
					t.Fatalf("%+v, %v", res, err)
				}
				got = append(got, res[0].Message)
			}
			if strings.Join(got, "|") != tc.messages {
				t.Errorf("results %q, want %q", strings.Join(got, "|"), tc.messages)
			}
			if h := heldOf(f); h != tc.want {
				t.Errorf("links %q, want %q", h, tc.want)
			}
		})
	}
}

func TestTrackerEditsOfPageLinks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		version int
		edit    func(ctx context.Context, f *fixture) error
		wantErr string
		want    string
	}{
		{name: "delete at 5 is refused", version: 5, wantErr: "defined on wiki page 'Specs' (123): edit the page",
			edit: func(ctx context.Context, f *fixture) error {
				return f.svc.DeleteLinks(ctx, tenant, "P-1", []tracker.Link{{Req: ref("DEMO", "REQ-1"), Relationship: "implements"}})
			},
			want: "P-1>REQ-1:PAGE T-1>REQ-1:TRACKER"},
		{name: "replace by nothing at 5 is refused", version: 5, wantErr: "defined on wiki page 'Specs' (123): edit the page",
			edit: func(ctx context.Context, f *fixture) error {
				// The body names no applink: the page link's applink is
				// still at version 5.
				_, err := f.svc.ReplaceLinks(ctx, tenant, "P-1", "", nil)
				return err
			},
			want: "P-1>REQ-1:PAGE T-1>REQ-1:TRACKER"},
		{name: "replace away at 5 drops only the tracker's hold", version: 5, wantErr: "defined on wiki page",
			edit: func(ctx context.Context, f *fixture) error {
				if _, err := f.svc.CreateLinks(ctx, tenant, "P-1", []tracker.LinkInput{input("DEMO", "REQ-1", "implements", nil)}); err != nil {
					return err
				}
				_, err := f.svc.ReplaceLinks(ctx, tenant, "P-1", "", []tracker.LinkInput{input("DEMO", "REQ-3", "tests", nil)})
				return err
			},
			want: "P-1>REQ-1:PAGE T-1>REQ-1:TRACKER"},
		{name: "delete at 4 works as before", version: 4,
			edit: func(ctx context.Context, f *fixture) error {
				return f.svc.DeleteLinks(ctx, tenant, "P-1", []tracker.Link{{Req: ref("DEMO", "REQ-1"), Relationship: "implements"}})
			},
			want: "T-1>REQ-1:TRACKER"},
		{name: "creating a page link adds the tracker's hold", version: 5,
			edit: func(ctx context.Context, f *fixture) error {
				_, err := f.svc.CreateLinks(ctx, tenant, "P-1", []tracker.LinkInput{input("DEMO", "REQ-1", "implements", nil)})
				return err
			},
			want: "P-1>REQ-1:PAGE+T T-1>REQ-1:TRACKER"},
		{name: "replace keeping the page link", version: 5,
			edit: func(ctx context.Context, f *fixture) error {
				_, err := f.svc.ReplaceLinks(ctx, tenant, "P-1", "", []tracker.LinkInput{input("DEMO", "REQ-1", "implements", nil), input("DEMO", "REQ-2", "tests", nil)})
				return err
			},
			want: "P-1>REQ-1:PAGE+T P-1>REQ-2:TRACKER T-1>REQ-1:TRACKER"},
		{name: "tracker links go freely", version: 5,
			edit: func(ctx context.Context, f *fixture) error {
				return f.svc.DeleteLinks(ctx, tenant, "T-1", []tracker.Link{{Req: ref("DEMO", "REQ-1"), Relationship: "implements"}})
			},
			want: "P-1>REQ-1:PAGE"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			f := newFixture(t)
			var sent [][]tracker.RequirementLinks
			f.wiki.putLinks = func(_ tracker.WikiEndpoint, _ string, sets []tracker.RequirementLinks) error {
				sent = append(sent, sets)
				return nil
			}
			setVersion(t, f, tc.version)
			if _, err := f.svc.Receive(ctx, tenant, "wiki-1", []tracker.Message{linksMsg(1, "REQ-1", 1, "P-1")}); err != nil {
				t.Fatal(err)
			}
			if _, err := f.svc.CreateLinks(ctx, tenant, "T-1", []tracker.LinkInput{input("DEMO", "REQ-1", "implements", nil)}); err != nil {
				t.Fatal(err)
			}
			err := tc.edit(ctx, f)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("edit: %v", err)
			case tc.wantErr != "" && (!errors.Is(err, apperr.ErrConflict) || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("edit: %v, want a conflict %q", err, tc.wantErr)
			}
			if h := heldOf(f); h != tc.want {
				t.Errorf("links %q, want %q", h, tc.want)
			}
			// At every version the outbox sends the TRACKER set, said to
			// be the tracker's holds.
			for _, batch := range sent {
				for _, set := range batch {
					if !set.TrackerHolds {
						t.Errorf("a set sent without TrackerHolds: %+v", set)
					}
				}
			}
			if len(sent) > 0 {
				var tracked []string
				for _, l := range f.store.held(tenant) {
					if l.Req.Key == "REQ-1" && l.Holds&tracker.TrackerHold != 0 {
						tracked = append(tracked, l.IssueKey+":"+l.Relationship)
					}
				}
				slices.Sort(tracked)
				var got []string
				for _, set := range sent[len(sent)-1] {
					if set.Key != "REQ-1" {
						continue
					}
					for _, l := range set.Links {
						got = append(got, l.IssueKey+":"+l.Relationship)
					}
				}
				if len(got) > 0 && !slices.Equal(got, tracked) {
					t.Errorf("sent %v, want the TRACKER set %v", got, tracked)
				}
			}
			if tc.version == 5 && len(f.store.pendingMarks(tenant)) != 0 {
				t.Errorf("marks left after sends the wiki accepted: %v", f.store.pendingMarks(tenant))
			}
		})
	}
}

func TestPageLinkRefusalWithoutOrigin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	setVersion(t, f, 5)
	m := linksMsg(1, "REQ-1", 1, "P-1")
	m.Origin = tracker.PageOrigin{}
	if _, err := f.svc.Receive(ctx, tenant, "wiki-1", []tracker.Message{m}); err != nil {
		t.Fatal(err)
	}
	err := f.svc.DeleteLinks(ctx, tenant, "P-1", []tracker.Link{{Req: ref("DEMO", "REQ-1"), Relationship: "implements"}})
	if e := apperr.As(err); e == nil || e.Code != apperr.Conflict || e.Message != "defined on a wiki page: edit the page" {
		t.Errorf("%v", err)
	}
}

func TestLinksCheckedWithTheWiki(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		missing string
		down    bool
		want    apperr.Code
		msg     string
	}{
		{name: "missing", missing: "REQ-9", want: apperr.NotFound, msg: "requirement DEMO/REQ-9 not found in wiki 'wiki-1'"},
		{name: "down", down: true, want: apperr.BadGateway, msg: "nothing was changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			f.wiki.requirement = func(_ tracker.WikiEndpoint, space, key string, _ int) (tracker.WikiRequirement, error) {
				if tc.down {
					return tracker.WikiRequirement{}, apperr.BadGatewayf("wiki down")
				}
				if key == tc.missing {
					return tracker.WikiRequirement{}, apperr.NotFoundf("no")
				}
				return tracker.WikiRequirement{SpaceKey: space, Key: key, Status: "ACTIVE"}, nil
			}
			items := []tracker.LinkInput{input("DEMO", "REQ-1", "implements", ptr("<p>x</p>")), input("DEMO", "REQ-9", "implements", nil)}
			_, err := f.svc.CreateLinks(ctx, tenant, "P-1", items)
			if apperr.CodeOf(err) != tc.want || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("POST: %v, want %v %q", err, tc.want, tc.msg)
			}
			_, err = f.svc.ReplaceLinks(ctx, tenant, "P-1", "", items)
			if apperr.CodeOf(err) != tc.want {
				t.Errorf("PUT: %v, want %v", err, tc.want)
			}
			if links, reqs := f.store.state(tenant); len(links) != 0 || len(reqs) != 0 {
				t.Errorf("refused requests wrote %+v %+v", links, reqs)
			}
		})
	}
}

func TestTrackerOutbox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	setVersion(t, f, 5)
	fail := errors.New("HTTP 403: integration DISABLED")
	var sent []string
	f.wiki.putLinks = func(_ tracker.WikiEndpoint, serviceID string, sets []tracker.RequirementLinks) error {
		if fail != nil {
			return apperr.BadGatewayf("%s", fail)
		}
		for _, s := range sets {
			var issues []string
			for _, l := range s.Links {
				issues = append(issues, l.IssueKey)
			}
			sent = append(sent, fmt.Sprintf("%s=%s", s.Key, strings.Join(issues, ",")))
		}
		return nil
	}
	// A page link too: it is the wiki's, never sent back.
	if _, err := f.svc.Receive(ctx, tenant, "wiki-1", []tracker.Message{linksMsg(1, "REQ-1", 1, "P-1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.CreateLinks(ctx, tenant, "T-1", []tracker.LinkInput{input("DEMO", "REQ-1", "implements", nil), input("DEMO", "REQ-2", "tests", nil)}); err != nil {
		t.Fatalf("a failed send fails the edit: %v", err)
	}
	if marks := f.store.pendingMarks(tenant); len(marks) != 2 {
		t.Fatalf("marks after a failed send: %v", marks)
	}
	rep, err := f.svc.RunOutbox(ctx)
	if err != nil || rep.Failed != 2 || rep.Sent != 0 {
		t.Fatalf("run while the wiki refuses: %+v, %v", rep, err)
	}
	fail = nil
	rep, err = f.svc.RunOutbox(ctx)
	if err != nil || rep.Sent != 2 {
		t.Fatalf("run: %+v, %v", rep, err)
	}
	if got := strings.Join(sent, " "); got != "REQ-1=T-1 REQ-2=T-1" {
		t.Errorf("sent %q", got)
	}
	if marks := f.store.pendingMarks(tenant); len(marks) != 0 {
		t.Errorf("marks left: %v", marks)
	}
	if rep, _ := f.svc.RunOutbox(ctx); rep.Marks != 0 {
		t.Errorf("nothing left to send: %+v", rep)
	}
}

func TestModeAutoAppliesPending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	setVersion(t, f, 5)
	if _, err := f.svc.SetMode(ctx, tenant, "wiki-1", "MANUAL"); err != nil {
		t.Fatal(err)
	}
	res, err := f.svc.Receive(ctx, tenant, "wiki-1", []tracker.Message{linksMsg(1, "REQ-1", 1, "P-1", "P-2"), linksMsg(2, "REQ-1", 2, "P-2")})
	if err != nil || res[0].Message != tracker.PendingNotice {
		t.Fatalf("%+v, %v", res, err)
	}
	if h := heldOf(f); h != "" {
		t.Fatalf("MANUAL applied: %s", h)
	}
	if _, err := f.svc.SetMode(ctx, tenant, "wiki-1", "DISABLED"); err != nil {
		t.Fatal(err)
	}
	if h := heldOf(f); h != "" {
		t.Fatalf("DISABLED applied: %s", h)
	}
	if _, err := f.svc.SetMode(ctx, tenant, "wiki-1", "AUTO"); err != nil {
		t.Fatal(err)
	}
	if h := heldOf(f); h != "P-2>REQ-1:PAGE" {
		t.Errorf("after AUTO: %q", h)
	}
	if p, _ := f.store.ListPending(ctx, tenant); len(p) != 0 {
		t.Errorf("pending left: %+v", p)
	}
}

func TestSyncSendsTrackerSetAtVersion5(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	var sent []tracker.RequirementLinks
	f.wiki.putLinks = func(_ tracker.WikiEndpoint, _ string, sets []tracker.RequirementLinks) error {
		sent = sets
		return nil
	}
	setVersion(t, f, 5)
	if _, err := f.svc.Receive(ctx, tenant, "wiki-1", []tracker.Message{linksMsg(1, "REQ-1", 1, "P-1", "T-1")}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, f, "T-1", "REQ-1")
	f.wiki.requirement = wikiTexts(map[string]string{"REQ-1": "<p>x</p>"})
	res, err := f.svc.Sync(ctx, tenant, []string{"P-1"})
	if err != nil {
		t.Fatal(err)
	}
	if s := sentString(sent); s != "T-1:REQ-1" || linkString(res.Links) != "T-1:REQ-1" {
		t.Errorf("version 5 sync sent %q (answer %q), want the TRACKER set", s, linkString(res.Links))
	}
	setVersion(t, f, 4)
	if _, err := f.svc.Sync(ctx, tenant, []string{"P-1"}); err != nil {
		t.Fatal(err)
	}
	if s := sentString(sent); s != "P-1:REQ-1 T-1:REQ-1" {
		t.Errorf("version 4 sync sent %q, want every link", s)
	}
}

// TestConcurrentReplacesLeaveOneSet runs on the real store (DynamoDB
// Local): its revision conditions are what keeps concurrent edits apart.
func TestConcurrentReplacesLeaveOneSet(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixtureOn(t, newRacingStore(t))
	// The first write meets a concurrent writer: the edit reads again.
	mustCreate(t, f, "P-1", "REQ-1")
	sets := [][]string{{"REQ-1", "REQ-2"}, {"REQ-3"}, {"REQ-4", "REQ-5", "REQ-6"}}
	errs := make(chan error, len(sets))
	for _, keys := range sets {
		go func() {
			var items []tracker.LinkInput
			for _, k := range keys {
				items = append(items, input("DEMO", k, "implements", nil))
			}
			_, err := f.svc.ReplaceLinks(ctx, tenant, "P-1", "", items)
			errs <- err
		}()
	}
	for range sets {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	views, _ := f.svc.IssueLinks(ctx, tenant, "P-1", "")
	var got []string
	for _, v := range views {
		got = append(got, v.Req.Key)
	}
	if !slices.ContainsFunc(sets, func(s []string) bool { return slices.Equal(s, got) }) {
		t.Errorf("links %v are none of the sets sent", got)
	}
}
