package tracker_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// wikiTexts answers Requirement from a map key → excerpt (404 when absent).
func wikiTexts(texts map[string]string) func(tracker.WikiEndpoint, string, string, int) (tracker.WikiRequirement, error) {
	return func(_ tracker.WikiEndpoint, space, key string, _ int) (tracker.WikiRequirement, error) {
		html, ok := texts[key]
		if !ok {
			return tracker.WikiRequirement{}, apperr.NotFoundf("requirement %s/%s not found", space, key)
		}
		return tracker.WikiRequirement{SpaceKey: space, Key: key, Status: "ACTIVE", HTMLExcerpt: html, GenericURL: "/requirements/" + space + "/" + key}, nil
	}
}

func sentString(sets []tracker.RequirementLinks) string {
	var parts []string
	for _, s := range sets {
		for _, l := range s.Links {
			parts = append(parts, l.IssueKey+":"+s.Key)
		}
		if len(s.Links) == 0 {
			parts = append(parts, "none:"+s.Key)
		}
	}
	return strings.Join(parts, " ")
}

func linkString(links []tracker.Link) string {
	var parts []string
	for _, l := range links {
		parts = append(parts, l.IssueKey+":"+l.Req.Key)
	}
	return strings.Join(parts, " ")
}

func TestSyncRule(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	mustCreate(t, f, "A-1", "R1", "R2")
	mustCreate(t, f, "B-1", "R2")
	mustCreate(t, f, "C-1", "R3")

	f.wiki.requirement = wikiTexts(map[string]string{"R1": "<p>one v2</p>", "R2": "<p>two v2</p>", "R3": "<p>three</p>"})
	var sent []tracker.RequirementLinks
	f.wiki.putLinks = func(w tracker.WikiEndpoint, serviceID string, links []tracker.RequirementLinks) error {
		if w.Token != "wt" || w.BaseURL != "http://wiki.test" || serviceID != "wiki-1" {
			t.Errorf("PutLinks to %+v %s", w, serviceID)
		}
		sent = links
		return nil
	}
	res, err := f.svc.Sync(ctx, tenant, []string{"A-1", " A-1", ""})
	if err != nil {
		t.Fatal(err)
	}
	if got := linkString(res.Links); got != "A-1:R1 A-1:R2 B-1:R2" {
		t.Errorf("links answered: %s", got)
	}
	if got := sentString(sent); got != "A-1:R1 A-1:R2 B-1:R2" {
		t.Errorf("links sent: %s", got)
	}
	if res.Requirements != 2 || f.wiki.requirements != 2 {
		t.Errorf("refreshed %d, fetched %d; want 2, 2", res.Requirements, f.wiki.requirements)
	}
	views, _ := f.svc.IssueLinks(ctx, tenant, "B-1", "")
	if views[0].HTMLExcerpt != "<p>two v2</p>" || views[0].GenericURL != "/requirements/DEMO/R2" {
		t.Errorf("B does not see the refreshed excerpt: %+v", views[0])
	}
}

func mustCreate(t *testing.T, f *fixture, issue string, keys ...string) {
	t.Helper()
	var items []tracker.LinkInput
	for _, k := range keys {
		items = append(items, input("DEMO", k, "implements", ptr("<p>old "+k+"</p>")))
	}
	if _, err := f.svc.CreateLinks(context.Background(), tenant, issue, items); err != nil {
		t.Fatal(err)
	}
}

func TestSyncWikiDownChangesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	mustCreate(t, f, "A-1", "R1", "R2")
	if _, err := f.svc.SetMode(ctx, tenant, "wiki-1", "MANUAL"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Receive(ctx, tenant, "wiki-1", []tracker.Message{linkMsg(1, "DEMO", "R1", "A-1", "tests")}); err != nil {
		t.Fatal(err)
	}
	links, reqs := f.store.state(tenant)
	f.wiki.requirement = func(_ tracker.WikiEndpoint, space, key string, _ int) (tracker.WikiRequirement, error) {
		if key == "R2" {
			return tracker.WikiRequirement{}, apperr.BadGatewayf("wiki at http://wiki.test is unreachable")
		}
		return wikiTexts(map[string]string{"R1": "x"})(tracker.WikiEndpoint{}, space, key, 0)
	}
	_, err := f.svc.Sync(ctx, tenant, []string{"A-1"})
	if apperr.CodeOf(err) != apperr.BadGateway || !strings.Contains(apperr.As(err).Message, "unreachable") {
		t.Fatalf("err = %v, want a 502 with the wiki's message", err)
	}
	links2, reqs2 := f.store.state(tenant)
	if !reflect.DeepEqual(links, links2) || !reflect.DeepEqual(reqs, reqs2) {
		t.Error("a failed sync changed the tracker")
	}
	if p, _ := f.store.ListPending(ctx, tenant); len(p) != 1 {
		t.Errorf("pending messages: %d, want 1", len(p))
	}
}

func TestSyncAppliesPendingMessages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	mustCreate(t, f, "A-1", "R1")
	mustCreate(t, f, "Z-1", "R9")
	if _, err := f.svc.SetMode(ctx, tenant, "wiki-1", "MANUAL"); err != nil {
		t.Fatal(err)
	}
	res, err := f.svc.Receive(ctx, tenant, "wiki-1", []tracker.Message{
		linkMsg(1, "DEMO", "R5", "A-1", "tests"),    // covers issue A
		movedMsg(2, "DEMO", "R1", "DEMO", "R1new"),  // covers R1, linked to A
		linkMsg(3, "DEMO", "R1new", "B-1", "tests"), // covers R1new, the target of 2
		linkMsg(4, "DEMO", "R9", "Z-1", "tests"),    // not covered
	})
	if err != nil || statuses(res) != "OOOO" {
		t.Fatalf("%+v %v", res, err)
	}
	f.wiki.requirement = wikiTexts(map[string]string{"R5": "<p>five</p>", "R1new": "<p>one</p>", "R1": "<p>moved</p>"})
	var sent []tracker.RequirementLinks
	f.wiki.putLinks = func(_ tracker.WikiEndpoint, _ string, links []tracker.RequirementLinks) error {
		// The sync's own callback carries the most sets; the
		// tracker-side outbox may also send the moved requirement's
		// TRACKER set.
		if len(links) >= len(sent) {
			sent = links
		}
		return nil
	}
	out, err := f.svc.Sync(ctx, tenant, []string{"A-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := linkString(out.Links); got != "A-1:R1new B-1:R1new A-1:R5" {
		t.Errorf("links: %s", got)
	}
	if got := sentString(sent); got != "A-1:R1new B-1:R1new A-1:R5" {
		t.Errorf("sent: %s", got)
	}
	p, _ := f.store.ListPending(ctx, tenant)
	if len(p) != 1 || *p[0].Message.ID != 4 {
		t.Errorf("pending left: %+v", p)
	}
	if v, _ := f.svc.IssueLinks(ctx, tenant, "A-1", "implements"); len(v) != 1 || v[0].Req.Key != "R1new" || v[0].HTMLExcerpt != "<p>one</p>" {
		t.Errorf("A implements: %+v", v)
	}
}

func TestSyncMissingAndDeletedRequirements(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	mustCreate(t, f, "A-1", "GONE", "DEL", "MOV")
	f.wiki.requirement = func(_ tracker.WikiEndpoint, space, key string, _ int) (tracker.WikiRequirement, error) {
		switch key {
		case "DEL":
			return tracker.WikiRequirement{SpaceKey: space, Key: key, Status: "DELETED", HTMLExcerpt: "<p>last</p>"}, nil
		case "MOV":
			return tracker.WikiRequirement{SpaceKey: space, Key: key, Status: "MOVED", NewSpaceKey: "NEW", NewKey: "MOV", HTMLExcerpt: "<p>m</p>"}, nil
		}
		return tracker.WikiRequirement{}, apperr.NotFoundf("not found")
	}
	var sent []tracker.RequirementLinks
	f.wiki.putLinks = func(_ tracker.WikiEndpoint, _ string, links []tracker.RequirementLinks) error {
		// The sync's own callback carries the most sets; the
		// tracker-side outbox may also send the moved requirement's
		// TRACKER set.
		if len(links) >= len(sent) {
			sent = links
		}
		return nil
	}
	res, err := f.svc.Sync(ctx, tenant, []string{"A-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := sentString(sent); got != "A-1:DEL A-1:MOV" || res.Requirements != 2 {
		t.Errorf("sent %s, refreshed %d", got, res.Requirements)
	}
	views, _ := f.svc.IssueLinks(ctx, tenant, "A-1", "")
	got := map[string]string{}
	for _, v := range views {
		got[v.Req.SpaceKey+"/"+v.Req.Key] = fmt.Sprintf("%v %s", v.Deleted, v.HTMLExcerpt)
	}
	want := map[string]string{
		"DEMO/GONE": "true <p>old GONE</p>",
		"DEMO/DEL":  "true <p>last</p>",
		"NEW/MOV":   "false <p>m</p>",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("after sync: %v", got)
	}
}

func TestSyncRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	for name, issues := range map[string][]string{
		"none":     nil,
		"blank":    {" ", ""},
		"bad key":  {"A#1"},
		"too many": strings.Split(strings.Repeat("X-1,", tracker.MaxSyncIssues)+"Y", ","),
	} {
		if name == "too many" {
			for i := range issues {
				issues[i] = fmt.Sprintf("P-%d", i)
			}
		}
		if _, err := f.svc.Sync(ctx, tenant, issues); !errors.Is(err, apperr.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	// No wiki token: a conflict naming the fix. (The link is made while
	// the token is there: creating links checks them with the wiki.)
	mustCreate(t, f, "A-1", "R1")
	if _, err := f.svc.Register(ctx, tenant, "wiki-1", tracker.Registration{URL: "http://wiki.test", WikiToken: ptr("")}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Sync(ctx, tenant, []string{"A-1"}); !errors.Is(err, apperr.ErrConflict) {
		t.Errorf("no wiki token: %v", err)
	}
	// DISABLED applinks are left out: nothing to send.
	if _, err := f.svc.SetMode(ctx, tenant, "wiki-1", "DISABLED"); err != nil {
		t.Fatal(err)
	}
	res, err := f.svc.Sync(ctx, tenant, []string{"A-1"})
	if err != nil || len(res.Links) != 0 {
		t.Errorf("disabled: %+v, %v", res, err)
	}
}

func TestSyncLinksCallbackFails(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	mustCreate(t, f, "A-1", "R1")
	f.wiki.requirement = wikiTexts(map[string]string{"R1": "<p>fresh</p>"})
	f.wiki.putLinks = func(tracker.WikiEndpoint, string, []tracker.RequirementLinks) error {
		return apperr.BadGatewayf("wiki answered 500: boom")
	}
	_, err := f.svc.Sync(context.Background(), tenant, []string{"A-1"})
	if apperr.CodeOf(err) != apperr.BadGateway || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v", err)
	}
	views, _ := f.svc.IssueLinks(context.Background(), tenant, "A-1", "")
	if views[0].HTMLExcerpt != "<p>fresh</p>" {
		t.Errorf("excerpt %q: the fetched text is the truth and is kept", views[0].HTMLExcerpt)
	}
}
