package wikirequirements_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/requirement"
)

// seedCoverageWorld writes random rows of DEMO and OTHER for demo: keys in
// both cases, stubs and DELETED rows, dependencies of two relationships
// within and across spaces (their reverse dependencies on the targets
// that exist, as page saves keep them), issue links of two
// relationships and two integrations, the same issue in another case,
// suspect marks on some dependencies and issue links.
func seedCoverageWorld(t *testing.T, s *server, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 23))
	pick := func(vals ...string) string { return vals[rng.IntN(len(vals))] }
	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rows := map[requirement.ID]*requirement.Requirement{}
	var order []requirement.ID
	for _, space := range []string{"DEMO", "OTHER"} {
		for i := range 40 {
			key := fmt.Sprintf("K%02d", i)
			if rng.IntN(4) == 0 {
				key = strings.ToLower(key)
			}
			r := &requirement.Requirement{SpaceKey: space, Key: key, Status: requirement.Active, Text: pick("a", "=b", ""),
				Origin: requirement.PageRef{PageID: "1", Title: "T"}}
			switch rng.IntN(10) {
			case 0:
				r.Status = ""
			case 1:
				r.Status = requirement.Deleted
			}
			if rng.IntN(2) == 0 {
				r.Properties = []requirement.Property{{Key: "Priority", Value: pick("High", "Low")}}
			}
			rows[r.ID()], order = r, append(order, r.ID())
		}
	}
	for _, id := range order {
		r := rows[id]
		if r.Status == "" {
			continue
		}
		for range rng.IntN(4) {
			target := fmt.Sprintf("%s%02d", pick("K", "k"), rng.IntN(40))
			d := requirement.Dependency{SpaceKey: pick("DEMO", "DEMO", "OTHER"), Key: target, Relationship: pick("refines", "depends_on")}
			r.Dependencies = append(r.Dependencies, d)
			if rng.IntN(4) == 0 {
				r.Suspects = append(r.Suspects, requirement.Suspect{Target: d.Target(), Since: since, Fields: []string{"text"}, Page: "1", Version: 2})
			}
			if to := rows[d.Target()]; to != nil {
				to.ReverseDependencies = append(to.ReverseDependencies, requirement.Dependency{SpaceKey: r.SpaceKey, Key: r.Key, Relationship: d.Relationship})
			}
		}
		for range rng.IntN(3) {
			l := requirement.IssueLink{ServiceID: pick("", "jira-1", "jira-2"), IssueKey: pick("PROJ-", "proj-") + strconv.Itoa(rng.IntN(6)),
				Relationship: pick("implements", "tests"), Page: true}
			r.Issues = append(r.Issues, l)
			if rng.IntN(4) == 0 {
				r.Suspects = append(r.Suspects, requirement.Suspect{IssueKey: strings.ToUpper(l.IssueKey), Since: since, Fields: []string{"text"}, Page: "1", Version: 2})
			}
		}
	}
	list := make([]*requirement.Requirement, 0, len(order))
	for _, id := range order {
		list = append(list, rows[id])
	}
	if err := s.reqs.Put(context.Background(), "demo", list); err != nil {
		t.Fatal(err)
	}
}

// jsonRequirement is what the brute force reads of a requirement's JSON.
type jsonRequirement struct {
	SpaceKey, Key, Text string
	Dependencies        []struct {
		SpaceKey, Key, Relationship string
		Suspect                     bool
	}
	ReverseDependencies []struct{ SpaceKey, Key, Relationship string }
	Issues              []struct {
		IssueKey, Relationship string
		Suspect                bool
	}
}

// bruteCells computes the cells of one requirement's JSON for a column
// name (jira, to, from, optionally @rel), from the rules of
// docs/change-analysis.md "Coverage" without the coverage's code.
func bruteCells(r jsonRequirement, column string) []string {
	kind, rel, _ := strings.Cut(column, "@")
	out := []string{}
	seen := map[string]bool{}
	add := func(name string, suspect bool) {
		if seen[strings.ToUpper(name)] {
			return
		}
		seen[strings.ToUpper(name)] = true
		if suspect {
			name += " (suspect)"
		}
		out = append(out, name)
	}
	relOK := func(r string) bool { return rel == "" || requirement.NormalizeRelationship(r) == rel }
	switch kind {
	case "jira":
		for _, l := range r.Issues {
			if relOK(l.Relationship) {
				add(l.IssueKey, l.Suspect)
			}
		}
	case "to":
		for _, d := range r.Dependencies {
			if relOK(d.Relationship) {
				add(d.SpaceKey+"/"+d.Key, d.Suspect)
			}
		}
	case "from":
		for _, d := range r.ReverseDependencies {
			if relOK(d.Relationship) {
				add(d.SpaceKey+"/"+d.Key, false)
			}
		}
	}
	return out
}

// TestCoverageAgainstBruteForce builds matrices of random worlds (fixed
// seeds) through the API, paged 7 rows at a time, and compares the counts
// and every row's cells with a brute force over the search's JSON of the
// same query: the requirements' own links as the API shows them.
func TestCoverageAgainstBruteForce(t *testing.T) {
	t.Parallel()
	queries := []string{"", "@Priority = 'High'", "suspect IS TRUE", "to IS NOT NULL OR jira = 'PROJ-1'", "key ~ 'k1%'", "from@refines IS NULL"}
	columnSets := []string{"jira,to,from", "jira@implements,to@refines,from@depends_on", "from,jira@tests", "to@depends_on"}
	cases, rowsSeen := 0, 0
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) { // tables of its own
			s := newServer(t)
			seedCoverageWorld(t, s, seed)
			c, r := compareCoverage(t, s, seed, queries, columnSets)
			cases, rowsSeen = cases+c, rowsSeen+r
		})
	}
	t.Logf("compared %d matrices (%d rows) with the brute force", cases, rowsSeen)
}

// compareCoverage compares every matrix of queries × columnSets with the
// brute force and returns how many it compared, and their rows.
func compareCoverage(t *testing.T, s *server, seed uint64, queries, columnSets []string) (cases, rowsSeen int) {
	t.Helper()
	const tenant = "demo"
	for _, q := range queries {
		var matches []jsonRequirement
		for offset := 0; ; offset += 500 {
			a := search2(t, s, tenant+"-wiki-user", "DEMO", params("spaceKey", "DEMO", "q", q, "limit", "500", "offset", strconv.Itoa(offset)))
			var full struct{ Results []jsonRequirement }
			if err := json.Unmarshal([]byte(a.raw), &full); err != nil {
				t.Fatal(err)
			}
			matches = append(matches, full.Results...)
			if !*a.body.HasMore {
				break
			}
		}
		for _, cols := range columnSets {
			names := strings.Split(cols, ",")
			covered := make([]int, len(names))
			var want []string
			for _, r := range matches {
				line := r.SpaceKey + "/" + r.Key + " " + r.Text
				for i, c := range names {
					cell := bruteCells(r, c)
					if len(cell) > 0 {
						covered[i]++
					}
					line += fmt.Sprintf(" %s=%q", c, cell)
				}
				want = append(want, line)
			}
			var got []string
			for offset := 0; ; offset += 7 {
				a, raw := mustCoverage(t, s, tenant+"-wiki-user", "DEMO", params("columns", cols, "q", q, "limit", "7", "offset", strconv.Itoa(offset)))
				if len(a.Columns) != len(names) {
					t.Fatalf("seed %d q %q columns %s: %s", seed, q, cols, raw)
				}
				for i, c := range a.Columns {
					if c.Name != names[i] || c.Covered != covered[i] || c.Total != len(matches) {
						t.Fatalf("seed %d q %q: column %+v, want %s covered %d of %d", seed, q, c, names[i], covered[i], len(matches))
					}
				}
				for _, r := range a.Results {
					line := r.SpaceKey + "/" + r.Key + " " + r.Text
					for _, c := range names {
						line += fmt.Sprintf(" %s=%q", c, r.Cells[c])
					}
					got = append(got, line)
				}
				if a.HasMore != (offset+7 < len(matches)) {
					t.Fatalf("seed %d q %q offset %d: hasMore %v of %d", seed, q, offset, a.HasMore, len(matches))
				}
				if !a.HasMore {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d q %q columns %s:\n%s\nwant\n%s", seed, q, cols, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			cases++
			rowsSeen += len(matches)
		}
	}
	return cases, rowsSeen
}
