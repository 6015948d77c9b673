package wikirequirements_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/requirement"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// freeze makes baseline n of space from its current ACTIVE rows, as a
// freeze does (baseline.Archive, the copies, then the record).
func (s *server) freeze(t *testing.T, tenant, space string, n int) {
	t.Helper()
	var rows []*requirement.Requirement
	err := s.bl.SpaceRequirements(context.Background(), tenant, space, func(r *requirement.Requirement) bool {
		if r.Status == requirement.Active {
			rows = append(rows, r)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	copies, _ := baseline.Archive(space, n, rows)
	if err := s.bl.PutCopies(context.Background(), tenant, copies); err != nil {
		t.Fatal(err)
	}
	httpapitest.CommitBaseline(t, s.bl, tenant, space, n)
}

// getDiff calls the diff and returns the status and the raw body.
func getDiff(t *testing.T, h http.Handler, token, space string, params url.Values) (int, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/rest/reqs/1/diff/"+url.PathEscape(space)+"?"+params.Encode(), nil)
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("diff %v: content type %q", params, ct)
	}
	return rec.Code, rec.Body.String()
}

// canonical re-encodes JSON so that two documents compare as text.
func canonical(t *testing.T, raw string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		t.Fatalf("%v in %s", err, raw)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// seedChanges stores DEMO with one requirement per kind of change between
// baseline 1 and the current state (and baseline 2, frozen at the end).
func seedChanges(t *testing.T, s *server) {
	t.Helper()
	s.save(t, "demo", "1", "DEMO", specs(
		wt.TR(wt.Def("A-SAME"), "<p>Same.</p>", "High", "", ""),
		wt.TR(wt.Def("B-TEXT"), "<p>Old text.</p>", "", "", ""),
		wt.TR(wt.Def("C-STATUS"), "<p>Going.</p>", "", "", ""),
		wt.TR(wt.Def("D-ORIGIN"), "<p>Moving.</p>", "", "", ""),
		wt.TR(wt.Def("E-PROP"), "<p>Prop.</p>", "High", "", ""),
		wt.TR(wt.Def("F-EXT"), "<p>Ext.</p>", "", "", ""),
		wt.TR(wt.Def("G-DEP"), "<p>Dep.</p>", "", "", ""),
		wt.TR(wt.Def("H-ISSUE"), "<p>Issue.</p>", "", "", ""),
	))
	s.freeze(t, "demo", "DEMO", 1)
	s.save(t, "demo", "1", "DEMO", specs(
		wt.TR(wt.Def("A-SAME"), "<p>Same.</p>", "High", "", ""),
		wt.TR(wt.Def("B-TEXT"), "<p>New text.</p>", "", "", ""),
		wt.TR(wt.Def("E-PROP"), "<p>Prop.</p>", "Low", "", ""),
		wt.TR(wt.Def("F-EXT"), "<p>Ext.</p>", "", "", ""),
		wt.TR(wt.Def("G-DEP"), "<p>Dep.</p>", "", wt.Link("", "A-SAME"), ""),
		wt.TR(wt.Def("H-ISSUE"), "<p>Issue.</p>", "", "", wt.Jira("PROJ-7", "")),
		wt.TR(wt.Def("I-NEW"), "<p>Brand new.</p>", "Low", "", ""),
	))
	s.save(t, "demo", "2", "DEMO", specs(wt.TR(wt.Def("D-ORIGIN"), "<p>Moving.</p>", "", "", "")))
	cost := "12"
	if _, err := s.wiki.SetExternal(context.Background(), "demo", "DEMO", "F-EXT", []requirement.ExternalChange{{Name: "Cost", Value: &cost}}); err != nil {
		t.Fatal(err)
	}
	s.freeze(t, "demo", "DEMO", 2)
	// acme has a space DEMO too, without baselines.
	s.save(t, "acme", "1", "DEMO", specs(wt.TR(wt.Def("A-SAME"), "<p>Acme.</p>", "", "", "")))
}

// TestDiffEveryKindOfChange diffs baseline 1 with the current state, one
// requirement per kind of change, and checks the whole answer.
func TestDiffEveryKindOfChange(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seedChanges(t, s)
	code, raw := getDiff(t, s, "demo-wiki-user", "DEMO", params("from", "1", "to", "current"))
	if code != http.StatusOK {
		t.Fatalf("diff: %d %s", code, raw)
	}
	page1 := `{"pageId": "1", "title": "Page 1"}`
	want := `{"from": 1, "to": "current",
	 "summary": {"added": 1, "removed": 0, "modified": 7, "unchanged": 1},
	 "changes": [
	  {"spaceKey": "DEMO", "key": "B-TEXT", "change": "MODIFIED", "fields": [{"field": "text", "from": "Old text.", "to": "New text."}]},
	  {"spaceKey": "DEMO", "key": "C-STATUS", "change": "MODIFIED", "fields": [{"field": "status", "from": "ACTIVE", "to": "DELETED"}]},
	  {"spaceKey": "DEMO", "key": "D-ORIGIN", "change": "MODIFIED", "fields": [{"field": "origin", "from": ` + page1 + `, "to": {"pageId": "2", "title": "Page 2"}}]},
	  {"spaceKey": "DEMO", "key": "E-PROP", "change": "MODIFIED", "fields": [{"field": "@Priority", "from": "High", "to": "Low"}]},
	  {"spaceKey": "DEMO", "key": "F-EXT", "change": "MODIFIED", "fields": [{"field": "ext@Cost", "from": null, "to": "12"}]},
	  {"spaceKey": "DEMO", "key": "G-DEP", "change": "MODIFIED", "fields": [{"field": "dependencies", "from": [],
	    "to": [{"spaceKey": "DEMO", "key": "A-SAME", "relationship": "refines"}]}]},
	  {"spaceKey": "DEMO", "key": "H-ISSUE", "change": "MODIFIED", "fields": [{"field": "issues", "from": [],
	    "to": [{"serviceId": null, "issueKey": "PROJ-7", "relationship": "implements"}]}]},
	  {"spaceKey": "DEMO", "key": "I-NEW", "change": "ADDED", "fields": [
	    {"field": "text", "from": null, "to": "Brand new."}, {"field": "status", "from": null, "to": "ACTIVE"},
	    {"field": "origin", "from": null, "to": ` + page1 + `}, {"field": "@Priority", "from": null, "to": "Low"}]}],
	 "offset": 0, "limit": 50, "count": 8, "hasMore": false}`
	if got, w := canonical(t, raw), canonical(t, want); got != w {
		t.Fatalf("diff 1 → current:\n%s\nwant\n%s", got, w)
	}

	// Baseline to baseline: C-STATUS was not frozen again, so it is
	// REMOVED; the other way round I-NEW is.
	code, raw = getDiff(t, s, "demo-wiki-user", "DEMO", params("from", "1", "to", "2", "q", "key = 'C-STATUS' OR key = 'I-NEW'"))
	want = `{"from": 1, "to": 2, "summary": {"added": 1, "removed": 1, "modified": 0, "unchanged": 0},
	 "changes": [
	  {"spaceKey": "DEMO", "key": "C-STATUS", "change": "REMOVED", "fields": [
	    {"field": "text", "from": "Going.", "to": null}, {"field": "status", "from": "ACTIVE", "to": null},
	    {"field": "origin", "from": ` + page1 + `, "to": null}]},
	  {"spaceKey": "DEMO", "key": "I-NEW", "change": "ADDED", "fields": [
	    {"field": "text", "from": null, "to": "Brand new."}, {"field": "status", "from": null, "to": "ACTIVE"},
	    {"field": "origin", "from": null, "to": ` + page1 + `}, {"field": "@Priority", "from": null, "to": "Low"}]}],
	 "offset": 0, "limit": 50, "count": 2, "hasMore": false}`
	if code != http.StatusOK || canonical(t, raw) != canonical(t, want) {
		t.Fatalf("diff 1 → 2: %d\n%s\nwant\n%s", code, canonical(t, raw), canonical(t, want))
	}
	code, raw = getDiff(t, s, "demo-wiki-user", "DEMO", params("from", "2", "to", "1", "q", "key = 'I-NEW'"))
	if code != http.StatusOK || !json.Valid([]byte(raw)) {
		t.Fatalf("diff 2 → 1: %d %s", code, raw)
	}
	var back struct {
		Summary struct{ Removed int } `json:"summary"`
		Changes []struct{ Key, Change string }
	}
	if err := json.Unmarshal([]byte(raw), &back); err != nil || back.Summary.Removed != 1 || len(back.Changes) != 1 ||
		back.Changes[0].Change != "REMOVED" {
		t.Fatalf("diff 2 → 1: %s", raw)
	}

	// Paging: the summary covers the whole comparison, changes a page.
	code, raw = getDiff(t, s, "demo-wiki-user", "DEMO", params("from", "1", "to", "current", "offset", "2", "limit", "3"))
	var paged struct {
		Summary struct{ Modified, Added int }
		Changes []struct{ Key string }
		Offset  int
		Limit   int
		Count   int
		HasMore bool
	}
	if err := json.Unmarshal([]byte(raw), &paged); err != nil || code != http.StatusOK {
		t.Fatalf("paged: %d %s", code, raw)
	}
	if paged.Summary.Modified != 7 || paged.Summary.Added != 1 || paged.Count != 3 || !paged.HasMore || paged.Offset != 2 ||
		paged.Limit != 3 || paged.Changes[0].Key != "D-ORIGIN" || paged.Changes[2].Key != "F-EXT" {
		t.Fatalf("paged: %s", raw)
	}
}

// TestDiffBadInput checks the refusals: a baseline against itself, unknown
// baselines (also another tenant's), bad sides, a bad q with its position.
func TestDiffBadInput(t *testing.T) {
	t.Parallel()
	s := newServer(t)
	seedChanges(t, s)
	for _, tc := range []struct {
		name   string
		token  string
		space  string
		params url.Values
		code   int
		named  string
	}{
		{"baseline against itself", "demo-wiki-user", "DEMO", params("from", "1", "to", "1"), 400, "to"},
		{"current against itself", "demo-wiki-user", "DEMO", params("from", "current", "to", "CURRENT"), 400, "to"},
		{"unknown baseline", "demo-wiki-user", "DEMO", params("from", "9", "to", "current"), 404, ""},
		{"unknown baseline as to", "demo-wiki-user", "DEMO", params("from", "1", "to", "3"), 404, ""},
		{"another tenant's baseline", "acme-wiki-user", "DEMO", params("from", "1", "to", "current"), 404, ""},
		{"unknown space", "demo-wiki-user", "NOPE", params("from", "1", "to", "current"), 404, ""},
		{"from missing", "demo-wiki-user", "DEMO", params("to", "current"), 400, "from"},
		{"from not a number", "demo-wiki-user", "DEMO", params("from", "abc", "to", "current"), 400, "from"},
		{"from zero", "demo-wiki-user", "DEMO", params("from", "0", "to", "current"), 400, "from"},
		{"to too large", "demo-wiki-user", "DEMO", params("from", "1", "to", "100000000"), 400, "to"},
		{"bad limit", "demo-wiki-user", "DEMO", params("from", "1", "to", "current", "limit", "0"), 400, "limit"},
		{"bad format", "demo-wiki-user", "DEMO", params("from", "1", "to", "current", "format", "xml"), 400, "format"},
		{"bad q", "demo-wiki-user", "DEMO", params("from", "1", "to", "current", "q", "key = 'A' AND"), 400, ""},
		{"bad space key", "demo-wiki-user", "D-1", params("from", "1", "to", "current"), 400, "spaceKey"},
		{"link credential", httpapitest.LinkToken, "DEMO", params("from", "1", "to", "current"), 403, ""},
	} {
		code, raw := getDiff(t, s, tc.token, tc.space, tc.params)
		checkRefusal(t, tc.name, code, raw, tc.code, tc.named)
	}
}

// checkRefusal checks the error answer of the case name: its status
// (want), a message, the request field it names (named, when not "") and,
// for the case "bad q", the position 13 of the query's error.
func checkRefusal(t *testing.T, name string, code int, raw string, want int, named string) {
	t.Helper()
	var body struct {
		Status   int               `json:"status"`
		Message  string            `json:"message"`
		Errors   map[string]string `json:"errors"`
		Position *int              `json:"position"`
	}
	if err := json.Unmarshal([]byte(raw), &body); err != nil || code != want || body.Status != want || body.Message == "" {
		t.Errorf("%s: %d %s, want %d", name, code, raw, want)
		return
	}
	if named != "" && body.Errors[named] == "" {
		t.Errorf("%s: %s does not name %s", name, raw, named)
	}
	if name == "bad q" && (body.Position == nil || *body.Position != 13) {
		t.Errorf("%s: position in %s, want 13", name, raw)
	}
}
