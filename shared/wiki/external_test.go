package wiki_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

func sp(s string) *string { return &s }

func setExt(t *testing.T, svc *wiki.Service, space, key string, changes ...requirement.ExternalChange) *requirement.Requirement {
	t.Helper()
	r, err := svc.SetExternal(context.Background(), tenant, space, key, changes)
	if err != nil {
		t.Fatalf("SetExternal %s/%s: %v", space, key, err)
	}
	return r
}

// props renders properties as key=value, external ones as ext:key=value.
func props(r *requirement.Requirement) []string {
	var out []string
	for _, p := range r.Properties {
		s := p.Key + "=" + p.Value
		if p.Type == requirement.External {
			s = "ext:" + s
		}
		out = append(out, s)
	}
	return out
}

func wantProps(t *testing.T, r *requirement.Requirement, want ...string) {
	t.Helper()
	if got := props(r); !slices.Equal(got, want) {
		t.Fatalf("%s/%s properties %q, want %q", r.SpaceKey, r.Key, got, want)
	}
}

func TestSetExternal(t *testing.T) {
	t.Parallel()
	svc, mem := newService(t)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "Log in", "High"), req("REQ-2", "Log out", "Low")))

	r := setExt(t, svc, "DEMO", "req-1", requirement.ExternalChange{Name: "Owner", Value: sp("bob")},
		requirement.ExternalChange{Name: "Cost", Value: sp("12")})
	wantProps(t, r, "Priority=High", "ext:Cost=12", "ext:Owner=bob")
	wantProps(t, mustRow(t, mem, "DEMO", "REQ-1"), "Priority=High", "ext:Cost=12", "ext:Owner=bob")

	// Names compare ignoring case: a set replaces value and spelling, a
	// removal (nil) drops the property, removing an absent one does nothing.
	r = setExt(t, svc, "DEMO", "REQ-1", requirement.ExternalChange{Name: "COST", Value: sp("13")},
		requirement.ExternalChange{Name: "owner"}, requirement.ExternalChange{Name: "Nope"})
	wantProps(t, r, "Priority=High", "ext:COST=13")

	// Nothing to change: nothing written.
	calls := mem.Calls["SetExternal"]
	setExt(t, svc, "DEMO", "REQ-1", requirement.ExternalChange{Name: "COST", Value: sp("13")}, requirement.ExternalChange{Name: "Owner"})
	if mem.Calls["SetExternal"] != calls {
		t.Fatal("an unchanged value was written")
	}
	// A new spelling alone is a change.
	r = setExt(t, svc, "DEMO", "REQ-1", requirement.ExternalChange{Name: "Cost", Value: sp("13")})
	wantProps(t, r, "Priority=High", "ext:Cost=13")
	if mem.Calls["SetExternal"] != calls+1 {
		t.Fatal("a new spelling was not written")
	}
}

func TestSetExternalRefuses(t *testing.T) {
	t.Parallel()
	svc, mem := newService(t)
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "Log in", "High", wt.Link("", "GHOST")), req("REQ-2", "Log out", "Low")))
	save(t, svc, "200", "OTHER", specs(req("O-1", "Other", "")))
	save(t, svc, "200", "MOVED", specs(req("O-1", "Other", "")))                             // OTHER/O-1 is MOVED
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "Log in", "High", wt.Link("", "GHOST")))) // REQ-2 is DELETED
	mem.PutRow("acme", &requirement.Requirement{SpaceKey: "DEMO", Key: "ACME-1", Status: requirement.Active, Origin: requirement.PageRef{PageID: "1"}})

	set := func(v string) []requirement.ExternalChange {
		return []requirement.ExternalChange{{Name: "Cost", Value: &v}}
	}
	notFound := []struct{ space, key, want string }{
		{"DEMO", "NOPE", "requirement DEMO/NOPE not found"},
		{"DEMO", "GHOST", "requirement DEMO/GHOST not found"}, // a stub
		{"DEMO", "REQ-2", "it is DELETED"},
		{"OTHER", "O-1", "it moved to MOVED/O-1"},
		{"DEMO", "ACME-1", "requirement DEMO/ACME-1 not found"}, // another tenant's
	}
	for _, tc := range notFound {
		_, err := svc.SetExternal(context.Background(), tenant, tc.space, tc.key, set("1"))
		if !errors.Is(err, apperr.ErrNotFound) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s/%s: %v, want not found %q", tc.space, tc.key, err, tc.want)
		}
	}

	invalid := []struct {
		changes []requirement.ExternalChange
		field   string
	}{
		{[]requirement.ExternalChange{{Name: "", Value: sp("1")}}, ""},
		{[]requirement.ExternalChange{{Name: " Cost", Value: sp("1")}}, " Cost"},
		{[]requirement.ExternalChange{{Name: "Co\nst", Value: sp("1")}}, "Co\nst"},
		{[]requirement.ExternalChange{{Name: strings.Repeat("n", 256)}}, strings.Repeat("n", 256)},
		{[]requirement.ExternalChange{{Name: "Cost", Value: sp("a\x00b")}}, "Cost"},
		{[]requirement.ExternalChange{{Name: "Cost", Value: sp(strings.Repeat("v", 2049))}}, "Cost"},
		{[]requirement.ExternalChange{{Name: "Cost", Value: sp("1")}, {Name: "COST"}}, "COST"},
	}
	for _, tc := range invalid {
		_, err := svc.SetExternal(context.Background(), tenant, "DEMO", "REQ-1", tc.changes)
		if e := apperr.As(err); e == nil || e.Code != apperr.Invalid || e.Field != tc.field {
			t.Errorf("%q: %v, want invalid naming %q", tc.changes[0].Name, err, tc.field)
		}
	}
	if _, err := svc.SetExternal(context.Background(), tenant, "DE MO", "REQ-1", set("1")); !errors.Is(err, apperr.ErrInvalid) {
		t.Errorf("bad space: %v", err)
	}

	// At most MaxExternal properties per requirement.
	var many []requirement.ExternalChange
	for i := range requirement.MaxExternal {
		many = append(many, requirement.ExternalChange{Name: "P" + strings.Repeat("x", i), Value: sp("v")})
	}
	setExt(t, svc, "DEMO", "REQ-1", many...)
	_, err := svc.SetExternal(context.Background(), tenant, "DEMO", "REQ-1", set("1"))
	if !errors.Is(err, apperr.ErrInvalid) || !strings.Contains(err.Error(), "at most 100") {
		t.Fatalf("101st property: %v", err)
	}
	// Replacing one of them is fine.
	setExt(t, svc, "DEMO", "REQ-1", requirement.ExternalChange{Name: "p", Value: sp("w")})
}

// TestExternalSurvivesPageOperations: saves (page properties changed),
// reindex, page view keep external properties; a move takes them to the
// new space's row; DELETED rows lose them for good.
func TestExternalSurvivesPageOperations(t *testing.T) {
	t.Parallel()
	svc, mem := newService(t)
	ctx := context.Background()
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "Log in", "High"), req("REQ-2", "Log out", "Low")))
	setExt(t, svc, "DEMO", "REQ-1", requirement.ExternalChange{Name: "Cost", Value: sp("12")})
	setExt(t, svc, "DEMO", "REQ-2", requirement.ExternalChange{Name: "Cost", Value: sp("7")})

	// A save that changes the page's properties and text.
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "Log in fast", "Low"), req("REQ-2", "Log out", "Low")))
	wantProps(t, mustRow(t, mem, "DEMO", "REQ-1"), "Priority=Low", "ext:Cost=12")

	// Reindex, then the page view that gathers what it flagged.
	if _, err := svc.Reindex(ctx, tenant, "bob", "100"); err != nil {
		t.Fatal(err)
	}
	wantProps(t, mustRow(t, mem, "DEMO", "REQ-1"), "Priority=Low", "ext:Cost=12")
	mem.PutRow(tenant, func() *requirement.Requirement {
		r := mustRow(t, mem, "DEMO", "REQ-1")
		r.HTMLNeedsUpdating = true
		r.SetPageProperties([]requirement.Property{{Key: "Priority", Value: "stale"}})
		return r
	}())
	rows, err := svc.ViewPage(ctx, tenant, "bob", "DEMO", "100")
	if err != nil {
		t.Fatal(err)
	}
	wantProps(t, rows[0], "Priority=Low", "ext:Cost=12")
	wantProps(t, mustRow(t, mem, "DEMO", "REQ-1"), "Priority=Low", "ext:Cost=12")

	// A move: the new space's row has them, the MOVED row no longer.
	save(t, svc, "100", "NEW", specs(req("REQ-1", "Log in fast", "Low"), req("REQ-2", "Log out", "Low")))
	wantProps(t, mustRow(t, mem, "NEW", "REQ-1"), "Priority=Low", "ext:Cost=12")
	if old := mustRow(t, mem, "DEMO", "REQ-1"); old.Status != requirement.Moved || len(old.ExternalProperties()) != 0 {
		t.Fatalf("moved row %s %q", old.Status, props(old))
	}

	// Dropped from the page: DELETED, and its external properties go for
	// good (defining the key again starts without them).
	save(t, svc, "100", "NEW", specs(req("REQ-1", "Log in fast", "Low")))
	if r := mustRow(t, mem, "NEW", "REQ-2"); r.Status != requirement.Deleted || len(r.ExternalProperties()) != 0 {
		t.Fatalf("deleted row %s %q", r.Status, props(r))
	}
	save(t, svc, "100", "NEW", specs(req("REQ-1", "Log in fast", "Low"), req("REQ-2", "Log out", "Low")))
	wantProps(t, mustRow(t, mem, "NEW", "REQ-2"), "Priority=Low")

	// The page deleted: DELETED rows without them.
	if err := svc.DeletePage(ctx, tenant, "bob", "100"); err != nil {
		t.Fatal(err)
	}
	wantProps(t, mustRow(t, mem, "NEW", "REQ-1"), "Priority=Low")
}

// TestSetExternalWhileLeaseHeld: while a page operation holds the page's
// lease, SetExternal writes nothing and answers a conflict after its
// attempts; once the lease is given back it writes.
func TestSetExternalWhileLeaseHeld(t *testing.T) {
	t.Parallel()
	svc, mem := newService(t)
	ctx := context.Background()
	save(t, svc, "100", "DEMO", specs(req("REQ-1", "Log in", "High")))
	l, err := mem.LeasePage(ctx, tenant, "100", 1)
	if err != nil {
		t.Fatal(err)
	}
	_, err = svc.SetExternal(ctx, tenant, "DEMO", "REQ-1", []requirement.ExternalChange{{Name: "Cost", Value: sp("1")}})
	if !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("while leased: %v", err)
	}
	wantProps(t, mustRow(t, mem, "DEMO", "REQ-1"), "Priority=High")
	if err := mem.ReleasePage(ctx, tenant, l); err != nil {
		t.Fatal(err)
	}
	setExt(t, svc, "DEMO", "REQ-1", requirement.ExternalChange{Name: "Cost", Value: sp("1")})
	wantProps(t, mustRow(t, mem, "DEMO", "REQ-1"), "Priority=High", "ext:Cost=1")
}
