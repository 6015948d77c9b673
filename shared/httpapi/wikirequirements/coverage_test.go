package wikirequirements_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// getCoverage calls the coverage and returns the status and the raw body.
func getCoverage(t *testing.T, h http.Handler, token, space string, params url.Values) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/rest/reqs/1/coverage/"+url.PathEscape(space)+"?"+params.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("coverage %v: content type %q", params, ct)
	}
	return rec.Code, rec.Body.String()
}

// coverageAnswer is the JSON of a coverage answer.
type coverageAnswer struct {
	Columns []struct {
		Name           string
		Covered, Total int
	}
	Results []struct {
		SpaceKey, Key, Text string
		Cells               map[string][]string
	}
	Offset, Limit, Count int
	HasMore              bool
}

// mustCoverage calls the coverage, expects 200 and decodes the answer.
func mustCoverage(t *testing.T, h http.Handler, token, space string, params url.Values) (coverageAnswer, string) {
	t.Helper()
	code, raw := getCoverage(t, h, token, space, params)
	if code != http.StatusOK {
		t.Fatalf("coverage %v: %d %s", params, code, raw)
	}
	var a coverageAnswer
	if err := json.Unmarshal([]byte(raw), &a); err != nil {
		t.Fatal(err)
	}
	if a.Count != len(a.Results) {
		t.Fatalf("coverage %v: count %d, %d results", params, a.Count, len(a.Results))
	}
	return a, raw
}

// traceSpecs is a page table with two dependency columns (refines,
// depends_on) and two issue columns (implements, tests).
func traceSpecs(rows ...string) string {
	return wt.Table(append([]string{wt.TH("Key", "Description", "Refines", "Depends On", "Implements", "Tests")}, rows...)...)
}

// seedTrace stores DEMO with every kind of link, and a suspect one:
// A-1 refines B-1 and depends on C-1, implements PROJ-1 and tests PROJ-2;
// B-1 implements PROJ-3; D-1 refines OTHER/O-1; OTHER/O-1 refines B-1.
// Then B-1's text changes, which marks A-1's dependency on B-1, O-1's,
// and B-1's link to PROJ-3 suspect. acme has a DEMO of its own.
func seedTrace(t *testing.T, s *server) {
	t.Helper()
	page := func(b1 string) string {
		return traceSpecs(
			wt.TR(wt.Def("A-1"), "<p>Log in.</p>", wt.Link("", "B-1"), wt.Link("", "C-1"), wt.Jira("PROJ-1", "jira-1"), wt.Jira("PROJ-2", "")),
			wt.TR(wt.Def("B-1"), "<p>"+b1+"</p>", "", "", wt.Jira("PROJ-3", ""), ""),
			wt.TR(wt.Def("C-1"), "<p>=HYPERLINK(\"x\")</p>", "", "", "", ""),
			wt.TR(wt.Def("D-1"), "<p>Audit.</p>", wt.Link("OTHER", "O-1"), "", "", ""),
		)
	}
	s.save(t, "demo", "1", "DEMO", page("Users, kept."))
	s.save(t, "demo", "2", "OTHER", traceSpecs(wt.TR(wt.Def("O-1"), "<p>Other.</p>", wt.Link("DEMO", "B-1"), "", "", "")))
	s.save(t, "demo", "1", "DEMO", page("Users, kept a year."))
	s.save(t, "acme", "1", "DEMO", traceSpecs(wt.TR(wt.Def("A-1"), "<p>Acme.</p>", "", "", wt.Jira("ACME-1", ""), "")))
}

const allColumns = "jira,jira@tests,to,to@Refines,from,from@depends on"

// TestCoverageMatrix checks the whole matrix of a hand-made space: every
// kind of column, with and without a relationship, a suspect dependency
// and issue link, a dependency on another space and one from it, gaps.
func TestCoverageMatrix(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seedTrace(t, s)
	_, raw := mustCoverage(t, s, "demo-wiki-user", "DEMO", params("columns", allColumns))
	want := `{"columns": [
	  {"name": "jira", "covered": 2, "total": 4}, {"name": "jira@tests", "covered": 1, "total": 4},
	  {"name": "to", "covered": 2, "total": 4}, {"name": "to@refines", "covered": 2, "total": 4},
	  {"name": "from", "covered": 2, "total": 4}, {"name": "from@depends_on", "covered": 1, "total": 4}],
	 "results": [
	  {"spaceKey": "DEMO", "key": "A-1", "text": "Log in.", "cells": {"jira": ["PROJ-1", "PROJ-2"], "jira@tests": ["PROJ-2"],
	    "to": ["DEMO/B-1 (suspect)", "DEMO/C-1"], "to@refines": ["DEMO/B-1 (suspect)"], "from": [], "from@depends_on": []}},
	  {"spaceKey": "DEMO", "key": "B-1", "text": "Users, kept a year.", "cells": {"jira": ["PROJ-3 (suspect)"], "jira@tests": [],
	    "to": [], "to@refines": [], "from": ["DEMO/A-1", "OTHER/O-1"], "from@depends_on": []}},
	  {"spaceKey": "DEMO", "key": "C-1", "text": "=HYPERLINK(\"x\")", "cells": {"jira": [], "jira@tests": [],
	    "to": [], "to@refines": [], "from": ["DEMO/A-1"], "from@depends_on": ["DEMO/A-1"]}},
	  {"spaceKey": "DEMO", "key": "D-1", "text": "Audit.", "cells": {"jira": [], "jira@tests": [],
	    "to": ["OTHER/O-1"], "to@refines": ["OTHER/O-1"], "from": [], "from@depends_on": []}}],
	 "offset": 0, "limit": 50, "count": 4, "hasMore": false}`
	if got, w := canonical(t, raw), canonical(t, want); got != w {
		t.Fatalf("coverage of DEMO:\n%s\nwant\n%s", got, w)
	}

	// The counts cover the whole query, the rows the page only.
	a, _ := mustCoverage(t, s, "demo-wiki-user", "DEMO", params("columns", "to", "q", "key != 'B-1'", "offset", "1", "limit", "1"))
	if len(a.Results) != 1 || a.Results[0].Key != "C-1" || !a.HasMore || a.Columns[0].Covered != 2 || a.Columns[0].Total != 3 {
		t.Fatalf("page 2 of 1 without B-1: %+v", a)
	}
	// Only the matches of q, in the path's space.
	a, _ = mustCoverage(t, s, "demo-wiki-user", "DEMO", params("columns", "jira", "q", "suspect IS TRUE"))
	if got := keysOf2(a); !slices.Equal(got, []string{"A-1", "B-1"}) || a.Columns[0].Covered != 2 || a.Columns[0].Total != 2 {
		t.Fatalf("suspect IS TRUE: %v %+v", got, a.Columns)
	}
	a, _ = mustCoverage(t, s, "demo-wiki-user", "OTHER", params("columns", "to"))
	if got := keysOf2(a); !slices.Equal(got, []string{"O-1"}) || a.Results[0].Cells["to"][0] != "DEMO/B-1 (suspect)" {
		t.Fatalf("OTHER: %+v", a)
	}
}

func keysOf2(a coverageAnswer) []string {
	out := []string{}
	for _, r := range a.Results {
		out = append(out, r.Key)
	}
	return out
}

// TestCoverageTenantIsolation: a tenant sees its own space of that name,
// and a space it does not have is empty, as in a search.
func TestCoverageTenantIsolation(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seedTrace(t, s)
	a, _ := mustCoverage(t, s, "acme-wiki-user", "DEMO", params("columns", "jira,from"))
	if got := keysOf2(a); !slices.Equal(got, []string{"A-1"}) || !slices.Equal(a.Results[0].Cells["jira"], []string{"ACME-1"}) ||
		a.Results[0].Text != "Acme." || len(a.Results[0].Cells["from"]) != 0 {
		t.Fatalf("acme's DEMO: %+v", a)
	}
	for _, space := range []string{"OTHER", "NOPE"} {
		a, raw := mustCoverage(t, s, "acme-wiki-user", space, params("columns", "jira"))
		search := search2(t, s, "acme-wiki-user", space, params("spaceKey", space))
		if len(a.Results) != 0 || a.Columns[0].Total != 0 || a.Columns[0].Covered != 0 || a.HasMore || len(search.body.Results) != 0 {
			t.Fatalf("acme, space %s: %s (search %s), want empty as the search", space, raw, search.raw)
		}
	}
}

// TestCoverageBadInput: every refusal, as the search and the diff answer
// them.
func TestCoverageBadInput(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seedTrace(t, s)
	for _, tc := range []struct {
		name   string
		token  string
		space  string
		params url.Values
		code   int
		named  string
	}{
		{"columns missing", "demo-wiki-user", "DEMO", params("q", ""), 400, "columns"},
		{"columns empty", "demo-wiki-user", "DEMO", params("columns", " "), 400, "columns"},
		{"unknown column", "demo-wiki-user", "DEMO", params("columns", "jira,parent"), 400, "columns"},
		{"empty item", "demo-wiki-user", "DEMO", params("columns", "jira,"), 400, "columns"},
		{"empty relationship", "demo-wiki-user", "DEMO", params("columns", "to@ "), 400, "columns"},
		{"control character", "demo-wiki-user", "DEMO", params("columns", "to@a\x01b"), 400, ""},
		{"column twice", "demo-wiki-user", "DEMO", params("columns", "to@refines,TO@Refines"), 400, "columns"},
		{"too many columns", "demo-wiki-user", "DEMO", params("columns", strings.Repeat("to@x,", 20)+"jira"), 400, "columns"},
		{"bad q", "demo-wiki-user", "DEMO", params("columns", "to", "q", "key = 'A' AND"), 400, ""},
		{"bad limit", "demo-wiki-user", "DEMO", params("columns", "to", "limit", "0"), 400, "limit"},
		{"limit not a number", "demo-wiki-user", "DEMO", params("columns", "to", "limit", "x"), 400, "limit"},
		{"bad offset", "demo-wiki-user", "DEMO", params("columns", "to", "offset", "-1"), 400, "offset"},
		{"bad format", "demo-wiki-user", "DEMO", params("columns", "to", "format", "xml"), 400, "format"},
		{"bad space key", "demo-wiki-user", "D-1", params("columns", "to"), 400, "spaceKey"},
		{"no token", "", "DEMO", params("columns", "to"), 401, ""},
		{"link credential", httpapitest.LinkToken, "DEMO", params("columns", "to"), 403, ""},
	} {
		code, raw := getCoverage(t, s, tc.token, tc.space, tc.params)
		checkRefusal(t, tc.name, code, raw, tc.code, tc.named)
	}
	// limit above 500 is clamped, as the search's.
	if a, _ := mustCoverage(t, s, "demo-wiki-user", "DEMO", params("columns", "to", "limit", "5000")); a.Limit != 500 {
		t.Fatalf("limit 5000: %d, want 500", a.Limit)
	}
}

// TestCoverageCSVMatchesJSON exports the matrix of the hand-made space
// (with more rows than a JSON page) as CSV, reads it back with
// encoding/csv and compares it with the JSON answer, page by page.
func TestCoverageCSVMatchesJSON(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seedTrace(t, s)
	for i := range 60 {
		s.save(t, "demo", fmt.Sprint(100+i), "DEMO", traceSpecs(wt.TR(wt.Def(fmt.Sprintf("M-%02d", i)), "<p>-More.</p>",
			wt.Link("", "A-1"), "", wt.Jira(fmt.Sprintf("P-%d", i%3), ""), "")))
	}
	path := "/rest/reqs/1/coverage/DEMO?" + params("columns", allColumns).Encode()
	records, header, _ := download(t, s, path+"&format=csv", "")
	if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Fatalf("content type %q", ct)
	}
	wantHeader := []string{"spaceKey", "key", "text", "jira", "jira@tests", "to", "to@refines", "from", "from@depends_on"}
	if !slices.Equal(records[0], wantHeader) {
		t.Fatalf("header %q, want %q", records[0], wantHeader)
	}
	if again, _, _ := download(t, s, path, "text/csv, application/json"); !slices.EqualFunc(again, records, slices.Equal) {
		t.Fatalf("Accept: text/csv answered another CSV")
	}
	// The guard: the texts starting with = and -.
	byKey := map[string][]string{}
	for _, row := range records[1:] {
		byKey[row[1]] = row
	}
	if got := byKey["C-1"][2]; got != `'=HYPERLINK("x")` {
		t.Errorf("C-1 text %q", got)
	}
	if got := byKey["M-01"]; got[2] != "'-More." || got[3] != "P-1" || got[5] != "DEMO/A-1" {
		t.Errorf("M-01 %q", got)
	}
	if got := byKey["A-1"][7]; !strings.HasPrefix(got, "DEMO/M-00\nDEMO/M-01\n") {
		t.Errorf("A-1 from %q", got)
	}

	var rows [][]string
	for offset := 0; ; offset += 50 {
		a, _ := mustCoverage(t, s, "demo-wiki-user", "DEMO", params("columns", allColumns, "offset", fmt.Sprint(offset)))
		for _, r := range a.Results {
			row := []string{r.SpaceKey, r.Key, r.Text}
			for _, c := range a.Columns {
				row = append(row, strings.Join(r.Cells[c.Name], "\n"))
			}
			rows = append(rows, row)
		}
		if !a.HasMore {
			break
		}
	}
	if len(rows) != 64 || len(rows) != len(records)-1 {
		t.Fatalf("JSON has %d rows, CSV %d, want 64", len(rows), len(records)-1)
	}
	for i, want := range rows {
		got := slices.Clone(records[i+1])
		for j := range got {
			got[j] = unguard(got[j])
		}
		if !slices.Equal(got, want) {
			t.Errorf("row %d: CSV %q, JSON %q", i+1, got, want)
		}
	}
}
