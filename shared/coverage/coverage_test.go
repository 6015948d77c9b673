package coverage_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/coverage"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

func TestParseColumns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string // names; nil: refused
	}{
		{"jira", []string{"jira"}},
		{" JIRA , To@Refines,from@Depends  On ", []string{"jira", "to@refines", "from@depends_on"}},
		{"jira,jira@tests,to,to@x,from,from@x", []string{"jira", "jira@tests", "to", "to@x", "from", "from@x"}},
		{"", nil},
		{"jira,", nil},
		{"parent", nil},
		{"to@", nil},
		{"to@ \t", nil},
		{"to@a\x01", nil},
		{"to@refines,TO@REFINES", nil},
		{strings.Repeat("to@x,", 20) + "jira", nil},
	} {
		cols, err := coverage.ParseColumns(tc.in)
		if tc.want == nil {
			var e *apperr.Error
			if !errors.As(err, &e) || e.Field != "columns" {
				t.Errorf("ParseColumns(%q) = %v, %v; want a 400 naming columns", tc.in, cols, err)
			}
			continue
		}
		var names []string
		for _, c := range cols {
			names = append(names, c.Name())
		}
		if err != nil || !slices.Equal(names, tc.want) {
			t.Errorf("ParseColumns(%q) = %v, %v; want %v", tc.in, names, err, tc.want)
		}
	}
}

// FuzzParseColumns: a list is refused as a 400 naming columns or parsed
// into at most MaxColumns distinct columns whose names parse back to them.
func FuzzParseColumns(f *testing.F) {
	for _, s := range []string{"jira", "to@refines,from", "jira@a b,to@", "from@\x00", "TO,to"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cols, err := coverage.ParseColumns(s)
		if err != nil {
			var e *apperr.Error
			if !errors.As(err, &e) || e.Field != "columns" {
				t.Fatalf("ParseColumns(%q): %v, want a 400 naming columns", s, err)
			}
			return
		}
		if len(cols) == 0 || len(cols) > coverage.MaxColumns {
			t.Fatalf("ParseColumns(%q): %d columns", s, len(cols))
		}
		names := make([]string, len(cols))
		for i, c := range cols {
			names[i] = c.Name()
		}
		again, err := coverage.ParseColumns(strings.Join(names, ","))
		if err != nil || !slices.Equal(again, cols) {
			t.Fatalf("ParseColumns(%q) = %v; its names %v parse to %v, %v", s, cols, names, again, err)
		}
	})
}

func TestCell(t *testing.T) {
	t.Parallel()
	r := &requirement.Requirement{SpaceKey: "DEMO", Key: "A",
		Dependencies: []requirement.Dependency{{SpaceKey: "DEMO", Key: "b", Relationship: "refines"}, {SpaceKey: "DEMO", Key: "B", Relationship: "depends_on"},
			{Key: "C", Relationship: "refines"}},
		ReverseDependencies: []requirement.Dependency{{SpaceKey: "OTHER", Key: "X", Relationship: "refines"}},
		Issues: []requirement.IssueLink{{IssueKey: "P-1", Relationship: "implements"}, {ServiceID: "j", IssueKey: "p-1", Relationship: "tests"},
			{IssueKey: "P-2", Relationship: "tests"}},
		Suspects: []requirement.Suspect{{Target: requirement.NewID("DEMO", "B", 0)}, {IssueKey: "P-2"}}}
	for _, tc := range []struct {
		col  string
		want []string
	}{
		{"jira", []string{"P-1", "P-2 (suspect)"}},
		{"jira@tests", []string{"p-1", "P-2 (suspect)"}},
		{"to", []string{"DEMO/b (suspect)", "DEMO/C"}},
		{"to@depends_on", []string{"DEMO/B (suspect)"}},
		{"from", []string{"OTHER/X"}},
		{"from@tests", []string{}},
	} {
		cols, err := coverage.ParseColumns(tc.col)
		if err != nil {
			t.Fatal(err)
		}
		if got := coverage.Cell(r, cols[0]); got == nil || !slices.Equal(got, tc.want) {
			t.Errorf("Cell(%s) = %q, want %q", tc.col, got, tc.want)
		}
	}
}
