package wikirequirements_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/shared/diff"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// diffWorld is random data of one seed: the rows of the current state and
// of baselines 1 and 2 of space DEMO, by folded key.
type diffWorld map[int]map[string]*requirement.Requirement

// randomRow returns a random requirement row of key in DEMO.
func randomRow(rng *rand.Rand, key string, n int, status requirement.Status) *requirement.Requirement {
	pick := func(vals ...string) string { return vals[rng.IntN(len(vals))] }
	r := &requirement.Requirement{SpaceKey: "DEMO", Key: key, Baseline: n, Status: status, Text: pick("a", "b", ""),
		Origin: requirement.PageRef{PageID: pick("1", "2"), Title: pick("T", "T renamed")}}
	name := pick("Priority", "PRIORITY")
	switch rng.IntN(4) {
	case 1:
		r.Properties = append(r.Properties, requirement.Property{Key: name, Value: "High"})
	case 2:
		r.Properties = append(r.Properties, requirement.Property{Key: name, Value: "Low"})
	case 3:
		r.Properties = append(r.Properties, requirement.Property{Key: name, Value: "High"}, requirement.Property{Key: name, Value: "Low"})
	}
	if v := pick("", "1", "2"); v != "" {
		r.Properties = append(r.Properties, requirement.Property{Key: pick("Cost", "cost"), Value: v, Type: requirement.External})
	}
	for _, target := range []string{"K00", "K01", "k02"} {
		if rng.IntN(3) == 0 {
			r.Dependencies = append(r.Dependencies, requirement.Dependency{SpaceKey: pick("", "DEMO", "OTHER"), Key: target, Relationship: pick("refines", "dependency")})
		}
	}
	for _, issue := range []string{"PROJ-1", "proj-1", "PROJ-2"} {
		if rng.IntN(3) == 0 {
			r.Issues = append(r.Issues, requirement.IssueLink{ServiceID: pick("", "jira-1"), IssueKey: issue, Relationship: "implements",
				Page: rng.IntN(2) == 0, Tracker: true})
		}
	}
	return r
}

// seedDiffWorld writes a random world: 30 keys, each on each side or not,
// current rows ACTIVE, DELETED, MOVED or stubs, copies often equal to the
// current row (so that many requirements are unchanged).
func seedDiffWorld(t *testing.T, s *server, seed uint64) diffWorld {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 19))
	w := diffWorld{0: {}, 1: {}, 2: {}}
	var rows []*requirement.Requirement
	for i := range 30 {
		key := fmt.Sprintf("K%02d", i)
		if rng.IntN(4) == 0 {
			key = strings.ToLower(key) // the same requirement whatever the case
		}
		var cur *requirement.Requirement
		switch x := rng.IntN(20); {
		case x < 3:
		case x < 5:
			cur = &requirement.Requirement{SpaceKey: "DEMO", Key: key, ReverseDependencies: []requirement.Dependency{{SpaceKey: "DEMO", Key: "K00"}}}
		case x < 15:
			cur = randomRow(rng, key, 0, requirement.Active)
		case x < 18:
			cur = randomRow(rng, key, 0, requirement.Deleted)
		default:
			cur = randomRow(rng, key, 0, requirement.Moved)
			cur.NewSpaceKey, cur.NewKey = "OTHER", key
		}
		if cur != nil {
			w[0][requirement.FoldKey(key)] = cur
			rows = append(rows, cur)
		}
		for n := 1; n <= 2; n++ {
			if rng.IntN(10) < 3 {
				continue
			}
			var cp *requirement.Requirement
			if cur != nil && cur.Status != "" && rng.IntN(2) == 0 {
				cp = cur.Clone()
				cp.Baseline, cp.Status, cp.NewSpaceKey, cp.NewKey = n, requirement.Archived, "", ""
				cp.Key = strings.ToUpper(key)
			} else {
				cp = randomRow(rng, key, n, requirement.Archived)
			}
			w[n][requirement.FoldKey(key)] = cp
			rows = append(rows, cp)
		}
	}
	if err := s.reqs.Put(context.Background(), "demo", rows); err != nil {
		t.Fatal(err)
	}
	httpapitest.CommitBaseline(t, s.bl, "demo", "DEMO", 1)
	httpapitest.CommitBaseline(t, s.bl, "demo", "DEMO", 2)
	return w
}

// bruteChange is what the brute force expects of one requirement.
type bruteChange struct {
	key, kind string
	fields    []string // folded field names
}

// bruteDiff compares two sides of w the slow way: every key, every field,
// written from the rules of docs/change-analysis.md without the diff's
// code. It returns the changes in key order and the summary.
func bruteDiff(w diffWorld, from, to int, q query.Expr) ([]bruteChange, map[string]int) {
	norm := func(r *requirement.Requirement) *requirement.Requirement {
		if r == nil || r.Status == "" {
			return nil
		}
		c := r.Clone()
		if c.Status == requirement.Archived {
			c.Status = requirement.Active
		}
		return c
	}
	live := func(r *requirement.Requirement) bool {
		return r != nil && r.Status == requirement.Active
	}
	props := func(r *requirement.Requirement, t requirement.PropertyType) map[string]string {
		out := map[string]string{}
		for _, p := range r.Properties {
			if p.Type == t {
				k := requirement.FoldPropertyName(p.Key)
				if _, ok := out[k]; ok {
					out[k] += "\x00"
				}
				out[k] += p.Value
			}
		}
		return out
	}
	deps := func(r *requirement.Requirement) []string {
		var out []string
		for _, d := range r.Dependencies {
			if d.SpaceKey == "" || d.SpaceKey == r.SpaceKey {
				out = append(out, requirement.FoldKey(d.Key)+" "+d.Relationship)
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	issues := func(r *requirement.Requirement) []string {
		var out []string
		for _, l := range r.Issues {
			out = append(out, l.ServiceID+" "+strings.ToUpper(l.IssueKey)+" "+l.Relationship)
		}
		slices.Sort(out)
		return slices.Compact(out)
	}
	keys := map[string]bool{}
	for k := range w[from] {
		keys[k] = true
	}
	for k := range w[to] {
		keys[k] = true
	}
	summary := map[string]int{}
	var out []bruteChange
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}) {
		x, y := norm(w[from][k]), norm(w[to][k])
		if !live(x) && !live(y) {
			continue
		}
		if !(x != nil && query.Match(q, x, nil) || y != nil && query.Match(q, y, nil)) {
			continue
		}
		c := bruteChange{key: k}
		switch {
		case x == nil:
			c.kind = "ADDED"
		case y == nil:
			c.kind = "REMOVED"
		default:
			if x.Text != y.Text {
				c.fields = append(c.fields, "text")
			}
			if x.Status != y.Status {
				c.fields = append(c.fields, "status")
			}
			if x.Origin.PageID != y.Origin.PageID {
				c.fields = append(c.fields, "origin")
			}
			for _, t := range []requirement.PropertyType{requirement.Inline, requirement.External} {
				prefix := "@"
				if t == requirement.External {
					prefix = "EXT@"
				}
				px, py := props(x, t), props(y, t)
				var names []string
				for n := range px {
					names = append(names, n)
				}
				for n := range py {
					if _, ok := px[n]; !ok {
						names = append(names, n)
					}
				}
				slices.Sort(names)
				for _, n := range names {
					vx, okx := px[n]
					vy, oky := py[n]
					if okx != oky || vx != vy {
						c.fields = append(c.fields, prefix+n)
					}
				}
			}
			if !slices.Equal(deps(x), deps(y)) {
				c.fields = append(c.fields, "dependencies")
			}
			if !slices.Equal(issues(x), issues(y)) {
				c.fields = append(c.fields, "issues")
			}
			if len(c.fields) == 0 {
				summary["unchanged"]++
				continue
			}
			c.kind = "MODIFIED"
		}
		summary[strings.ToLower(c.kind)]++
		if c.kind == "MODIFIED" {
			out = append(out, c)
		} else {
			out = append(out, bruteChange{key: k, kind: c.kind})
		}
	}
	return out, summary
}

// TestDiffAgainstBruteForce compares the diff's summary and changes with
// a brute-force comparison on random worlds (fixed seeds), for every pair
// of sides, with and without a query, paging through the changes, with
// sides read a few rows per Query.
func TestDiffAgainstBruteForce(t *testing.T) {
	t.Parallel()
	queries := []string{"", "@Priority = 'High'", "text = 'a' OR ext@Cost = '1'"}
	pairs := [][2]int{{1, 0}, {0, 1}, {1, 2}, {2, 0}}
	cases := 0
	for seed := uint64(1); seed <= 12; seed++ {
		s := newServer(t)
		s.diff.PageSize = 7
		w := seedDiffWorld(t, s, seed)
		for _, pair := range pairs {
			for _, qs := range queries {
				q, err := query.Parse(qs)
				if err != nil {
					t.Fatal(err)
				}
				want, wantSummary := bruteDiff(w, pair[0], pair[1], q)
				got, gotSummary := diffAll(t, s, pair[0], pair[1], qs)
				name := fmt.Sprintf("seed %d, %d → %d, q %q", seed, pair[0], pair[1], qs)
				if !mapsEqual(gotSummary, wantSummary) {
					t.Errorf("%s: summary %v, want %v", name, gotSummary, wantSummary)
				}
				if !slices.EqualFunc(got, want, func(a, b bruteChange) bool {
					return a.key == b.key && a.kind == b.kind && slices.Equal(a.fields, b.fields)
				}) {
					t.Errorf("%s: changes\n%v\nwant\n%v", name, got, want)
				}
				cases++
			}
		}
	}
	t.Logf("%d diffs compared with the brute force (12 seeds × 4 pairs of sides × 3 queries)", cases)
	fmt.Printf("TestDiffAgainstBruteForce: %d cases\n", cases)
}

// TestDiffSegmentsAgainstBruteForce compares the diff with the brute force
// when the sides are cut into several key ranges merged in parallel: 3
// rows a Query, so that the 30 keys of a world make several segments;
// few segments in flight and little room for the changes of those not yet
// emitted (none at all in the first configuration), so that they wait for
// their turn; and more segments than keys. In process it checks that the
// segmented path ran and that every row of each side was read exactly
// once, besides the one row of the Query of its last key.
func TestDiffSegmentsAgainstBruteForce(t *testing.T) {
	t.Parallel()
	configs := []struct{ segments, inFlight, buffer int }{{3, 2, 0}, {8, 3, 1}, {64, 64, 512}}
	queries := []string{"", "@Priority = 'High'"}
	pairs := [][2]int{{1, 0}, {0, 2}, {2, 1}}
	cases := 0
	for seed := uint64(31); seed <= 34; seed++ {
		s := newServer(t)
		s.diff.PageSize = 3
		w := seedDiffWorld(t, s, seed)
		for _, c := range configs {
			s.diff.Segments, s.diff.InFlight, s.diff.Buffer = c.segments, c.inFlight, c.buffer
			for _, pair := range pairs {
				for _, qs := range queries {
					q, err := query.Parse(qs)
					if err != nil {
						t.Fatal(err)
					}
					name := fmt.Sprintf("seed %d, %+v, %d → %d, q %q", seed, c, pair[0], pair[1], qs)
					want, wantSummary := bruteDiff(w, pair[0], pair[1], q)
					got, gotSummary := diffAll(t, s, pair[0], pair[1], qs)
					if !mapsEqual(gotSummary, wantSummary) {
						t.Errorf("%s: summary %v, want %v", name, gotSummary, wantSummary)
					}
					if !slices.EqualFunc(got, want, func(a, b bruteChange) bool {
						return a.key == b.key && a.kind == b.kind && slices.Equal(a.fields, b.fields)
					}) {
						t.Errorf("%s: changes\n%v\nwant\n%v", name, got, want)
					}
					res, err := s.diff.Diff(context.Background(), diff.Request{Tenant: "demo", Space: "DEMO", From: pair[0], To: pair[1], Query: q, Limit: 1})
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					read := func(n int) int {
						if len(w[n]) >= s.diff.PageSize {
							return len(w[n]) + 1 // and the last key
						}
						return len(w[n])
					}
					if res.Segments < 2 || res.Segments > c.segments || res.ReadFrom != read(pair[0]) || res.ReadTo != read(pair[1]) {
						t.Errorf("%s: %d segments, read %d + %d rows; want 2 to %d segments, %d + %d rows",
							name, res.Segments, res.ReadFrom, res.ReadTo, c.segments, read(pair[0]), read(pair[1]))
					}
					cases++
				}
			}
		}
	}
	t.Logf("%d segmented diffs compared with the brute force", cases)
}

func mapsEqual(a, b map[string]int) bool {
	for _, k := range []string{"added", "removed", "modified", "unchanged"} {
		if a[k] != b[k] {
			return false
		}
	}
	return true
}

// diffAll reads every page of a diff (4 changes a page) and returns its
// changes as the brute force writes them, and its summary.
func diffAll(t *testing.T, s *server, from, to int, q string) ([]bruteChange, map[string]int) {
	t.Helper()
	side := func(n int) string {
		if n == 0 {
			return "current"
		}
		return fmt.Sprint(n)
	}
	var out []bruteChange
	var summary map[string]int
	for offset := 0; ; offset += 4 {
		p := url.Values{"from": {side(from)}, "to": {side(to)}, "limit": {"4"}, "offset": {fmt.Sprint(offset)}}
		if q != "" {
			p.Set("q", q)
		}
		code, raw := getDiff(t, s, "demo-wiki-user", "DEMO", p)
		var body struct {
			Summary map[string]int `json:"summary"`
			Changes []struct {
				Key    string `json:"key"`
				Change string `json:"change"`
				Fields []struct {
					Field string `json:"field"`
				} `json:"fields"`
			} `json:"changes"`
			HasMore bool `json:"hasMore"`
		}
		if err := json.Unmarshal([]byte(raw), &body); err != nil || code != http.StatusOK {
			t.Fatalf("diff %v: %d %s", p, code, raw)
		}
		if summary != nil && !mapsEqual(summary, body.Summary) {
			t.Fatalf("diff %v: the summary changed between pages: %v then %v", p, summary, body.Summary)
		}
		summary = body.Summary
		for _, c := range body.Changes {
			bc := bruteChange{key: requirement.FoldKey(c.Key), kind: c.Change}
			if c.Change == "MODIFIED" {
				for _, f := range c.Fields {
					bc.fields = append(bc.fields, strings.ToUpper(f.Field))
				}
				for i, f := range bc.fields { // the fixed names compare in lower case
					if !strings.Contains(f, "@") {
						bc.fields[i] = strings.ToLower(f)
					}
				}
			}
			out = append(out, bc)
		}
		if !body.HasMore {
			return out, summary
		}
	}
}
