package wikiweb

import (
	"fmt"
	"testing"

	"github.com/reqtrace/reqtrace/shared/requirement"
)

// TestGraphOf50NodesIsReadable lays out a requirement with 20
// dependencies (each with a dependency of its own), 20 requirements
// depending on it and 9 issues: every node is drawn at its natural size,
// inside the picture, overlapping no other, and every edge joins two drawn
// nodes.
func TestGraphOf50NodesIsReadable(t *testing.T) {
	r := &requirement.Requirement{SpaceKey: "DEMO", Key: "REQ-1", Status: requirement.Active}
	level1 := map[requirement.ID]*requirement.Requirement{}
	level2 := map[requirement.ID]*requirement.Requirement{}
	for i := range 20 {
		dep := &requirement.Requirement{SpaceKey: "DEMO", Key: fmt.Sprintf("DEP-%02d", i), Status: requirement.Active,
			Dependencies:        []requirement.Dependency{{SpaceKey: "OTHER", Key: fmt.Sprintf("DEEP-%02d-WITH-A-RATHER-LONG-KEY", i), Relationship: "refines"}},
			ReverseDependencies: []requirement.Dependency{{SpaceKey: "DEMO", Key: "REQ-1", Relationship: "depends_on"}}}
		r.Dependencies = append(r.Dependencies, requirement.Dependency{SpaceKey: "DEMO", Key: dep.Key, Relationship: "depends_on"})
		level1[dep.ID()] = dep
		user := &requirement.Requirement{SpaceKey: "DEMO", Key: fmt.Sprintf("USER-%02d", i), Status: requirement.Deleted,
			Dependencies: []requirement.Dependency{{SpaceKey: "DEMO", Key: "REQ-1", Relationship: "depends_on"}}}
		r.ReverseDependencies = append(r.ReverseDependencies, requirement.Dependency{SpaceKey: "DEMO", Key: user.Key, Relationship: "depends_on"})
		level1[user.ID()] = user
	}
	for i := range 9 {
		r.Issues = append(r.Issues, requirement.IssueLink{ServiceID: "jira-1", IssueKey: fmt.Sprintf("PROJ-%d", i), Relationship: "implements", Page: i%2 == 0, Tracker: true})
	}
	g := layoutGraph(r, level1, level2)

	if want := 1 + 20 + 20 + 20 + 9; len(g.Nodes) != want || g.Omitted != 0 {
		t.Fatalf("%d nodes (%d omitted), want %d", len(g.Nodes), g.Omitted, want)
	}
	if want := 20 + 20 + 20 + 9; len(g.Edges) != want {
		t.Errorf("%d edges, want %d", len(g.Edges), want)
	}
	for i, a := range g.Nodes {
		if a.X < 0 || a.Y < 0 || a.X+a.W > g.Width || a.Y+a.H > g.Height {
			t.Errorf("node %s at (%d,%d %dx%d) outside %dx%d", a.Label, a.X, a.Y, a.W, a.H, g.Width, g.Height)
		}
		if len([]rune(a.Label)) > maxLabel {
			t.Errorf("label %q longer than its box holds", a.Label)
		}
		for _, b := range g.Nodes[i+1:] {
			if a.X < b.X+b.W && b.X < a.X+a.W && a.Y < b.Y+b.H && b.Y < a.Y+a.H {
				t.Errorf("nodes %s and %s overlap", a.Label, b.Label)
			}
		}
	}
	if g.Nodes[0].Title != "OTHER/DEEP-00-WITH-A-RATHER-LONG-KEY (no page defines it)" {
		t.Errorf("first node %q: want the first second-level dependency, with its full name", g.Nodes[0].Title)
	}
}

// TestGraphBoundsColumns keeps a column to maxPerColumn nodes and says how
// many were left out.
func TestGraphBoundsColumns(t *testing.T) {
	r := &requirement.Requirement{SpaceKey: "DEMO", Key: "REQ-1", Status: requirement.Active}
	for i := range maxPerColumn + 5 {
		r.ReverseDependencies = append(r.ReverseDependencies, requirement.Dependency{SpaceKey: "DEMO", Key: fmt.Sprintf("U-%03d", i), Relationship: "depends_on"})
	}
	g := layoutGraph(r, nil, nil)
	if len(g.Nodes) != maxPerColumn+1 || g.Omitted != 5 {
		t.Fatalf("%d nodes, %d omitted; want %d and 5", len(g.Nodes), g.Omitted, maxPerColumn+1)
	}
}
