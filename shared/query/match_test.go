package query

import (
	"errors"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/reqtrace/reqtrace/shared/requirement"
)

// fixture is a small graph:
//
//	REQ-002 --dependency--> REQ-001 --refines--> REQ-000
//	REQ-002 --business_rule--> OTHER/X-1
//
// plus an archived copy of REQ-001 in baseline 3 and a bare REQ-010.
func fixture() []*requirement.Requirement {
	dep := func(space, key, rel string) requirement.Dependency {
		return requirement.Dependency{SpaceKey: space, Key: key, Relationship: rel}
	}
	prop := func(k, v string) requirement.Property { return requirement.Property{Key: k, Value: v} }
	ext := func(k, v string) requirement.Property {
		return requirement.Property{Key: k, Value: v, Type: requirement.External}
	}
	req001 := func(baseline int, status requirement.Status) *requirement.Requirement {
		return &requirement.Requirement{
			SpaceKey: "DEMO", Key: "REQ-001", Baseline: baseline, Status: status,
			Text: "The system shall log in users.",
			Properties: []requirement.Property{prop("Category", "Functional"), prop("Main Category", "Security"),
				ext("Cost", "12"), ext("Main Owner", "bob")},
			Origin:       requirement.PageRef{PageID: "123", Title: "Specs"},
			Dependencies: []requirement.Dependency{dep("DEMO", "REQ-000", "refines")},
			// The archived copy keeps its link inside the baseline but has
			// no reverse links: those belong to current versions.
			Issues: []requirement.IssueLink{{ServiceID: "jira-1", IssueKey: "PROJ-1", Relationship: "implements"}},
		}
	}
	current, archived := req001(0, requirement.Active), req001(3, requirement.Archived)
	current.ReverseDependencies = []requirement.Dependency{dep("DEMO", "REQ-002", "dependency")}
	archived.Issues = nil
	return []*requirement.Requirement{
		{
			SpaceKey: "DEMO", Key: "REQ-000", Status: requirement.Active, Text: "Root requirement",
			Properties:          []requirement.Property{prop("category", "Non-Functional")},
			Origin:              requirement.PageRef{PageID: "123"},
			ReverseDependencies: []requirement.Dependency{dep("DEMO", "REQ-001", "refines")},
		},
		current,
		{
			SpaceKey: "DEMO", Key: "REQ-002", Status: requirement.Active,
			Text: "Login must take under 2 s: 100% of the time",
			Properties: []requirement.Property{
				prop("Category", "Functional"), prop("Category", "Performance"), prop("Date", "2024-03-01"),
				// An external property named like a page property: @Category
				// and ext@Category are different fields.
				ext("category", "External"), ext("cost", "9.5"),
			},
			Origin:       requirement.PageRef{PageID: "124"},
			Dependencies: []requirement.Dependency{dep("", "REQ-001", "dependency"), dep("OTHER", "X-1", "business_rule")},
			Issues: []requirement.IssueLink{
				{IssueKey: "PROJ-2", Relationship: "Implements"}, {IssueKey: "PROJ-3", Relationship: "tests"},
			},
		},
		{
			SpaceKey: "OTHER", Key: "X-1", Status: requirement.Deleted, Text: "Other space",
			Origin:              requirement.PageRef{PageID: "200"},
			ReverseDependencies: []requirement.Dependency{dep("DEMO", "REQ-002", "business_rule")},
		},
		archived,
		{
			SpaceKey: "DEMO", Key: "REQ-010", Status: requirement.Active,
			Properties: []requirement.Property{prop("Date", "2023-12-31")},
		},
	}
}

// id names a fixture row: KEY, or KEY@N for a baseline copy.
func id(r *requirement.Requirement) string {
	if r.Baseline != 0 {
		return r.Key + "@" + strconv.Itoa(r.Baseline)
	}
	return r.Key
}

// fixturePages are the current titles of the fixture's pages: the rows of
// page 123 still carry the title it had when they were saved ("Specs").
var fixturePages = map[string]string{"123": "Specs v2", "124": "Login", "200": "Other space"}

// graphEnv computes the closures e needs with Reach, from the links of the
// current versions, and the page names it needs from fixturePages, the way
// a planner would.
func graphEnv(t *testing.T, reqs []*requirement.Requirement, e Expr) Sets {
	t.Helper()
	return envWithPages(t, reqs, fixturePages, e)
}

// envWithPages is graphEnv with the current pages titles (id → title).
func envWithPages(t *testing.T, reqs []*requirement.Requirement, titles map[string]string, e Expr) Sets {
	t.Helper()
	set := Sets{Closures: ClosureSet{}, Pages: map[string]*PageNames{}}
	for _, c := range Closures(e) {
		members, err := Reach(c, func(from Ref) ([]Ref, error) { return neighbours(reqs, c, from), nil })
		if err != nil {
			t.Fatal(err)
		}
		set.Closures[c] = members
	}
	for _, l := range PageLookups(e) {
		n := &PageNames{Titled: map[string]bool{}}
		for id, title := range titles {
			if SameTitle(title, l.Value) {
				n.Titled[id] = true
			}
		}
		if l.Cited {
			n.Cited = map[Ref]bool{}
			for id := range titles {
				if id == l.Value || n.Titled[id] {
					for _, r := range Cites(id, reqs) {
						n.Cited[r] = true
					}
				}
			}
		}
		set.Pages[l.Value] = n
	}
	return set
}

func neighbours(reqs []*requirement.Requirement, c Closure, from Ref) []Ref {
	var out []Ref
	for _, r := range reqs {
		if r.Baseline != 0 || !from.matches(r.SpaceKey, r.Key) {
			continue
		}
		links := r.Dependencies // child: what from references
		if c.Field == FieldParent {
			links = r.ReverseDependencies // parent: what references from
		}
		for _, d := range withRel(links, c.Rel) {
			out = append(out, NewRef(linkSpace(d, r.SpaceKey), d.Key))
		}
	}
	return out
}

func matching(t *testing.T, q string, env func(Expr) Env) []string {
	t.Helper()
	e, err := Parse(q)
	if err != nil {
		t.Fatalf("Parse(%q): %v", q, err)
	}
	var got []string
	reqs := fixture()
	for _, r := range reqs {
		if Match(e, r, env(e)) {
			got = append(got, id(r))
		}
	}
	return got
}

func TestMatch(t *testing.T) {
	t.Parallel()
	all := []string{"REQ-000", "REQ-001", "REQ-002", "X-1", "REQ-001@3", "REQ-010"}
	none := []string(nil)
	tests := []struct {
		q    string
		want []string
	}{
		{``, all},
		{`''`, all},
		{`'LOGIN'`, []string{"REQ-002"}},
		{`'req-00'`, []string{"REQ-000", "REQ-001", "REQ-002", "REQ-001@3"}},
		{`'100%'`, []string{"REQ-002"}},
		{`'10%0'`, none},
		// key: = is case-insensitive, ~ only knows '%'.
		{`key = 'REQ-001'`, []string{"REQ-001", "REQ-001@3"}},
		{`key = 'req-001'`, []string{"REQ-001", "REQ-001@3"}},
		{`key == 'REQ-001' AND baseline IS NULL`, []string{"REQ-001"}},
		{`key ~ 'req-00%'`, []string{"REQ-000", "REQ-001", "REQ-002", "REQ-001@3"}},
		{`key ~ '%1'`, []string{"REQ-001", "X-1", "REQ-001@3"}},
		{`key ~ 'REQ-0_0'`, none},
		{`key ~ 'R%-%0'`, []string{"REQ-000", "REQ-010"}},
		{`key > 'REQ-001'`, []string{"REQ-002", "X-1", "REQ-010"}},
		{`key >= 'req-001' AND key < 'REQ-010'`, []string{"REQ-001", "REQ-002", "REQ-001@3"}},
		{`key IN ('req-000', 'X-1')`, []string{"REQ-000", "X-1"}},
		{`key NOT IN ('req-000', 'X-1')`, []string{"REQ-001", "REQ-002", "REQ-001@3", "REQ-010"}},
		// text: exact =, LIKE with escaped '%', empty text is NULL.
		{`text ~ '%LOG IN%'`, []string{"REQ-001", "REQ-001@3"}},
		{`text ~ '%100\\%%'`, []string{"REQ-002"}},
		{`text ~ '%10\\%%'`, none},
		{`text = 'Root requirement'`, []string{"REQ-000"}},
		{`text = 'root requirement'`, none},
		{`text IS NULL`, []string{"REQ-010"}},
		// page and numbers.
		{`page = 123`, []string{"REQ-000", "REQ-001", "REQ-001@3"}},
		{`page = '123'`, []string{"REQ-000", "REQ-001", "REQ-001@3"}},
		{`page > 123`, []string{"REQ-002", "X-1"}},
		{`page < 13`, none},
		{`page IS NULL`, []string{"REQ-010"}},
		// page names a page by id or by its current title (any case),
		// never by the title a row stored; ~ adds what the page cites.
		{`page = 'specs V2'`, []string{"REQ-000", "REQ-001", "REQ-001@3"}},
		{`page = 'Specs'`, none},
		{`page = 'LOGIN' OR page = 200`, []string{"REQ-002", "X-1"}},
		{`page IN ('Login', 123)`, []string{"REQ-000", "REQ-001", "REQ-002", "REQ-001@3"}},
		{`page != 'Login'`, []string{"REQ-000", "REQ-001", "X-1", "REQ-001@3"}},
		{`page NOT IN ('Specs v2', 'Other space')`, []string{"REQ-002"}},
		{`NOT page = 'Login'`, []string{"REQ-000", "REQ-001", "X-1", "REQ-001@3", "REQ-010"}},
		{`page ~ 124`, []string{"REQ-001", "REQ-002", "X-1", "REQ-001@3"}},
		{`page ~ 'login'`, []string{"REQ-001", "REQ-002", "X-1", "REQ-001@3"}},
		{`page ~ 124 AND NOT page = 124`, []string{"REQ-001", "X-1", "REQ-001@3"}},
		{`page ~ 123`, []string{"REQ-000", "REQ-001", "REQ-001@3"}},
		{`page ~ 200`, []string{"X-1"}},
		{`page ~ 'Specs'`, none},
		{`page ~ 999`, none},
		{`page ~ 'Login\\%'`, none},
		// jira: any issue, relationship normalised, NOT for "no issue".
		{`jira = 'PROJ-1'`, []string{"REQ-001"}},
		{`jira@implements = 'PROJ-2'`, []string{"REQ-002"}},
		{`jira@tests = 'PROJ-2'`, none},
		{`jira@tests ~ '%'`, []string{"REQ-002"}},
		{`NOT (jira ~ '%')`, []string{"REQ-000", "X-1", "REQ-001@3", "REQ-010"}},
		{`jira IS NULL`, []string{"REQ-000", "X-1", "REQ-001@3", "REQ-010"}},
		{`jira != 'PROJ-2'`, []string{"REQ-001"}},
		// Properties: name case-insensitive, value exact, any of several values.
		{`@Category = 'Functional'`, []string{"REQ-001", "REQ-002", "REQ-001@3"}},
		{`@CATEGORY = 'Functional'`, []string{"REQ-001", "REQ-002", "REQ-001@3"}},
		{`@Category = 'functional'`, none},
		{`@Category = 'Performance'`, []string{"REQ-002"}},
		{`@Main\ Category = 'Security'`, []string{"REQ-001", "REQ-001@3"}},
		{`@Category != 'Functional'`, []string{"REQ-000"}},
		{`@Category <> 'Performance'`, []string{"REQ-000", "REQ-001", "REQ-001@3"}},
		{`NOT @Category = 'Functional'`, []string{"REQ-000", "X-1", "REQ-010"}},
		{`@Category IN ('Performance', 'Non-Functional')`, []string{"REQ-000", "REQ-002"}},
		{`@Category NOT IN ('Functional')`, []string{"REQ-000"}},
		{`NOT @Category IN ('Functional')`, []string{"REQ-000", "X-1", "REQ-010"}},
		{`@Category IS NULL`, []string{"X-1", "REQ-010"}},
		{`@Category IS NOT NULL`, []string{"REQ-000", "REQ-001", "REQ-002", "REQ-001@3"}},
		{`@Category ~ '%func%'`, []string{"REQ-000", "REQ-001", "REQ-002", "REQ-001@3"}},
		{`@Date < '2024-01-01'`, []string{"REQ-010"}},
		{`@Date >= '2024-01-01'`, []string{"REQ-002"}},
		// External properties: ext@Name, every operator a property takes,
		// never the page's properties (and @Name never the external ones).
		{`ext@Cost = '12'`, []string{"REQ-001", "REQ-001@3"}},
		{`EXT@cost = 12`, []string{"REQ-001", "REQ-001@3"}},
		{`ext@Cost = 12.0`, none},
		{`ext@Cost < 10`, []string{"REQ-002"}},
		{`ext@Cost >= '10'`, []string{"REQ-001", "REQ-001@3"}},
		{`ext@Cost != '12'`, []string{"REQ-002"}},
		{`NOT ext@Cost = '12'`, []string{"REQ-000", "REQ-002", "X-1", "REQ-010"}},
		{`ext@Cost IN ('9.5', '13')`, []string{"REQ-002"}},
		{`ext@Cost NOT IN ('9.5')`, []string{"REQ-001", "REQ-001@3"}},
		{`ext@Cost IS NULL`, []string{"REQ-000", "X-1", "REQ-010"}},
		{`ext@Cost IS NOT NULL`, []string{"REQ-001", "REQ-002", "REQ-001@3"}},
		{`ext@Main\ Owner ~ 'B%'`, []string{"REQ-001", "REQ-001@3"}},
		{`ext@Category = 'External'`, []string{"REQ-002"}},
		{`ext@Category = 'Functional'`, none},
		{`@Category = 'External'`, none},
		{`@Cost IS NOT NULL`, none},
		{`ext@Category IS NOT NULL AND @Category = 'Performance'`, []string{"REQ-002"}},
		// to and from: direct links, 'KEY' in any space or 'SPACE/KEY'.
		{`TO = 'REQ-001'`, []string{"REQ-002"}},
		{`to = 'DEMO/REQ-001'`, []string{"REQ-002"}},
		{`to = 'DEMO/REQ-000'`, []string{"REQ-001", "REQ-001@3"}},
		{`to = 'OTHER/REQ-000'`, none},
		{`to = 'x-1'`, []string{"REQ-002"}},
		{`to = 'a/b/c'`, none},
		{`to@business_rule = 'OTHER/X-1'`, []string{"REQ-002"}},
		{`to@Business\ Rule = 'X-1'`, []string{"REQ-002"}},
		{`to@refines = 'X-1'`, none},
		{`to ~ 'other/%'`, []string{"REQ-002"}},
		{`to ~ '%-000'`, []string{"REQ-001", "REQ-001@3"}},
		{`to != 'X-1'`, []string{"REQ-001", "REQ-001@3"}},
		{`to IS NULL`, []string{"REQ-000", "X-1", "REQ-010"}},
		{`FROM = 'REQ-001'`, []string{"REQ-000"}},
		{`FROM@refines = 'REQ-001'`, []string{"REQ-000"}},
		{`from = 'REQ-002'`, []string{"REQ-001", "X-1"}},
		{`from IN ('DEMO/REQ-002', 'REQ-001')`, []string{"REQ-000", "REQ-001", "X-1"}},
		// baseline: 0 is NULL, numbers compare numerically.
		{`baseline = 3`, []string{"REQ-001@3"}},
		{`baseline = '3'`, []string{"REQ-001@3"}},
		{`baseline = 3.0`, []string{"REQ-001@3"}},
		{`baseline = 0`, none},
		{`baseline > 1`, []string{"REQ-001@3"}},
		{`baseline < 20`, []string{"REQ-001@3"}},
		{`baseline IS NOT NULL`, []string{"REQ-001@3"}},
		{`baseline IS NULL`, []string{"REQ-000", "REQ-001", "REQ-002", "X-1", "REQ-010"}},
		{`NOT baseline = 3`, []string{"REQ-000", "REQ-001", "REQ-002", "X-1", "REQ-010"}},
		{`baseline != 3`, none},
		// status is case-insensitive, space is exact.
		{`status = 'DELETED'`, []string{"X-1"}},
		{`status = 'deleted'`, []string{"X-1"}},
		{`status IN ('ARCHIVED', 'deleted')`, []string{"X-1", "REQ-001@3"}},
		{`status != 'ACTIVE'`, []string{"X-1", "REQ-001@3"}},
		{`space = 'OTHER'`, []string{"X-1"}},
		{`space = 'other'`, none},
		// Precedence.
		{`key = 'REQ-000' OR key = 'REQ-001' AND baseline = 3`, []string{"REQ-000", "REQ-001@3"}},
		{`(key = 'REQ-000' OR key = 'REQ-001') AND baseline IS NULL`, []string{"REQ-000", "REQ-001"}},
		{`NOT key = 'REQ-000' AND status = 'ACTIVE'`, []string{"REQ-001", "REQ-002", "REQ-010"}},
		{`NOT (key = 'REQ-000' AND status = 'ACTIVE')`, []string{"REQ-001", "REQ-002", "X-1", "REQ-001@3", "REQ-010"}},
		// parent and child: transitive, through Env.
		{`parent = 'REQ-000'`, []string{"REQ-001", "REQ-002", "REQ-001@3"}},
		{`parent = 'DEMO/REQ-000'`, []string{"REQ-001", "REQ-002", "REQ-001@3"}},
		{`parent = 'OTHER/REQ-000'`, none},
		{`parent@refines = 'REQ-000'`, []string{"REQ-001", "REQ-001@3"}},
		{`parent = 'X-1'`, []string{"REQ-002"}},
		{`parent != 'X-1'`, []string{"REQ-001", "REQ-001@3"}},
		{`parent IN ('X-1', 'REQ-001')`, []string{"REQ-002"}},
		{`parent NOT IN ('X-1')`, []string{"REQ-001", "REQ-001@3"}},
		{`parent IS NULL`, []string{"REQ-000", "X-1", "REQ-010"}},
		{`child = 'REQ-002'`, []string{"REQ-000", "REQ-001", "X-1"}},
		{`child@dependency = 'REQ-002'`, []string{"REQ-001"}},
		{`child = 'REQ-000'`, none},
		{`child IS NOT NULL`, []string{"REQ-000", "REQ-001", "X-1"}},
	}
	for _, tt := range tests {
		t.Run(tt.q, func(t *testing.T) {
			t.Parallel()
			env := func(e Expr) Env { return graphEnv(t, fixture(), e) }
			if got := matching(t, tt.q, env); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Match(%q) = %q, want %q", tt.q, got, tt.want)
			}
		})
	}
}

func TestMatchWithoutEnv(t *testing.T) {
	t.Parallel()
	noEnv := func(Expr) Env { return nil }
	for _, q := range []string{`parent = 'REQ-000'`, `child = 'REQ-002'`, `parent IN ('REQ-000')`} {
		if got := matching(t, q, noEnv); got != nil {
			t.Errorf("Match(%q) with a nil Env = %q, want none", q, got)
		}
	}
	// IS NULL needs only the requirement's own links.
	if got := matching(t, `parent IS NOT NULL`, noEnv); !slices.Equal(got, []string{"REQ-001", "REQ-002", "REQ-001@3"}) {
		t.Errorf("parent IS NOT NULL with a nil Env = %q", got)
	}
}

// TestMatchPageNames: a value is an id and a title at once, a deleted
// page is named by its id only, a citation needs an ACTIVE current row
// defined on the page, and without an Env a value names its id only.
func TestMatchPageNames(t *testing.T) {
	t.Parallel()
	// Page 124 is titled "123"; page 200 was deleted.
	titles := map[string]string{"123": "Specs", "124": "123"}
	tests := []struct {
		q    string
		want []string
	}{
		{`page = 123`, []string{"REQ-000", "REQ-001", "REQ-002", "REQ-001@3"}},
		{`page = 124`, []string{"REQ-002"}},
		{`page ~ '123'`, []string{"REQ-000", "REQ-001", "REQ-002", "X-1", "REQ-001@3"}},
		{`page = 200`, []string{"X-1"}},
		{`page = 'Other space'`, nil},
		{`page ~ 200`, []string{"X-1"}},
		{`page != 123`, []string{"X-1"}},
	}
	for _, tt := range tests {
		env := func(e Expr) Env { return envWithPages(t, fixture(), titles, e) }
		if got := matching(t, tt.q, env); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Match(%q) = %q, want %q", tt.q, got, tt.want)
		}
	}
	noEnv := func(Expr) Env { return nil }
	for q, want := range map[string][]string{
		`page = 'Login'`: nil, `page = 124`: {"REQ-002"}, `page ~ 124`: {"REQ-002"}, `page != 'Login'`: {"REQ-000", "REQ-001", "REQ-002", "X-1", "REQ-001@3"},
	} {
		if got := matching(t, q, noEnv); !reflect.DeepEqual(got, want) {
			t.Errorf("Match(%q) with a nil Env = %q, want %q", q, got, want)
		}
	}
}

func TestPageLookups(t *testing.T) {
	t.Parallel()
	e, err := Parse(`page = 'Specs' OR NOT page IN (1, 'Specs') OR page ~ 1 OR page != 'x' OR page ~ 'a\\%b' OR page > 3 OR page IS NULL OR key = 'Specs'`)
	if err != nil {
		t.Fatal(err)
	}
	want := []PageLookup{{Value: "Specs"}, {Value: "1", Cited: true}, {Value: "x"}, {Value: "a%b", Cited: true}}
	if got := PageLookups(e); !reflect.DeepEqual(got, want) {
		t.Errorf("PageLookups = %+v, want %+v", got, want)
	}
	if got := PageLookups(nil); got != nil {
		t.Errorf("PageLookups(nil) = %+v", got)
	}
}

func TestCites(t *testing.T) {
	t.Parallel()
	reqs := fixture()
	// Page 124's REQ-002 links REQ-001 without a space (its own, DEMO)
	// and OTHER/X-1; page 123's archived copy of REQ-001 does not count,
	// nor does page 200's DELETED X-1.
	if got, want := Cites("124", reqs), []Ref{NewRef("DEMO", "REQ-001"), NewRef("OTHER", "X-1")}; !reflect.DeepEqual(got, want) {
		t.Errorf("Cites(124) = %v, want %v", got, want)
	}
	if got, want := Cites("123", reqs), []Ref{NewRef("DEMO", "REQ-000")}; !reflect.DeepEqual(got, want) {
		t.Errorf("Cites(123) = %v, want %v", got, want)
	}
	if got := Cites("200", reqs); got != nil {
		t.Errorf("Cites(200) = %v, want none", got)
	}
}

func TestClosures(t *testing.T) {
	t.Parallel()
	e, err := Parse(`parent = 'A' OR NOT child@refines IN ('S/b', 'a/b/c', 'S/B') OR parent = 'a' OR to = 'X'`)
	if err != nil {
		t.Fatal(err)
	}
	want := []Closure{
		{Field: FieldParent, Of: Ref{Key: "A"}},
		{Field: FieldChild, Rel: "refines", Of: Ref{SpaceKey: "S", Key: "B"}},
	}
	if got := Closures(e); !reflect.DeepEqual(got, want) {
		t.Errorf("Closures = %+v, want %+v", got, want)
	}
	if got := Closures(nil); got != nil {
		t.Errorf("Closures(nil) = %+v", got)
	}
}

func TestReach(t *testing.T) {
	t.Parallel()
	a, b, c := NewRef("S", "a"), NewRef("S", "b"), NewRef("S", "c")
	graph := map[Ref][]Ref{a: {b}, b: {c, a}, c: {b}}
	next := func(r Ref) ([]Ref, error) { return graph[r], nil }
	got, err := Reach(Closure{Field: FieldChild, Of: a}, next)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[Ref]bool{a: true, b: true, c: true}; !reflect.DeepEqual(got, want) {
		t.Errorf("Reach on a cycle = %v, want %v (a is on the cycle)", got, want)
	}
	got, _ = Reach(Closure{Field: FieldChild, Of: c}, func(r Ref) ([]Ref, error) {
		if r == c {
			return []Ref{b}, nil
		}
		return nil, nil
	})
	if want := map[Ref]bool{b: true}; !reflect.DeepEqual(got, want) {
		t.Errorf("Reach = %v, want %v (the start is not a member)", got, want)
	}
	boom := errors.New("boom")
	if _, err := Reach(Closure{Of: a}, func(Ref) ([]Ref, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Errorf("Reach error = %v, want %v", err, boom)
	}
}

func TestParseRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		v    string
		want Ref
		ok   bool
	}{
		{"REQ-1", Ref{Key: "REQ-1"}, true},
		{"req-1", Ref{Key: "REQ-1"}, true},
		{"DEMO/req-1", Ref{SpaceKey: "DEMO", Key: "REQ-1"}, true},
		{"", Ref{}, false},
		{"/X", Ref{}, false},
		{"DEMO/", Ref{}, false},
		{"A/B/C", Ref{}, false},
	}
	for _, tt := range tests {
		got, ok := ParseRef(tt.v)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRef(%q) = %+v, %v; want %+v, %v", tt.v, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCompareNumbers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		a, b string
		want int
	}{
		{"3", "3", 0}, {"3", "03", 0}, {"3", "3.00", 0}, {"-0", "0", 0}, {"-0.0", "0", 0},
		{"9", "10", -1}, {"10", "9", 1}, {"-10", "-9", -1}, {"-1", "1", -1}, {"1.5", "1.25", 1},
		{"0.1", "0.10", 0}, {"12345678901234567890", "12345678901234567891", -1},
	}
	for _, tt := range tests {
		if got := compareNumbers(tt.a, tt.b); got != tt.want {
			t.Errorf("compareNumbers(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestLike(t *testing.T) {
	t.Parallel()
	tests := []struct {
		s, p string
		want bool
	}{
		{"REQ-1", "req-1", true}, {"REQ-1", "REQ-%", true}, {"REQ-1", "%", true}, {"", "%", true},
		{"", "", true}, {"REQ-1", "%-%", true}, {"REQ-1", "%1%1", false}, {"abab", "%ab", true},
		{"aXbXc", "a%b%c", true}, {"ab", "a%b%b", false}, {"a_c", "a_c", true}, {"abc", "a_c", false},
		{"100%", `100\%`, true}, {"1000", `100\%`, false}, {`a\b`, `a\\b`, true}, {`a\`, `a\`, true},
		{"Größe", "GRÖSSE", false}, {"Größe", "größe", true},
	}
	for _, tt := range tests {
		if got := like(tt.s, tt.p); got != tt.want {
			t.Errorf("like(%q, %q) = %v, want %v", tt.s, tt.p, got, tt.want)
		}
	}
}
