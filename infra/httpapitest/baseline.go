package httpapitest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// CommitBaseline writes the record of baseline n of space, as a finished
// freeze does: archived copies of that number are visible only then.
func CommitBaseline(t testing.TB, store *wikitable.BaselineStore, tenant, space string, n int) {
	t.Helper()
	job := &baseline.Job{Tenant: tenant, Owner: "test", Baseline: baseline.Baseline{
		SpaceKey: space, Number: n, Name: "b", CEO: "1", Instant: true, CreatedAt: time.Now()}}
	if err := store.Begin(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	if err := store.Commit(context.Background(), job, false); err != nil {
		t.Fatal(err)
	}
}

// ChangedRows returns n current ACTIVE requirements of space (about 600
// bytes each: a text, a property, a dependency on the next one, an issue
// link) followed by their copies in baseline n... of number 1 where one in
// a hundred (keys REQ-000000, REQ-000100, ...) has another text: the data
// of the large diff and export measurements (1% changed). Commit baseline 1
// after writing them.
func ChangedRows(space string, n int) []*requirement.Requirement {
	rows := make([]*requirement.Requirement, 0, 2*n)
	for i := range n {
		cur := &requirement.Requirement{SpaceKey: space, Key: fmt.Sprintf("REQ-%06d", i), Status: requirement.Active,
			Text:         strings.Repeat(fmt.Sprintf("The system shall do what requirement number %d says, and nothing else. ", i), 6),
			Origin:       requirement.PageRef{PageID: fmt.Sprint(1_000_000 + i/100), Title: "Specs"},
			Properties:   []requirement.Property{{Key: "Priority", Value: []string{"High", "Low", "=1+1"}[i%3]}},
			Dependencies: []requirement.Dependency{{SpaceKey: space, Key: fmt.Sprintf("REQ-%06d", (i+1)%n), Relationship: "refines"}},
			Issues:       []requirement.IssueLink{{IssueKey: fmt.Sprintf("PROJ-%d", i%500), Relationship: "implements", Page: true}}}
		cp := cur.Clone()
		cp.Baseline, cp.Status = 1, requirement.Archived
		if i%100 == 0 {
			cp.Text = "Old: " + cp.Text
		}
		rows = append(rows, cur, cp)
	}
	return rows
}
