package search_test

import (
	"context"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// seeds returns the seeds of the random worlds: SEARCH_SEED picks one.
func seeds(t *testing.T, n int) []uint64 {
	if s := os.Getenv("SEARCH_SEED"); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return []uint64{seed}
	}
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(i + 1)
	}
	return out
}

// checkPlans runs req with every plan the planner may pick and compares
// each answer with the brute-force evaluator's.
func checkPlans(t *testing.T, svc *search.Service, all []*requirement.Requirement, req search.Request, scope []string, desc string) {
	t.Helper()
	ctx := context.Background()
	want := names(bruteForce(all, req, scope))
	n, err := svc.PlanCount(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", desc, err)
	}
	for i := range n {
		res, err := svc.RunPlan(ctx, req, i)
		if err != nil {
			t.Fatalf("%s, plan %d: %v", desc, i, err)
		}
		if got := names(res.Requirements); !slices.Equal(got, want) {
			t.Fatalf("%s\nplan %d (%s):\n got  %v\n want %v", desc, i, res.Plan, got, want)
		}
	}
}

// TestPlansAgreeWithBruteForce (in memory): random worlds stored through the
// real indexing code into wikitest.Mem and copied into the fake store, many
// random queries, every plan compared with the brute force.
func TestPlansAgreeWithBruteForce(t *testing.T) {
	t.Parallel()
	for _, seed := range seeds(t, 20) {
		t.Run(strconv.FormatUint(seed, 10), func(t *testing.T) {
			t.Parallel()
			rnd := rand.New(rand.NewPCG(seed, 7))
			mem := wt.NewMem()
			fake := newFakeStore()
			var archived []*requirement.Requirement
			current := func() []*requirement.Requirement { return memRows(mem, "demo") }
			var hidden []*requirement.Requirement
			w := buildWorld(t, rnd, wiki.NewService(mem), "demo", 14, current,
				func(rows []*requirement.Requirement, n int, commit bool) {
					if !commit {
						hidden = append(hidden, rows...)
						return
					}
					archived = append(archived, rows...)
					for _, s := range wLinkSpaces {
						fake.commit("demo", s, n)
					}
				})
			// The brute force sees the committed copies only; the store
			// holds the uncommitted ones too.
			all := append(current(), archived...)
			fake.put("demo", all...)
			fake.put("demo", hidden...)
			for _, id := range w.pages {
				if p, err := mem.Page(context.Background(), "demo", id); err == nil {
					fake.putPage("demo", p)
				}
			}
			// Another tenant with the same vocabulary must never show up.
			fake.put("acme", &requirement.Requirement{SpaceKey: "A", Key: "REQ-1", Status: requirement.Active,
				Properties: []requirement.Property{{Key: "Priority", Value: "High"}}})
			isolate := rnd.IntN(2) == 0
			fake.setIsolate("demo", isolate)
			svc := search.NewService(fake, fake)
			for range 300 {
				req, scope, desc := randomRequest(t, rnd, w, "demo", isolate)
				checkPlans(t, svc, all, req, scope, desc)
			}
		})
	}
}

// memRows returns the current rows (stubs included) of every space and
// key of the vocabulary.
func memRows(mem *wt.Mem, tenant string) []*requirement.Requirement {
	var out []*requirement.Requirement
	seen := map[string]bool{}
	for _, s := range wLinkSpaces {
		for _, k := range wKeys {
			if r := mem.Row(tenant, s, k); r != nil && !seen[s+"/"+r.Key] {
				seen[s+"/"+r.Key] = true
				out = append(out, r)
			}
		}
	}
	return out
}
