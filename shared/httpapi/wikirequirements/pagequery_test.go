package wikirequirements_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// savePage stores a page with its title.
func (s *server) savePage(t *testing.T, tenant, id, space, title, body string) {
	t.Helper()
	if _, err := s.wiki.SavePage(context.Background(), tenant, "alice", wiki.PageInput{ID: id, SpaceKey: space, Title: title, Body: body}); err != nil {
		t.Fatal(err)
	}
}

// TestSearchPageForms runs the original's page forms through the search
// API, as a client written for the original sends them: `page = 'Title'`
// (case-insensitive, the page's current title) and `page ~ <id>` (defined
// on the page or referenced by it), with ids and titles mixed.
func TestSearchPageForms(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	// 467382 "Login Specs": LS-1 refines OTHER/O-2 and LS-9 (defined
	// nowhere: a stub, never an answer), LS-2. 467383 "Design", then
	// titled "Release 1" by a baseline (its rows keep "Design"): O-2,
	// O-3 refines DEMO/LS-1. Page 10 is titled "467382"; page 11 "100%
	// done". acme has a page 467382 "Login Specs" too.
	s.savePage(t, "demo", "467382", "DEMO", "Login Specs", specs(
		wt.TR(wt.Def("LS-1"), "<p>Log in.</p>", "High", wt.Link("OTHER", "O-2")+wt.Link("", "LS-9"), ""),
		wt.TR(wt.Def("LS-2"), "<p>Log out.</p>", "", "", ""),
	))
	s.savePage(t, "demo", "467383", "OTHER", "Design", specs(
		wt.TR(wt.Def("O-2"), "<p>Screens.</p>", "", "", ""),
		wt.TR(wt.Def("O-3"), "<p>Flows.</p>", "", wt.Link("DEMO", "LS-1"), ""),
	))
	s.savePage(t, "demo", "10", "DEMO", "467382", specs(wt.TR(wt.Def("T-1"), "<p>Titled like an id.</p>", "", "", "")))
	s.savePage(t, "demo", "11", "DEMO", "100% done", specs(wt.TR(wt.Def("P-1"), "<p>Percent.</p>", "", "", "")))
	s.savePage(t, "acme", "467382", "DEMO", "Login Specs", specs(wt.TR(wt.Def("ACME-1"), "<p>Acme.</p>", "", "", "")))
	job := &baseline.Job{Tenant: "demo", Owner: "test", Baseline: baseline.Baseline{
		SpaceKey: "OTHER", Number: 1, Name: "Release 1", CEO: "467383", CreatedAt: time.Now()}}
	if err := s.bl.Begin(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	if err := s.bl.Commit(context.Background(), job, true); err != nil {
		t.Fatal(err)
	}

	const user = "demo-wiki-user"
	tests := []struct {
		q    string
		keys []string
	}{
		{`page = 'login specs'`, []string{"DEMO/LS-1", "DEMO/LS-2"}},
		{`PAGE == 'LOGIN SPECS'`, []string{"DEMO/LS-1", "DEMO/LS-2"}},
		// A value is an id and a title at once.
		{`page = 467382`, []string{"DEMO/LS-1", "DEMO/LS-2", "DEMO/T-1"}},
		{`page = '467382'`, []string{"DEMO/LS-1", "DEMO/LS-2", "DEMO/T-1"}},
		{`page = 10`, []string{"DEMO/T-1"}},
		// The current title, not the one the rows were saved with.
		{`page = 'Design'`, []string{}},
		{`page = 'release 1'`, []string{"OTHER/O-2", "OTHER/O-3"}},
		{`page ~ 'Release 1'`, []string{"DEMO/LS-1", "OTHER/O-2", "OTHER/O-3"}},
		{`page ~ 'Design'`, []string{}},
		{`page ~ 'Login Specs'`, []string{"DEMO/LS-1", "DEMO/LS-2", "OTHER/O-2"}},
		{`page ~ 467382`, []string{"DEMO/LS-1", "DEMO/LS-2", "OTHER/O-2", "DEMO/T-1"}},
		{`page ~ 'login specs' AND NOT page = 'login specs'`, []string{"OTHER/O-2"}},
		{`page ~ 'Login Specs' AND space = 'OTHER'`, []string{"OTHER/O-2"}},
		{`page ~ 467383 OR page = 11`, []string{"DEMO/LS-1", "OTHER/O-2", "OTHER/O-3", "DEMO/P-1"}},
		{`page ~ '100\\% done'`, []string{"DEMO/P-1"}},
		{`page IN ('100% done', 'Release 1')`, []string{"OTHER/O-2", "OTHER/O-3", "DEMO/P-1"}},
		{`page != 'Login Specs'`, []string{"OTHER/O-2", "OTHER/O-3", "DEMO/P-1", "DEMO/T-1"}},
		{`page NOT IN ('Login Specs', 'release 1')`, []string{"DEMO/P-1", "DEMO/T-1"}},
		{`page IS NULL`, []string{}},
		{`page = 'nothing' OR page ~ 999`, []string{}},
	}
	for _, tt := range tests {
		a := search2(t, s, user, "DEMO", params("q", tt.q))
		if a.code != 200 || !slices.Equal(a.keys(), tt.keys) {
			t.Errorf("q=%s: %d %v, want %v (%s)", tt.q, a.code, a.keys(), tt.keys, a.raw)
		}
	}

	// A pattern after `page ~` is refused, with the value's position.
	a := search2(t, s, user, "DEMO", params("q", "key = 'LS-1' OR page ~ '46738%'"))
	if a.code != 400 || a.body.Position == nil || *a.body.Position != 23 ||
		!strings.Contains(a.body.Message, "'page ~' finds the requirements defined on or referenced by one page and takes its id or title, not a pattern") {
		t.Errorf("page ~ with a wildcard: %d %s", a.code, a.raw)
	}

	// acme's page of the same id and title is acme's only.
	if a := search2(t, s, "acme-wiki-user", "DEMO", params("q", "page ~ 'login specs'")); !slices.Equal(a.keys(), []string{"DEMO/ACME-1"}) {
		t.Errorf("acme: %v", a.keys())
	}
}
