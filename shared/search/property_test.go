package search_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
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
func checkPlans(t *testing.T, svc *search.Service, all []*requirement.Requirement, titles map[string]string, req search.Request, scope []string, desc string) int {
	t.Helper()
	ctx := context.Background()
	want := names(bruteForce(all, titles, req, scope))
	wantMore := bruteHasMore(all, titles, req, scope)
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
		if res.HasMore != wantMore {
			t.Fatalf("%s\nplan %d (%s): hasMore %v, want %v", desc, i, res.Plan, res.HasMore, wantMore)
		}
	}
	return len(want)
}

// bruteHasMore is the reference hasMore: whether the page after req's has
// a result, by asking the brute-force evaluator for it.
func bruteHasMore(rows []*requirement.Requirement, titles map[string]string, req search.Request, scope []string) bool {
	limit := req.Limit
	if limit == 0 {
		limit = search.DefaultLimit
	}
	next := req
	next.Offset, next.Limit = req.Offset+min(limit, search.MaxLimit), 1
	return len(bruteForce(rows, titles, next, scope)) > 0
}

// bruteForce is the reference evaluator: every row of the tenant, the
// scope and status filter, query.Match with closures computed by
// query.Reach over the current rows and page names from the current
// titles of the pages that exist (id → title) and query.Cites over the
// current rows, query.Order, offset and limit.
func bruteForce(rows []*requirement.Requirement, titles map[string]string, req search.Request, scope []string) []*requirement.Requirement {
	var current []*requirement.Requirement
	for _, r := range rows {
		if r.Baseline == 0 {
			current = append(current, r)
		}
	}
	env := query.Sets{Closures: query.ClosureSet{}, Pages: map[string]*query.PageNames{}}
	for _, l := range query.PageLookups(req.Query) {
		n := &query.PageNames{Titled: map[string]bool{}, Cited: map[query.Ref]bool{}}
		for id, title := range titles {
			if query.SameTitle(title, l.Value) {
				n.Titled[id] = true
			}
		}
		for id := range titles {
			if l.Cited && (id == l.Value || n.Titled[id]) {
				for _, ref := range query.Cites(id, current) {
					n.Cited[ref] = true
				}
			}
		}
		env.Pages[l.Value] = n
	}
	for _, c := range query.Closures(req.Query) {
		members, _ := query.Reach(c, func(ref query.Ref) ([]query.Ref, error) {
			var out []query.Ref
			for _, r := range current {
				if query.Fold(r.Key) != ref.Key || ref.SpaceKey != "" && ref.SpaceKey != r.SpaceKey {
					continue
				}
				links := r.ReverseDependencies
				if c.Field == query.FieldChild {
					if r.Status != requirement.Active {
						continue
					}
					links = r.Dependencies
				}
				for _, l := range links {
					if c.Rel != "" && requirement.NormalizeRelationship(l.Relationship) != c.Rel {
						continue
					}
					space := l.SpaceKey
					if space == "" {
						space = r.SpaceKey
					}
					out = append(out, query.NewRef(space, l.Key))
				}
			}
			return out, nil
		})
		env.Closures[c] = members
	}
	order := req.Order
	if len(order) == 0 {
		order = query.DefaultOrder()
	}
	var out []*requirement.Requirement
	for _, r := range rows {
		if r.Status == "" || scope != nil && !slices.Contains(scope, r.SpaceKey) {
			continue
		}
		if !req.IncludeArchived && r.Status != requirement.Active {
			continue
		}
		if query.Match(req.Query, r, env) {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b *requirement.Requirement) int {
		switch {
		case order.Less(a, b):
			return -1
		case order.Less(b, a):
			return 1
		}
		return 0
	})
	limit := req.Limit
	if limit == 0 {
		limit = search.DefaultLimit
	}
	limit = min(limit, search.MaxLimit)
	if req.Offset >= len(out) {
		return nil
	}
	return out[req.Offset:min(len(out), req.Offset+limit)]
}

// names renders rows as SPACE/KEY@baseline for comparisons.
func names(rows []*requirement.Requirement) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%s/%s@%d", r.SpaceKey, r.Key, r.Baseline)
	}
	return out
}
