package baseline_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// TestMain starts DynamoDB Local for the tests of what a freeze stores.
func TestMain(m *testing.M) { testenv.Main(m) }

// stack is a baseline service on the real store (DynamoDB Local), with the
// wiki that writes the pages and rows it freezes.
type stack struct {
	svc  *baseline.Service
	bl   *wikitable.BaselineStore
	wiki *wiki.Service
	reqs *wikitable.RequirementStore
}

// newStack returns a stack over store (the real one when nil).
func newStack(t *testing.T, store func(*wikitable.BaselineStore) baseline.Store) *stack {
	t.Helper()
	env := testenv.AWS(t)
	bl := wikitable.NewBaselineStore(env.DynamoDB, env.WikiTable)
	var st baseline.Store = bl
	if store != nil {
		st = store(bl)
	}
	return &stack{svc: baseline.New(baseline.Deps{Store: st, Source: bl}), bl: bl, wiki: wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(env.DynamoDB, env.WikiTable)}),
		reqs: wikitable.NewRequirementStore(env.DynamoDB, env.WikiTable)}
}

// seed stores for tenant, through the wiki, what seeded holds: in DEMO,
// page 10 (children 11 and 12; 12 has child 13) and page 20, in OTHER page
// 30 (a child of 10); A-1 refines A-2, B-1 and OTHER/X-1, A-2 refines C-1,
// B-2 refines A-1; A-3 on page 10 is DELETED (its row written so after the
// page, which still lists it). Page N is titled "Page N".
func (s *stack) seed(t *testing.T, tenant string) {
	t.Helper()
	ctx := context.Background()
	def := func(key string, refines ...string) string {
		links := ""
		for _, r := range refines {
			space, k := "", r
			if r == "X-1" {
				space = "OTHER"
			}
			links += wt.Link(space, k)
		}
		return wt.TR(wt.Def(key), "<p>text of "+key+"</p>", links)
	}
	save := func(id, space, parent string, rows ...string) {
		t.Helper()
		body := "<p>Baseline macro here</p>"
		if len(rows) > 0 {
			body = wt.Table(append([]string{wt.TH("Key", "Description", "Refines")}, rows...)...)
		}
		if _, err := s.wiki.SavePage(ctx, tenant, "alice", wiki.PageInput{ID: id, SpaceKey: space, Title: "Page " + id, ParentID: parent, Body: body}); err != nil {
			t.Fatalf("save page %s: %v", id, err)
		}
	}
	save("10", "DEMO", "", def("A-1", "A-2", "B-1", "X-1"), def("A-2", "C-1"), def("A-3"))
	save("11", "DEMO", "10", def("B-1"))
	save("12", "DEMO", "10", def("B-2", "A-1"))
	save("13", "DEMO", "12", def("C-1"))
	save("20", "DEMO", "")
	save("30", "OTHER", "10", def("X-1"))
	id := requirement.ID{SpaceKey: "DEMO", Key: "A-3"}
	rows, err := s.reqs.GetMany(ctx, tenant, []requirement.ID{id})
	if err != nil || rows[id] == nil {
		t.Fatalf("A-3: %v, %v", rows, err)
	}
	rows[id].Status = requirement.Deleted
	if err := s.reqs.Put(ctx, tenant, []*requirement.Requirement{rows[id]}); err != nil {
		t.Fatal(err)
	}
}

// copies returns the keys of the archived copies of baseline n, sorted.
func (s *stack) copies(t *testing.T, tenant, space string, n int) []string {
	t.Helper()
	var out []string
	if err := s.reqs.QueryBaseline(context.Background(), tenant, space, n, 1000, func(r *requirement.Requirement) bool {
		out = append(out, r.Key)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// title returns the title of a page.
func (s *stack) title(t *testing.T, tenant, id string) string {
	t.Helper()
	p, err := s.bl.Page(context.Background(), tenant, id)
	if err != nil {
		t.Fatal(err)
	}
	return p.Title
}

// jobs returns the numbers of the baselines of space still being frozen
// or failed (a job, no record).
func (s *stack) jobs(t *testing.T, tenant, space string) []int {
	t.Helper()
	list, err := s.bl.List(context.Background(), tenant, space)
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, b := range list {
		if b.Status != baseline.StatusComplete {
			out = append(out, b.Number)
		}
	}
	return out
}

// beforeCopies is the real store whose first PutCopies runs hook first.
type beforeCopies struct {
	*wikitable.BaselineStore
	hook func(context.Context) error
	once sync.Once
}

func (b *beforeCopies) PutCopies(ctx context.Context, tenant string, copies []*requirement.Requirement) error {
	var err error
	b.once.Do(func() { err = b.hook(ctx) })
	if err != nil {
		return err
	}
	return b.BaselineStore.PutCopies(ctx, tenant, copies)
}
