package search_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// fakeStore is an in-memory search.Store and search.Settings that mimics
// the WikiTable's key orders, begins_with conditions, Limit (items
// evaluated, filters applied after) and LastEvaluatedKey (returned
// whenever Limit items were evaluated). It counts calls and items read.
type fakeStore struct {
	mu      sync.Mutex
	tenants map[string]*fakeTenant
	calls   map[string]int
	read    int
}

type fakeTenant struct {
	rows    []*requirement.Requirement // current rows (stubs included) and archived copies
	pages   map[string]*wiki.Page
	spaces  []string
	isolate bool
	// baselines are the committed baselines ("SPACE#n").
	baselines map[string]bool
}

func newFakeStore() *fakeStore {
	return &fakeStore{tenants: map[string]*fakeTenant{}, calls: map[string]int{}}
}

func (f *fakeStore) tenant(t string) *fakeTenant {
	ft, ok := f.tenants[t]
	if !ok {
		ft = &fakeTenant{pages: map[string]*wiki.Page{}}
		f.tenants[t] = ft
	}
	return ft
}

func (f *fakeStore) put(tenant string, rows ...*requirement.Requirement) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ft := f.tenant(tenant)
	for _, r := range rows {
		if !slices.Contains(ft.spaces, r.SpaceKey) && r.Status != "" {
			ft.spaces = append(ft.spaces, r.SpaceKey)
			slices.Sort(ft.spaces)
		}
		ft.rows = append(ft.rows, r)
	}
}

func (f *fakeStore) putPage(tenant string, p *wiki.Page) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tenant(tenant).pages[p.ID] = p
}

func (f *fakeStore) setIsolate(tenant string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tenant(tenant).isolate = on
}

func (f *fakeStore) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	clear(f.calls)
	f.read = 0
}

func (f *fakeStore) counts() (calls map[string]int, read int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := map[string]int{}
	for k, v := range f.calls {
		c[k] = v
	}
	return c, f.read
}

type fakeItem struct {
	sk  string
	row *requirement.Requirement
}

// page applies a Query's ordering, start, Limit and filter to items.
func (f *fakeStore) page(items []fakeItem, desc bool, after search.Token, limit int, filter func(*requirement.Requirement) bool) ([]*requirement.Requirement, search.Token) {
	slices.SortFunc(items, func(a, b fakeItem) int { return strings.Compare(a.sk, b.sk) })
	if desc {
		slices.Reverse(items)
	}
	start := 0
	if after != "" {
		start = slices.IndexFunc(items, func(it fakeItem) bool { return it.sk == string(after) }) + 1
		if start == 0 {
			panic("fake: unknown token " + after)
		}
	}
	items = items[start:]
	var next search.Token
	if limit > 0 && len(items) >= limit {
		items = items[:limit]
		next = search.Token(items[limit-1].sk)
	}
	f.calls["Query"]++
	f.read += len(items)
	var out []*requirement.Requirement
	for _, it := range items {
		if filter == nil || filter(it.row) {
			out = append(out, clone(it.row))
		}
	}
	return out, next
}

func (f *fakeStore) Rows(_ context.Context, tenant string, r search.Range, after search.Token, limit int) ([]*requirement.Requirement, search.Token, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := strings.ToUpper(r.Prefix)
	var items []fakeItem
	var filter func(*requirement.Requirement) bool
	for _, row := range f.tenant(tenant).rows {
		ku := strings.ToUpper(row.Key)
		var sk, cond string
		exact := false
		switch {
		case r.Baseline > 0:
			if row.Baseline != r.Baseline || row.SpaceKey != r.Space {
				continue
			}
			sk, cond, exact = "R#"+ku, "R#"+p, r.Exact
		case r.Space != "" && !r.Archived:
			if row.Baseline != 0 || row.SpaceKey != r.Space {
				continue
			}
			sk, cond, exact = "R#"+ku, "R#"+p, r.Exact
		case r.Archived:
			if row.Baseline == 0 {
				continue
			}
			sk = fmt.Sprintf("%s#%s#%08d", ku, row.SpaceKey, 99999999-row.Baseline)
			switch {
			case r.Exact && r.Space != "":
				cond = p + "#" + r.Space + "#"
			case r.Exact:
				cond = p + "#"
			default:
				cond = p
				if r.Space != "" {
					space := r.Space
					filter = func(x *requirement.Requirement) bool { return x.SpaceKey == space }
				}
			}
		default:
			if row.Baseline != 0 {
				continue
			}
			sk, cond = ku+"#"+row.SpaceKey, p
			if r.Exact {
				cond = p + "#"
			}
		}
		if exact && sk != cond || !exact && !strings.HasPrefix(sk, cond) {
			continue
		}
		items = append(items, fakeItem{sk: sk, row: row})
	}
	rows, next := f.page(items, r.Desc, after, limit, filter)
	return rows, next, nil
}

func (f *fakeStore) Index(_ context.Context, tenant string, ix search.IndexRef, desc bool, after search.Token, limit int) ([]requirement.ID, search.Token, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	want := strings.ToLower(ix.Value)
	if ix.Kind == search.IndexProperty {
		want = strings.ToLower(ix.Name + "#" + ix.Value)
	}
	var items []fakeItem
	for _, row := range f.tenant(tenant).rows {
		if row.Baseline != 0 || row.Status != requirement.Active || ix.Space != "" && row.SpaceKey != ix.Space {
			continue
		}
		var vals []string
		if ix.Kind == search.IndexProperty {
			for _, p := range row.Properties {
				vals = append(vals, strings.ToLower(p.Key+"#"+p.Value))
			}
		} else {
			for _, l := range row.Issues {
				vals = append(vals, strings.ToLower(l.IssueKey))
			}
		}
		if slices.Contains(vals, want) {
			items = append(items, fakeItem{sk: strings.ToUpper(row.Key) + "#" + row.SpaceKey, row: row})
		}
	}
	rows, next := f.page(items, desc, after, limit, nil)
	ids := make([]requirement.ID, len(rows))
	for i, r := range rows {
		ids[i] = requirement.ID{SpaceKey: r.SpaceKey, Key: r.Key}
	}
	return ids, next, nil
}

func (f *fakeStore) Get(_ context.Context, tenant string, ids []requirement.ID) ([]*requirement.Requirement, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["BatchGetItem"] += (len(ids) + 99) / 100
	seen := map[requirement.ID]bool{}
	var out []*requirement.Requirement
	for _, id := range ids {
		id.Key = strings.ToUpper(id.Key)
		if seen[id] {
			continue
		}
		seen[id] = true
		for _, row := range f.tenant(tenant).rows {
			if row.SpaceKey == id.SpaceKey && strings.EqualFold(row.Key, id.Key) && row.Baseline == id.Baseline {
				f.read++
				out = append(out, clone(row))
			}
		}
	}
	return out, nil
}

func (f *fakeStore) PageKeys(_ context.Context, tenant, pageID string) (string, []string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["GetItem"]++
	p, ok := f.tenant(tenant).pages[pageID]
	if !ok {
		return "", nil, apperr.NotFoundf("page %s not found", pageID)
	}
	f.read++
	return p.SpaceKey, slices.Clone(p.Keys), nil
}

// commit marks baseline n of space committed.
func (f *fakeStore) commit(tenant, space string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := f.tenant(tenant)
	if t.baselines == nil {
		t.baselines = map[string]bool{}
	}
	t.baselines[fmt.Sprintf("%s#%d", space, n)] = true
}

func (f *fakeStore) Baselines(_ context.Context, tenant, space string) (map[int]bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["Query"]++
	out := map[int]bool{}
	for k := range f.tenant(tenant).baselines {
		if s, n, ok := strings.Cut(k, "#"); ok && s == space {
			if v, err := strconv.Atoi(n); err == nil {
				out[v] = true
			}
		}
	}
	return out, nil
}

func (f *fakeStore) Spaces(_ context.Context, tenant string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["Query"]++
	return slices.Clone(f.tenant(tenant).spaces), nil
}

func (f *fakeStore) IsolateSpaces(_ context.Context, tenant string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["GetItem"]++
	return f.tenant(tenant).isolate, nil
}

func clone(r *requirement.Requirement) *requirement.Requirement {
	c := *r
	c.Properties = slices.Clone(r.Properties)
	c.Dependencies = slices.Clone(r.Dependencies)
	c.ReverseDependencies = slices.Clone(r.ReverseDependencies)
	c.Issues = slices.Clone(r.Issues)
	return &c
}

// bruteForce is the reference evaluator: every row of the tenant, the
// scope and status filter, query.Match with closures computed by
// query.Reach over the current rows, query.Order, offset and limit.
func bruteForce(rows []*requirement.Requirement, req search.Request, scope []string) []*requirement.Requirement {
	var current []*requirement.Requirement
	for _, r := range rows {
		if r.Baseline == 0 {
			current = append(current, r)
		}
	}
	env := query.ClosureSet{}
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
		env[c] = members
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
