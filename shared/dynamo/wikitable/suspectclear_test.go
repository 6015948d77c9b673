package wikitable_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// afterClearAPI runs then, once, right after the first call that removes
// suspect marks from a row (an UpdateItem or a TransactWriteItems whose
// update is a REMOVE) has returned: another writer acting in the middle of
// a clear.
type afterClearAPI struct {
	dynamo.API
	once sync.Once
	then func()
}

func (a *afterClearAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := a.API.UpdateItem(ctx, in, opts...)
	if strings.HasPrefix(aws.ToString(in.UpdateExpression), "REMOVE") {
		a.once.Do(a.then)
	}
	return out, err
}

func (a *afterClearAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	out, err := a.API.TransactWriteItems(ctx, in, opts...)
	for _, el := range in.TransactItems {
		if el.Update != nil && strings.HasPrefix(aws.ToString(el.Update.UpdateExpression), "REMOVE") {
			a.once.Do(a.then)
		}
	}
	return out, err
}

// suspectTarget and suspectReferrer are pages 1 and 2 of the clear tests:
// T-1, and R-1 refining it, at version v.
func suspectTarget(v string) string {
	return wt.Table(wt.TH("Key", "Description"), wt.TR(wt.Def("T-1"), "<p>Target, version "+v+".</p>"))
}

func suspectReferrer(v string) string {
	return wt.Table(wt.TH("Key", "Description"), wt.TR(wt.Def("R-1"), "<p>Refines "+wt.Link("", "T-1")+", version "+v+".</p>"))
}

// markReferrer saves both pages, then T-1 changed, and returns R-1 with
// its dependency on T-1 marked suspect.
func markReferrer(t *testing.T, e *saveEnv) *requirement.Requirement {
	t.Helper()
	e.save(t, "demo", "1", "DEMO", suspectTarget("1"))
	e.save(t, "demo", "2", "DEMO", suspectReferrer("1"))
	e.save(t, "demo", "1", "DEMO", suspectTarget("2"))
	r := e.get(t, "demo", "DEMO", "R-1")
	if len(r.Suspects) == 0 {
		t.Fatalf("R-1 not marked by the change of T-1: %+v", r)
	}
	return r
}

// suspectIndex lists the suspect index of tenant demo.
func suspectIndex(t *testing.T, e *saveEnv) []requirement.ID {
	t.Helper()
	ids, _, err := wikitable.NewSearchStore(e.db, e.env.WikiTable).Index(context.Background(), "demo", search.IndexRef{Kind: search.IndexSuspect}, false, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// TestClearSuspectsNeverLeavesAMarkOutOfTheIndex: a page save that marks a
// row while a clear of that row runs (right after the clear's write of
// the row) leaves the row marked and in the suspect index, so that
// `suspect IS TRUE` finds it. A clear that removed the index item in a
// call of its own, after the row's, deleted the new mark's index item.
func TestClearSuspectsNeverLeavesAMarkOutOfTheIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	r := markReferrer(t, e)

	hooked := &afterClearAPI{API: e.db, then: func() { e.save(t, "demo", "1", "DEMO", suspectTarget("3")) }}
	clearing := wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(hooked, e.env.WikiTable)})
	if n, err := clearing.ClearSuspects(ctx, "demo", []*requirement.Requirement{r}); err != nil || n != 1 {
		t.Fatalf("clear: %d %v, want 1 link cleared", n, err)
	}

	r = e.get(t, "demo", "DEMO", "R-1")
	ids := suspectIndex(t, e)
	inIndex := len(ids) == 1 && ids[0] == requirement.ID{SpaceKey: "DEMO", Key: "R-1"}
	if marked := len(r.Suspects) > 0; marked != inIndex || !marked {
		t.Fatalf("after a clear with a save marking meanwhile: R-1 marked %v (%+v), in the suspect index %v (%v); want both",
			marked, r.Suspects, inIndex, ids)
	}
}

// afterReadAPI runs then, once armed, right after the first BatchGetItem
// has returned: a page save that has read its rows.
type afterReadAPI struct {
	dynamo.API
	armed atomic.Bool
	then  func()
}

func (a *afterReadAPI) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	out, err := a.API.BatchGetItem(ctx, in, opts...)
	if a.armed.CompareAndSwap(true, false) {
		a.then()
	}
	return out, err
}

// TestClearSuspectsWaitsForTheRowsPageSave: a clear that runs while the
// marked row's own page is being saved, after the save read the row and
// before it wrote it, never leaves the marks the save read written back:
// the clear waits for the page's lease, so it clears what the save wrote.
func TestClearSuspectsWaitsForTheRowsPageSave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	r := markReferrer(t, e)

	// The save of R-1's page reads R-1 (marked); right then the clear
	// starts, on its own goroutine, and the save goes on.
	var cleared sync.WaitGroup
	var n int
	var clearErr error
	hooked := &afterReadAPI{API: e.db}
	hooked.then = func() {
		cleared.Go(func() { n, clearErr = e.service.ClearSuspects(ctx, "demo", []*requirement.Requirement{r}) })
	}
	saving := wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(hooked, e.env.WikiTable)})
	hooked.armed.Store(true)
	if _, err := saving.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "2", SpaceKey: "DEMO", Title: "Page 2", Body: suspectReferrer("2")}); err != nil {
		t.Fatal(err)
	}
	cleared.Wait()
	if clearErr != nil || n != 1 {
		t.Fatalf("clear: %d %v, want 1 link cleared", n, clearErr)
	}
	r = e.get(t, "demo", "DEMO", "R-1")
	if ids := suspectIndex(t, e); len(r.Suspects) > 0 || len(ids) > 0 {
		t.Fatalf("after a clear during a save of the row's page: R-1 marks %+v, suspect index %v; want none", r.Suspects, ids)
	}
}
