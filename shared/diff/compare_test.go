package diff

import (
	"errors"
	"fmt"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// names lists the changed fields with their values, for comparison.
func names(fields []Field) string {
	s := ""
	for _, f := range fields {
		s += fmt.Sprintf("%s:%v→%v;", f.Name, valuesOf(f.From), valuesOf(f.To))
	}
	return s
}

func TestCompare(t *testing.T) {
	t.Parallel()
	base := func() *requirement.Requirement {
		return &requirement.Requirement{SpaceKey: "DEMO", Key: "R-1", Status: requirement.Archived, Baseline: 1, Text: "t",
			Origin: requirement.PageRef{PageID: "1", Title: "Specs"},
			Properties: []requirement.Property{{Key: "Priority", Value: "High"}, {Key: "Priority", Value: "Low"},
				{Key: "Cost", Value: "1", Type: requirement.External}},
			Dependencies: []requirement.Dependency{{Key: "R-2", Relationship: "refines"}},
			Issues:       []requirement.IssueLink{{ServiceID: "jira-1", IssueKey: "P-1", Relationship: "implements", Page: true}}}
	}
	for _, tc := range []struct {
		name   string
		change func(r *requirement.Requirement)
		want   string
	}{
		{"an active current row equals its copy", func(r *requirement.Requirement) {}, ""},
		{"the page retitled is no change", func(r *requirement.Requirement) { r.Origin.Title = "New" }, ""},
		{"property names ignore case", func(r *requirement.Requirement) { r.Properties[0].Key, r.Properties[1].Key = "PRIORITY", "PRIORITY" }, ""},
		{"a dependency to another space is not compared", func(r *requirement.Requirement) {
			r.Dependencies = append(r.Dependencies, requirement.Dependency{SpaceKey: "OTHER", Key: "X", Relationship: "refines"})
		}, ""},
		{"the space of a dependency spelled out", func(r *requirement.Requirement) { r.Dependencies[0].SpaceKey = "DEMO" }, ""},
		{"who holds a link, an issue key's case", func(r *requirement.Requirement) {
			r.Issues[0].Page, r.Issues[0].Tracker, r.Issues[0].IssueKey = false, true, "p-1"
		}, ""},
		{"multi-valued property", func(r *requirement.Requirement) { r.Properties = r.Properties[1:] }, "@Priority:[High Low]→[Low];"},
		{"page order of values", func(r *requirement.Requirement) {
			r.Properties[0].Value, r.Properties[1].Value = "Low", "High"
		}, "@Priority:[High Low]→[Low High];"},
		{"external property removed", func(r *requirement.Requirement) { r.Properties = r.Properties[:2] }, "ext@Cost:[1]→[];"},
		{"status and text", func(r *requirement.Requirement) { r.Status, r.Text = requirement.Deleted, "u" },
			"text:[t]→[u];status:[ACTIVE]→[DELETED];"},
	} {
		cur := base()
		cur.Status, cur.Baseline = requirement.Active, 0
		tc.change(cur)
		if got := names(Compare(base(), cur)); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	added := Compare(nil, base())
	if got := names(added); got != "text:[]→[t];status:[]→[ACTIVE];origin:[]→[];@Priority:[]→[High Low];ext@Cost:[]→[1];dependencies:[]→[];issues:[]→[];" {
		t.Errorf("added: %s", got)
	}
	if deps := added[5].To.Dependencies; len(deps) != 1 || deps[0].SpaceKey != "DEMO" {
		t.Errorf("added dependencies %v", deps)
	}
}

func TestParseSide(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{"current": Current, "CURRENT": Current, "1": 1, "99999999": MaxBaseline} {
		if got, err := ParseSide("from", in); err != nil || got != want {
			t.Errorf("ParseSide(%q) = %d, %v", in, got, err)
		}
	}
	for _, in := range []string{"", "0", "-1", "01", "+1", "1.0", "100000000", "now", " 1"} {
		if _, err := ParseSide("from", in); !errors.Is(err, apperr.ErrInvalid) {
			t.Errorf("ParseSide(%q): %v, want invalid", in, err)
		}
	}
}

func FuzzParseSide(f *testing.F) {
	for _, s := range []string{"current", "1", "99999999", "0", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSide("to", s)
		if err != nil {
			return
		}
		if n != Current && (n < 1 || n > MaxBaseline || SideName(n) != s) {
			t.Fatalf("ParseSide(%q) = %d", s, n)
		}
	})
}
