package wikitable_test

// Tests of BaselineStore on DynamoDB Local through baseline.Service: the
// freeze writes copies then the record, keeps the current rows, renames
// the baseline page, cleans up after failures, and uses ⌈N/25⌉
// BatchWriteItem calls.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// baselineEnv is one test's baseline store and service over a counted client.
type baselineEnv struct {
	*saveEnv
	bl  *wikitable.BaselineStore
	svc *baseline.Service
}

func baselineNew(t *testing.T) *baselineEnv {
	t.Helper()
	e := saveNew(t)
	bl := wikitable.NewBaselineStore(e.db, e.env.WikiTable)
	return &baselineEnv{saveEnv: e, bl: bl, svc: baseline.New(baseline.Deps{Store: bl, Source: bl})}
}

// baselineSeed saves a page tree in DEMO: 100 "Specs" (REQ-1 -> REQ-2, REQ-2 ->
// OTHER/X-1), child 101 (REQ-3 -> REQ-1) with child 102 (REQ-4), and 200,
// the baseline page, without requirements.
func (e *baselineEnv) baselineSeed(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	save := func(id, parent, title, body string) {
		t.Helper()
		_, err := e.service.SavePage(ctx, "t1", "alice", wiki.PageInput{ID: id, SpaceKey: "DEMO", Title: title, ParentID: parent, Body: body})
		if err != nil {
			t.Fatalf("save page %s: %v", id, err)
		}
	}
	th := wt.TH("Key", "Description", "Refines")
	save("100", "", "Specs", wt.Table(th,
		wt.TR(wt.Def("REQ-1"), "<p>One</p>", wt.Link("", "REQ-2")),
		wt.TR(wt.Def("REQ-2"), "<p>Two</p>", wt.Link("OTHER", "X-1"))))
	save("101", "100", "Child", wt.Table(th, wt.TR(wt.Def("REQ-3"), "<p>Three</p>", wt.Link("", "REQ-1"))))
	save("102", "101", "Grandchild", wt.Table(th, wt.TR(wt.Def("REQ-4"), "<p>Four</p>", "")))
	save("200", "", "Baseline page", "<p>Baseline macro here</p>")
}

// baselineSnapshot returns the current rows of a space.
func (e *baselineEnv) baselineSnapshot(t *testing.T, space string) []*requirement.Requirement {
	t.Helper()
	var rows []*requirement.Requirement
	if err := e.reqs.QuerySpace(context.Background(), "t1", space, "", 1000, func(r *requirement.Requirement) bool {
		rows = append(rows, r)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return rows
}

func (e *baselineEnv) baselineCopies(t *testing.T, tenant, space string, n int) []*requirement.Requirement {
	t.Helper()
	var rows []*requirement.Requirement
	if err := e.reqs.QueryBaseline(context.Background(), tenant, space, n, 1000, func(r *requirement.Requirement) bool {
		rows = append(rows, r)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestBaselineLifecycle(t *testing.T) {
	t.Parallel()
	e := baselineNew(t)
	e.baselineSeed(t)
	ctx := context.Background()
	before := e.baselineSnapshot(t, "DEMO")
	pageBefore, err := e.store.Page(ctx, "t1", "200")
	if err != nil {
		t.Fatal(err)
	}

	b, err := e.svc.Create(ctx, "t1", "alice", "DEMO", baseline.CreateInput{Name: "Release 1.0", CEO: "200"})
	if err != nil {
		t.Fatal(err)
	}
	if b.Number != 1 || b.Count != 4 || b.CEO != "200" {
		t.Fatalf("baseline %+v", b)
	}
	// The current rows are unchanged.
	if after := e.baselineSnapshot(t, "DEMO"); !reflect.DeepEqual(before, after) {
		t.Errorf("current rows changed:\nbefore %+v\nafter  %+v", before, after)
	}
	// The copies are readable with Get(Baseline 1), archived, with the
	// dependencies inside the baseline only.
	r1, err := e.reqs.Get(ctx, "t1", requirement.ID{SpaceKey: "DEMO", Key: "req-1", Baseline: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r1.Status != requirement.Archived || r1.Baseline != 1 || r1.Text != "One" || r1.Origin.PageID != "100" ||
		len(r1.Dependencies) != 1 || r1.Dependencies[0].Key != "REQ-2" ||
		len(r1.ReverseDependencies) != 1 || r1.ReverseDependencies[0].Key != "REQ-3" {
		t.Errorf("copy of REQ-1: %+v", r1)
	}
	r2, err := e.reqs.Get(ctx, "t1", requirement.ID{SpaceKey: "DEMO", Key: "REQ-2", Baseline: 1})
	if err != nil || len(r2.Dependencies) != 0 || len(r2.ReverseDependencies) != 1 {
		t.Errorf("copy of REQ-2 (its link to OTHER/X-1 must go): %+v %v", r2, err)
	}
	if _, err := e.reqs.Get(ctx, "t1", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1", Baseline: 2}); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("baseline 2: %v", err)
	}
	// The archived copies are in gsi1 T#t#ARCH, as search reads them.
	var arch []string
	if err := e.reqs.QueryTenant(ctx, "t1", "REQ-", true, 100, func(r *requirement.Requirement) bool {
		arch = append(arch, fmt.Sprintf("%s/%d", r.Key, r.Baseline))
		return true
	}); err != nil || !slices.Equal(arch, []string{"REQ-1/1", "REQ-2/1", "REQ-3/1", "REQ-4/1"}) {
		t.Errorf("archived index: %v %v", arch, err)
	}
	// The baseline page is renamed, as a change of the page.
	page, err := e.store.Page(ctx, "t1", "200")
	if err != nil || page.Title != "Release 1.0" || page.Version != pageBefore.Version+1 || page.Body != pageBefore.Body {
		t.Errorf("baseline page: %+v %v", page, err)
	}

	// create-instant of the tree under 101: REQ-3 and REQ-4; no page renamed.
	bi, err := e.svc.CreateInstant(ctx, "t1", "bob", "DEMO", baseline.InstantInput{Name: "Child snapshot", FromCEO: "101", WithChildren: true})
	if err != nil {
		t.Fatal(err)
	}
	if bi.Number != 2 || bi.Count != 2 || !bi.Instant || bi.CEO != "101" {
		t.Errorf("instant baseline %+v", bi)
	}
	if got := e.baselineCopies(t, "t1", "DEMO", 2); len(got) != 2 || got[0].Key != "REQ-3" || len(got[0].Dependencies) != 0 {
		t.Errorf("instant copies %+v", got)
	}
	if p, _ := e.store.Page(ctx, "t1", "101"); p.Title != "Child" {
		t.Errorf("create-instant renamed page 101 to %q", p.Title)
	}

	list, err := e.svc.List(ctx, "t1", "DEMO")
	if err != nil || len(list) != 2 || list[0].Number != 1 || list[1].Number != 2 || list[0].Name != "Release 1.0" ||
		list[0].Count != 4 || list[0].CreatedBy != "alice" || !list[0].CreatedAt.Equal(b.CreatedAt) {
		t.Fatalf("list %+v %v", list, err)
	}
	pages, err := e.svc.Pages(ctx, "t1", "DEMO", 1)
	want := []baseline.PageCount{{PageID: "101", Title: "Child", Count: 1}, {PageID: "102", Title: "Grandchild", Count: 1}, {PageID: "100", Title: "Specs", Count: 2}}
	if err != nil || !slices.Equal(pages, want) {
		t.Errorf("pages %+v %v", pages, err)
	}
	lb, err := e.svc.SetLabel(ctx, "t1", "DEMO", 1, "approved")
	if err != nil || lb.Label != "approved" || lb.Count != 4 || lb.Name != "Release 1.0" {
		t.Errorf("label %+v %v", lb, err)
	}
	nums, err := e.bl.Numbers(ctx, "t1", "DEMO")
	if err != nil || !reflect.DeepEqual(nums, map[int]bool{1: true, 2: true}) {
		t.Errorf("numbers %v %v", nums, err)
	}

	// Another tenant sees none of it.
	if _, err := e.svc.Pages(ctx, "t2", "DEMO", 1); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("other tenant's pages: %v", err)
	}
	if _, err := e.svc.SetLabel(ctx, "t2", "DEMO", 1, "x"); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("other tenant's label: %v", err)
	}
	if err := e.svc.Delete(ctx, "t2", "DEMO", 1); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("other tenant's delete: %v", err)
	}
	if _, err := e.svc.List(ctx, "t2", "DEMO"); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("other tenant's list: %v", err)
	}

	if err := e.svc.Delete(ctx, "t1", "DEMO", 1); err != nil {
		t.Fatal(err)
	}
	if got := e.baselineCopies(t, "t1", "DEMO", 1); len(got) != 0 {
		t.Errorf("%d copies left after delete", len(got))
	}
	if ok, err := e.bl.Exists(ctx, "t1", "DEMO", 1); ok || err != nil {
		t.Errorf("exists after delete: %v %v", ok, err)
	}
	if err := e.svc.Delete(ctx, "t1", "DEMO", 1); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	if list, _ := e.svc.List(ctx, "t1", "DEMO"); len(list) != 1 || list[0].Number != 2 {
		t.Errorf("list after delete %+v", list)
	}
	// Numbers are never reused.
	if b3, err := e.svc.CreateInstant(ctx, "t1", "bob", "DEMO", baseline.InstantInput{Name: "again", FromCEO: "100"}); err != nil || b3.Number != 3 {
		t.Errorf("next baseline: %+v %v", b3, err)
	}
	if after := e.baselineSnapshot(t, "DEMO"); !reflect.DeepEqual(before, after) {
		t.Errorf("current rows changed by baselines")
	}
}

// baselineFaulty fails BatchWriteItem calls that put items after the first
// okPuts, and TransactWriteItems calls after the first okTx.
type baselineFaulty struct {
	dynamo.API
	okPuts, okTx int64
	puts, txs    atomic.Int64
}

var baselineErrInjected = errors.New("injected failure")

func (f *baselineFaulty) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	for _, ws := range in.RequestItems {
		if len(ws) > 0 && ws[0].PutRequest != nil && f.puts.Add(1) > f.okPuts {
			return nil, baselineErrInjected
		}
	}
	return f.API.BatchWriteItem(ctx, in, opts...)
}

func (f *baselineFaulty) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if f.txs.Add(1) > f.okTx {
		return nil, baselineErrInjected
	}
	return f.API.TransactWriteItems(ctx, in, opts...)
}

// TestBaselineFailedFreezeIsFinished checks that a freeze failing while
// writing copies, or when writing its record, is not dropped once
// numbered: the request answers it FREEZING, nothing is visible and the
// baseline page keeps its title until the worker finishes it, and the
// space's numbers stay dense. A freeze whose numbering fails takes no
// number.
func TestBaselineFailedFreezeIsFinished(t *testing.T) {
	t.Parallel()
	e := baselineNew(t)
	ctx := context.Background()
	var reqs []*requirement.Requirement
	for i := range 300 {
		reqs = append(reqs, &requirement.Requirement{SpaceKey: "DEMO", Key: fmt.Sprintf("K-%04d", i), Status: requirement.Active, Text: "t",
			Origin: requirement.PageRef{PageID: "100", Title: "Specs"}})
	}
	if err := e.reqs.Put(ctx, "t1", reqs); err != nil {
		t.Fatal(err)
	}
	e.baselineSeedPage(t, "200", "Baseline page")
	cases := []struct {
		name string
		f    *baselineFaulty
	}{
		{"copies fail", &baselineFaulty{okPuts: 5, okTx: 1 << 30}},
		{"record fails", &baselineFaulty{okPuts: 1 << 30, okTx: 1}},
		{"numbering fails", &baselineFaulty{okPuts: 1 << 30, okTx: 0}},
	}
	want := 0
	for _, c := range cases {
		c.f.API = e.db
		store := wikitable.NewBaselineStore(c.f, e.env.WikiTable)
		b, err := baseline.New(baseline.Deps{Store: store, Source: store}).Create(ctx, "t1", "alice", "DEMO", baseline.CreateInput{Name: c.name, CEO: "200"})
		finished := 1
		if c.f.okTx == 0 {
			finished = 0
			if !errors.Is(err, baselineErrInjected) {
				t.Fatalf("%s: %+v, %v; want the error", c.name, b, err)
			}
		} else {
			want++
			if err != nil || b.Number != want || b.Status != baseline.StatusFreezing {
				t.Fatalf("%s: %+v, %v; want baseline %d FREEZING", c.name, b, err, want)
			}
			if _, err := e.bl.Get(ctx, "t1", "DEMO", want); !errors.Is(err, apperr.ErrNotFound) {
				t.Errorf("%s: the baseline is visible before the worker finished it: %v", c.name, err)
			}
			if p, _ := e.store.Page(ctx, "t1", "200"); p.Title == c.name {
				t.Errorf("%s: page renamed before the worker finished", c.name)
			}
		}
		if rep, err := e.svc.RunJobs(ctx, time.Minute); err != nil || rep.Completed != finished {
			t.Fatalf("%s: the worker: %+v, %v", c.name, rep, err)
		}
		if p, _ := e.store.Page(ctx, "t1", "200"); finished == 1 && p.Title != c.name {
			t.Errorf("%s: the worker finished, the page is titled %q", c.name, p.Title)
		}
		list, err := e.bl.List(ctx, "t1", "DEMO")
		if err != nil || len(list) != want {
			t.Fatalf("%s: list %v %v, want %d baselines", c.name, list, err, want)
		}
		for i, b := range list {
			if b.Number != i+1 || b.Status != baseline.StatusComplete || b.Count != 300 {
				t.Errorf("%s: baseline %d is %+v, want number %d COMPLETE with 300 copies", c.name, i, b, i+1)
			}
		}
	}
	b, err := e.svc.Create(ctx, "t1", "alice", "DEMO", baseline.CreateInput{Name: "Fine", CEO: "200"})
	if err != nil || b.Number != want+1 || b.Count != 300 {
		t.Fatalf("after failures: %+v %v, want number %d", b, err, want+1)
	}
}

// baselineSeedPage saves an empty page in DEMO.
func (e *baselineEnv) baselineSeedPage(t *testing.T, id, title string) {
	t.Helper()
	if _, err := e.service.SavePage(context.Background(), "t1", "alice", wiki.PageInput{ID: id, SpaceKey: "DEMO", Title: title, Body: "<p>x</p>"}); err != nil {
		t.Fatal(err)
	}
}

// TestBaselineFreezeBatchCount freezes 5,000 requirements seeded with
// RequirementStore.Put and checks the DynamoDB calls: ⌈5000/25⌉ = 200
// BatchWriteItem calls, the space read in ⌈5000/500⌉ pages, the job
// numbered with the counter in one transaction, its writes and one
// transaction (record and page title).
func TestBaselineFreezeBatchCount(t *testing.T) {
	t.Parallel()
	e := baselineNew(t)
	ctx := context.Background()
	const n = 5000
	reqs := make([]*requirement.Requirement, 0, n)
	for i := range n {
		r := &requirement.Requirement{SpaceKey: "BIG", Key: fmt.Sprintf("REQ-%05d", i), Status: requirement.Active,
			Text: strings.Repeat("The system shall do something. ", 5), HTMLExcerpt: "<p>" + strings.Repeat("The system shall do something. ", 5) + "</p>",
			Properties:   []requirement.Property{{Key: "Priority", Value: "High"}},
			Origin:       requirement.PageRef{PageID: fmt.Sprint(1000 + i/250), Title: fmt.Sprint("Page ", i/250)},
			Dependencies: []requirement.Dependency{{SpaceKey: "BIG", Key: fmt.Sprintf("REQ-%05d", rand.IntN(2*n)), Relationship: "refines"}},
		}
		reqs = append(reqs, r)
	}
	if err := e.reqs.Put(ctx, "t1", reqs); err != nil {
		t.Fatal(err)
	}
	if _, err := e.service.SavePage(ctx, "t1", "alice", wiki.PageInput{ID: "1", SpaceKey: "BIG", Title: "Baselines", Body: "<p>x</p>"}); err != nil {
		t.Fatal(err)
	}
	// The freeze runs inline to the end whatever the machine's load: the
	// calls are what this test counts (the inline budget would hand a slow
	// freeze to the worker, with other calls).
	e.svc.InlineBudget = time.Hour
	e.calls.Reset()
	start := time.Now()
	b, err := e.svc.Create(ctx, "t1", "alice", "BIG", baseline.CreateInput{Name: "Big", CEO: "1"})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	counts := e.calls.Counts()
	t.Logf("froze %d requirements in %v: %v", b.Count, took.Round(time.Millisecond), counts)
	if b.Count != n {
		t.Errorf("count %d", b.Count)
	}
	// The space is read in 4 key ranges of ≤ 500 rows per Query, after 2
	// Queries for its first and last keys.
	if q := counts["Query"]; q < 2+n/500 || q > 2+n/500+4 {
		t.Errorf("%d Query calls, want %d to %d", q, 2+n/500, 2+n/500+4)
	}
	delete(counts, "Query")
	// The job: its key chunk (1 PutItem), the counter read (1 GetItem) and
	// the job numbered with the counter in one transaction, a progress save
	// after each slice of 1,000 but the last (4 UpdateItem), the commit
	// (1 transaction), the key chunk removed after it (1 DeleteItem).
	want := map[string]int{"GetItem": 3, "UpdateItem": n/1000 - 1, "PutItem": 1, "DeleteItem": 1, "BatchWriteItem": n / 25, "TransactWriteItems": 2}
	if !reflect.DeepEqual(counts, want) {
		t.Errorf("calls %v, want %v", counts, want)
	}
	// Dependencies outside the baseline (keys ≥ n do not exist) are gone.
	copies := e.baselineCopies(t, "t1", "BIG", 1)
	if len(copies) != n {
		t.Fatalf("%d copies", len(copies))
	}
	for i, c := range copies {
		if dep := reqs[i].Dependencies[0]; (dep.Key < fmt.Sprintf("REQ-%05d", n)) != (len(c.Dependencies) == 1) {
			t.Fatalf("copy %s: dependencies %v, current %v", c.Key, c.Dependencies, reqs[i].Dependencies)
		}
	}
	pages, err := e.svc.Pages(ctx, "t1", "BIG", 1)
	if err != nil || len(pages) != n/250 || pages[0].Count != 250 {
		t.Errorf("pages %d %v", len(pages), err)
	}

	e.calls.Reset()
	if err := e.svc.Delete(ctx, "t1", "BIG", 1); err != nil {
		t.Fatal(err)
	}
	if got := e.calls.Count("BatchWriteItem"); got != n/25 {
		t.Errorf("delete: %d BatchWriteItem calls, want %d", got, n/25)
	}
	if left := e.baselineCopies(t, "t1", "BIG", 1); len(left) != 0 {
		t.Errorf("%d copies left", len(left))
	}
}

// TestBaselinePagesFallback checks that a page summary too large for the record
// is computed from the copies.
func TestBaselinePagesFallback(t *testing.T) {
	t.Parallel()
	e := baselineNew(t)
	ctx := context.Background()
	copies := []*requirement.Requirement{
		{SpaceKey: "DEMO", Key: "A", Baseline: 1, Status: requirement.Archived, Origin: requirement.PageRef{PageID: "7", Title: "Seven"}},
		{SpaceKey: "DEMO", Key: "B", Baseline: 1, Status: requirement.Archived, Origin: requirement.PageRef{PageID: "7", Title: "Seven"}},
		{SpaceKey: "DEMO", Key: "C", Baseline: 1, Status: requirement.Archived, Origin: requirement.PageRef{PageID: "8", Title: "Eight"}},
	}
	if err := e.bl.PutCopies(ctx, "t1", copies); err != nil {
		t.Fatal(err)
	}
	var huge []baseline.PageCount
	for i := range 30000 {
		huge = append(huge, baseline.PageCount{PageID: fmt.Sprint(i), Title: fmt.Sprintf("%x%x", rand.Uint64(), rand.Uint64()), Count: 1})
	}
	job := &baseline.Job{Tenant: "t1", Owner: "me", Keys: []string{"A", "B", "C"},
		Baseline: baseline.Baseline{SpaceKey: "DEMO", Number: 1, Name: "n", CEO: "7", Instant: true, CreatedAt: time.Now(), Count: 3}}
	if err := e.bl.Begin(ctx, job); err != nil {
		t.Fatal(err)
	}
	job.Pages = huge
	if err := e.bl.Commit(ctx, job, false); err != nil {
		t.Fatal(err)
	}
	job.Pages = nil
	if err := e.bl.Commit(ctx, job, false); !errors.Is(err, apperr.ErrConflict) {
		t.Errorf("second commit: %v", err)
	}
	pages, err := e.svc.Pages(ctx, "t1", "DEMO", 1)
	want := []baseline.PageCount{{PageID: "8", Title: "Eight", Count: 1}, {PageID: "7", Title: "Seven", Count: 2}}
	if err != nil || !slices.Equal(pages, want) {
		t.Errorf("pages %.200v %v", fmt.Sprint(pages), err)
	}
}

// TestBaselineCommitPageGone checks that the record is not written when the
// baseline page disappeared, and the answer is 404.
func TestBaselineCommitPageGone(t *testing.T) {
	t.Parallel()
	e := baselineNew(t)
	job := &baseline.Job{Tenant: "t1", Owner: "me", Baseline: baseline.Baseline{SpaceKey: "DEMO", Number: 1, Name: "n", CEO: "404", CreatedAt: time.Now()}}
	if err := e.bl.Begin(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	err := e.bl.Commit(context.Background(), job, true)
	if !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("error %v", err)
	}
	if ok, _ := e.bl.Exists(context.Background(), "t1", "DEMO", 1); ok {
		t.Error("record written")
	}
}

// TestBaselineDeleteLeftovers checks that DELETE of a number without a
// record removes what a failed freeze left, that DELETE of a running
// freeze cancels it, and that a freeze cancelled that way cannot commit.
func TestBaselineDeleteLeftovers(t *testing.T) {
	t.Parallel()
	e := baselineNew(t)
	ctx := context.Background()
	copies := func(n int) []*requirement.Requirement {
		return []*requirement.Requirement{
			{SpaceKey: "DEMO", Key: "A", Baseline: n, Status: requirement.Archived},
			{SpaceKey: "DEMO", Key: "B", Baseline: n, Status: requirement.Archived},
		}
	}
	// Copies without record or mark (an interrupted delete): removed.
	if err := e.bl.PutCopies(ctx, "t1", copies(5)); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Delete(ctx, "t1", "DEMO", 5); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("delete 5: %v", err)
	}
	if left := e.baselineCopies(t, "t1", "DEMO", 5); len(left) != 0 {
		t.Errorf("baseline 5: %d copies left", len(left))
	}
	// A running freeze (a job) is cancelled by DELETE: job and copies
	// go, and the freeze can no longer commit.
	job := &baseline.Job{Tenant: "t1", Owner: "me", Keys: []string{"A", "B"},
		Baseline: baseline.Baseline{SpaceKey: "DEMO", Number: 6, Name: "late", CEO: "1", Instant: true, CreatedAt: time.Now()}}
	if err := e.bl.Begin(ctx, job); err != nil {
		t.Fatal(err)
	}
	if err := e.bl.PutCopies(ctx, "t1", copies(6)); err != nil {
		t.Fatal(err)
	}
	if err := e.svc.Delete(ctx, "t1", "DEMO", 6); err != nil {
		t.Fatalf("delete 6: %v", err)
	}
	if left := e.baselineCopies(t, "t1", "DEMO", 6); len(left) != 0 {
		t.Errorf("baseline 6: %d copies left", len(left))
	}
	if err := e.bl.Progress(ctx, job); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("progress of a cancelled job: %v", err)
	}
	if err := e.bl.Commit(ctx, job, false); !errors.Is(err, apperr.ErrConflict) {
		t.Errorf("late commit: %v", err)
	}
	if ok, _ := e.bl.Exists(ctx, "t1", "DEMO", 6); ok {
		t.Error("late commit wrote the record")
	}
}

// TestBaselineCommitsOutOfOrderKeepTheLatestTitle: two freezes of one
// space that commit out of number order leave the baseline page titled
// with the later baseline's name, both baselines committed.
func TestBaselineCommitsOutOfOrderKeepTheLatestTitle(t *testing.T) {
	t.Parallel()
	e := baselineNew(t)
	e.baselineSeed(t)
	ctx := context.Background()
	begin := func(number int, name string) *baseline.Job {
		t.Helper()
		job := &baseline.Job{Tenant: "t1", Owner: name, Baseline: baseline.Baseline{SpaceKey: "DEMO", Number: number, Name: name, CEO: "200", CreatedAt: time.Now()}}
		if err := e.bl.Begin(ctx, job); err != nil {
			t.Fatal(err)
		}
		return job
	}
	title := func() string {
		t.Helper()
		p, err := e.store.Page(ctx, "t1", "200")
		if err != nil {
			t.Fatal(err)
		}
		return p.Title
	}
	older, newer := begin(1, "Release 1"), begin(2, "Release 2")
	if err := e.bl.Commit(ctx, newer, true); err != nil {
		t.Fatal(err)
	}
	if err := e.bl.Commit(ctx, older, true); err != nil {
		t.Fatalf("the older commit: %v", err)
	}
	if got := title(); got != "Release 2" {
		t.Fatalf("page titled %q after committing 2 then 1, want Release 2", got)
	}
	for _, n := range []int{1, 2} {
		if ok, err := e.bl.Exists(ctx, "t1", "DEMO", n); !ok || err != nil {
			t.Errorf("baseline %d not committed: %v", n, err)
		}
	}
	// In order, the later one still wins.
	third, fourth := begin(3, "Release 3"), begin(4, "Release 4")
	for _, j := range []*baseline.Job{third, fourth} {
		if err := e.bl.Commit(ctx, j, true); err != nil {
			t.Fatal(err)
		}
	}
	if got := title(); got != "Release 4" {
		t.Fatalf("page titled %q after committing 3 then 4, want Release 4", got)
	}
}
