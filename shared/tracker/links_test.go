package tracker_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

func input(space, key, rel string, html *string) tracker.LinkInput {
	return tracker.LinkInput{Link: tracker.Link{Req: ref(space, key), Relationship: rel}, HTMLExcerpt: html}
}

func keysOf(vs []tracker.LinkView) string {
	var parts []string
	for _, v := range vs {
		parts = append(parts, v.IssueKey+"-"+v.Req.Key+"-"+v.Relationship)
	}
	return strings.Join(parts, " ")
}

func TestIssueLinksCRUD(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)

	got, err := f.svc.CreateLinks(ctx, tenant, "PROJ-1", []tracker.LinkInput{
		input("DEMO", "REQ-1", "implements", ptr(`<p onclick="x()">One<script>bad()</script></p>`)),
		input("DEMO", "REQ-2", "implements", nil),
		input("DEMO", "REQ-2", "tests", nil),
		input("DEMO", "REQ-1", "implements", nil), // duplicate in the same body
	})
	if err != nil {
		t.Fatal(err)
	}
	if k := keysOf(got); k != "PROJ-1-REQ-1-implements PROJ-1-REQ-2-implements PROJ-1-REQ-2-tests" {
		t.Fatalf("after create: %s", k)
	}
	if h := got[0].HTMLExcerpt; h != "<p>One</p>" {
		t.Errorf("sanitized excerpt %q", h)
	}
	// Creating again changes nothing: no duplicates.
	if got, _ = f.svc.CreateLinks(ctx, tenant, "PROJ-1", []tracker.LinkInput{input("DEMO", "REQ-1", "implements", nil)}); len(got) != 3 {
		t.Errorf("duplicate create: %s", keysOf(got))
	}

	// Another issue linking REQ-1 with a new excerpt: PROJ-1 sees it too.
	if _, err := f.svc.CreateLinks(ctx, tenant, "PROJ-2", []tracker.LinkInput{input("DEMO", "REQ-1", "implements", ptr("<b>New</b>"))}); err != nil {
		t.Fatal(err)
	}
	got, _ = f.svc.IssueLinks(ctx, tenant, "PROJ-1", "implements")
	if len(got) != 2 || got[0].HTMLExcerpt != "<p><b>New</b></p>" {
		t.Errorf("PROJ-1 does not see the new excerpt: %+v", got)
	}

	// Replace limited to a relationship removes only those links.
	got, err = f.svc.ReplaceLinks(ctx, tenant, "PROJ-1", "implements", []tracker.LinkInput{input("DEMO", "REQ-3", "implements", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if k := keysOf(got); k != "PROJ-1-REQ-2-tests PROJ-1-REQ-3-implements" {
		t.Errorf("after replace ?relationship=implements: %s", k)
	}
	// Replace without filter removes everything else.
	got, _ = f.svc.ReplaceLinks(ctx, tenant, "PROJ-1", "", []tracker.LinkInput{input("DEMO", "REQ-3", "implements", nil)})
	if k := keysOf(got); k != "PROJ-1-REQ-3-implements" {
		t.Errorf("after replace: %s", k)
	}

	// Delete (absent links are fine).
	if err := f.svc.DeleteLinks(ctx, tenant, "PROJ-1", []tracker.Link{
		{Req: ref("DEMO", "REQ-3"), Relationship: "implements"},
		{Req: ref("DEMO", "REQ-9"), Relationship: "implements"},
	}); err != nil {
		t.Fatal(err)
	}
	if got, _ = f.svc.IssueLinks(ctx, tenant, "PROJ-1", ""); len(got) != 0 {
		t.Errorf("after delete: %s", keysOf(got))
	}
	// PROJ-2 keeps its link and excerpt.
	if got, _ = f.svc.IssueLinks(ctx, tenant, "PROJ-2", ""); len(got) != 1 || got[0].HTMLExcerpt == "" {
		t.Errorf("PROJ-2: %+v", got)
	}
}

func TestIssueLinksRefusals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	f := newFixture(t)
	unknown := tracker.LinkInput{Link: tracker.Link{Req: tracker.ReqRef{ApplinkID: "wiki-9", SpaceKey: "S", Key: "K"}, Relationship: "r"}}
	if _, err := f.svc.CreateLinks(ctx, tenant, "PROJ-1", []tracker.LinkInput{unknown}); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("unknown applink: %v", err)
	}
	if _, err := f.svc.CreateLinks(ctx, "acme", "PROJ-1", []tracker.LinkInput{input("S", "K", "r", nil)}); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("another tenant's applink: %v", err)
	}
	bad := input("S", "K", "r", nil)
	bad.GenericURL = ptr("javascript:alert(1)")
	for name, items := range map[string][]tracker.LinkInput{
		"no relationship": {input("S", "K", "", nil)},
		"js url":          {bad},
		"huge excerpt":    {input("S", "K", "r", ptr(strings.Repeat("x", 300_000)))},
	} {
		_, err := f.svc.CreateLinks(ctx, tenant, "PROJ-1", items)
		if !errors.Is(err, apperr.ErrInvalid) {
			t.Errorf("%s: %v, want invalid", name, err)
		}
	}
	if _, err := f.svc.IssueLinks(ctx, tenant, "A#B", ""); !errors.Is(err, apperr.ErrInvalid) {
		t.Errorf("bad issue key: %v", err)
	}
	if links, _ := f.store.state(tenant); len(links) != 0 {
		t.Errorf("refused requests wrote links: %+v", links)
	}
}

func TestLinksWithoutURLGetTheGenericAddress(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	got, err := f.svc.CreateLinks(context.Background(), tenant, "PROJ-9", []tracker.LinkInput{input("DEMO", "REQ-7", "tests", nil)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].GenericURL != "/requirements/DEMO/REQ-7" {
		t.Fatalf("links %+v", got)
	}
}
