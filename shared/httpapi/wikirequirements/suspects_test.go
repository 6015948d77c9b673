package wikirequirements_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/shared/requirement"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// TestClearSuspects: POST /rest/reqs/1/suspects/{spaceKey}/clear clears
// the marks of the matches of q in the path's space only and answers how
// many links were suspect; every refusal; another tenant clears nothing
// of demo's. The space of seedTrace: A-1's dependency on B-1, B-1's issue
// link PROJ-3 and OTHER/O-1's dependency on B-1 are suspect.
func TestClearSuspects(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seedTrace(t, s)
	clear := func(token, space, ctype, body string) (int, string) {
		t.Helper()
		rec := httpapitest.Do(s, "POST", "/rest/reqs/1/suspects/"+space+"/clear", token, ctype, body)
		return rec.Code, strings.TrimSpace(rec.Body.String())
	}
	suspects := func(space string) []string {
		t.Helper()
		a, _ := mustCoverage(t, s, "demo-wiki-user", space, params("columns", "to", "q", "suspect IS TRUE"))
		return keysOf2(a)
	}

	for _, tc := range []struct {
		name, token, space, ctype, body string
		code                            int
		named                           string
	}{
		{"q missing", "demo-wiki-user", "DEMO", "application/json", `{}`, 400, "q"},
		{"q null", "demo-wiki-user", "DEMO", "application/json", `{"q": null}`, 400, "q"},
		{"bad q", "demo-wiki-user", "DEMO", "application/json", `{"q": "key = 'A' AND"}`, 400, ""},
		{"bad space key", "demo-wiki-user", "D-1", "application/json", `{"q": ""}`, 400, "spaceKey"},
		{"malformed JSON", "demo-wiki-user", "DEMO", "application/json", `{"q": `, 400, ""},
		{"unknown field", "demo-wiki-user", "DEMO", "application/json", `{"q": "", "query": ""}`, 400, ""},
		{"wrong content type", "demo-wiki-user", "DEMO", "text/plain", `{"q": ""}`, 415, ""},
		{"no token", "", "DEMO", "application/json", `{"q": ""}`, 401, ""},
		{"link credential", httpapitest.LinkToken, "DEMO", "application/json", `{"q": ""}`, 403, ""},
	} {
		code, raw := clear(tc.token, tc.space, tc.ctype, tc.body)
		checkRefusal(t, tc.name, code, raw, tc.code, tc.named)
	}
	if got := suspects("DEMO"); !slices.Equal(got, []string{"A-1", "B-1"}) {
		t.Fatalf("after the refusals, suspect in DEMO: %v", got)
	}

	// Another tenant's space of that name: its own (nothing suspect).
	if code, raw := clear("acme-wiki-user", "DEMO", "application/json", `{"q": ""}`); code != 200 || raw != `{"cleared":0}` {
		t.Fatalf("acme clears DEMO: %d %s", code, raw)
	}
	// One requirement, by query: A-1's dependency on B-1.
	if code, raw := clear("demo-wiki-user", "DEMO", "application/json", `{"q": "key = 'A-1'"}`); code != 200 || raw != `{"cleared":1}` {
		t.Fatalf("clear A-1: %d %s", code, raw)
	}
	if got := suspects("DEMO"); !slices.Equal(got, []string{"B-1"}) {
		t.Fatalf("after clearing A-1, suspect in DEMO: %v", got)
	}
	// Clearing again clears nothing; "" is the whole space (B-1's PROJ-3),
	// never another space's (OTHER/O-1's dependency on B-1 stays).
	if code, raw := clear("demo-wiki-user", "DEMO", "application/json", `{"q": "key = 'A-1'"}`); code != 200 || raw != `{"cleared":0}` {
		t.Fatalf("clear A-1 again: %d %s", code, raw)
	}
	if code, raw := clear("demo-wiki-user", "DEMO", "application/json", `{"q": ""}`); code != 200 || raw != `{"cleared":1}` {
		t.Fatalf("clear DEMO: %d %s", code, raw)
	}
	if got := suspects("DEMO"); len(got) != 0 {
		t.Fatalf("after clearing DEMO, suspect in DEMO: %v", got)
	}
	if got := suspects("OTHER"); !slices.Equal(got, []string{"O-1"}) {
		t.Fatalf("clearing DEMO changed OTHER: suspect %v", got)
	}
	if code, raw := clear("demo-wiki-user", "OTHER", "application/json", `{"q": "suspect IS TRUE"}`); code != 200 || raw != `{"cleared":1}` {
		t.Fatalf("clear OTHER: %d %s", code, raw)
	}
	if got := suspects("OTHER"); len(got) != 0 {
		t.Fatalf("after clearing OTHER: suspect %v", got)
	}
}

// TestPageViewAndReindexMarkNothing: a requirement whose stored text
// differs from its page's (changed behind the page's back) is flagged by
// a reindex (status-only) and rewritten from the page by the next page
// view, which gathers its excerpt; neither marks a link, where a save
// doing the same write marks the dependency on it of a requirement of
// another page.
func TestPageViewAndReindexMarkNothing(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	ctx := context.Background()
	target := specs(wt.TR(wt.Def("T-1"), "<p>Keep logs.</p>", "", "", ""))
	s.save(t, "demo", "1", "DEMO", target)
	s.save(t, "demo", "2", "DEMO", specs(wt.TR(wt.Def("R-1"), "<p>Audit.</p>", "", wt.Link("", "T-1"), "")))
	text := func() string {
		t.Helper()
		r, err := s.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "T-1"})
		if err != nil {
			t.Fatal(err)
		}
		return r.Text
	}
	tamper := func() {
		t.Helper()
		r, err := s.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "T-1"})
		if err != nil {
			t.Fatal(err)
		}
		r.Text, r.HTMLExcerpt = "Keep nothing.", "<p>Keep nothing.</p>"
		if err := s.reqs.Put(ctx, "demo", []*requirement.Requirement{r}); err != nil {
			t.Fatal(err)
		}
	}
	suspects := func() []string {
		t.Helper()
		a, _ := mustCoverage(t, s, "demo-wiki-user", "DEMO", params("columns", "to", "q", "suspect IS TRUE"))
		return keysOf2(a)
	}
	tamper()
	if _, err := s.wiki.Reindex(ctx, "demo", "alice", "1"); err != nil {
		t.Fatal(err)
	}
	if got := suspects(); len(got) != 0 {
		t.Fatalf("after a reindex: suspect %v", got)
	}
	if _, err := s.wiki.ViewPage(ctx, "demo", "alice", "DEMO", "1"); err != nil {
		t.Fatal(err)
	}
	if got := text(); got != "Keep logs." {
		t.Fatalf("the page view did not rewrite T-1 from its page: %q", got)
	}
	if got := suspects(); len(got) != 0 {
		t.Fatalf("after the page view rewrote T-1: suspect %v", got)
	}
	// The same write by a save marks R-1's dependency on T-1.
	tamper()
	s.save(t, "demo", "1", "DEMO", target)
	if got := suspects(); !slices.Equal(got, []string{"R-1"}) {
		t.Fatalf("after a save rewriting T-1: suspect %v, want [R-1]", got)
	}
}

// TestClearSuspectsReadsEachMatchOnce: the clear reads the matches of its
// query in one pass (the suspect index item and the row of each), not in
// pages by offset, where each page would read every page before it again.
func TestClearSuspectsReadsEachMatchOnce(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	const n = 1200
	s.save(t, "demo", "1", "MANY", specs(wt.TR(wt.Def("T-1"), "<p>Target.</p>", "", "", "")))
	rows := make([]string, 0, n)
	for i := range n {
		rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("R-%04d", i)), "<p>Refines the target.</p>", "", wt.Link("", "T-1"), ""))
	}
	s.save(t, "demo", "2", "MANY", specs(rows...))
	s.save(t, "demo", "1", "MANY", specs(wt.TR(wt.Def("T-1"), "<p>Target, changed.</p>", "", "", "")))

	s.items.reset()
	rec := httpapitest.Do(s, "POST", "/rest/reqs/1/suspects/MANY/clear", "demo-wiki-user", "application/json", `{"q": "suspect IS TRUE"}`)
	if body := strings.TrimSpace(rec.Body.String()); rec.Code != 200 || body != fmt.Sprintf(`{"cleared":%d}`, n) {
		t.Fatalf("clear: %d %s", rec.Code, body)
	}
	// Pages of 500 by offset read 501 + 1,001 + 1,200 index items and as
	// many rows (5,404 items); one pass reads 1,200 of each.
	if read := s.items.get(); read > 2*n+2 {
		t.Fatalf("the clear read %d items for %d matches, want at most %d", read, n, 2*n+2)
	}
	a, _ := mustCoverage(t, s, "demo-wiki-user", "MANY", params("columns", "to", "q", "suspect IS TRUE"))
	if left := keysOf2(a); len(left) != 0 {
		t.Fatalf("still suspect: %v", left)
	}
}
