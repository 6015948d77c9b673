package wikitable_test

// The page save lease on DynamoDB Local: concurrent saves, deletes,
// reindexes and page views of one page never interleave their writes, a
// refused request writes nothing, and a crashed request's lease expires.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// leaseBarrier is a wiki.Store whose Page reads wait until n requests have
// read the page: they then all hold the same version and race for the
// lease, which makes "N parallel saves" deterministic.
type leaseBarrier struct {
	*wikitable.WikiStore
	wg *sync.WaitGroup
}

func (b leaseBarrier) Page(ctx context.Context, tenant, id string) (*wiki.Page, error) {
	p, err := b.WikiStore.Page(ctx, tenant, id)
	b.wg.Done()
	b.wg.Wait()
	return p, err
}

// leaseClient is one request's own service, with its own call counter.
type leaseClient struct {
	calls   *dynamo.CallCounter
	service *wiki.Service
}

func (e *saveEnv) clients(n int) []leaseClient {
	var wg sync.WaitGroup
	wg.Add(n)
	out := make([]leaseClient, n)
	for i := range out {
		calls := dynamo.NewCallCounter()
		store := wikitable.NewWikiStore(dynamodb.NewFromConfig(e.env.Config, calls.Options), e.env.WikiTable)
		out[i] = leaseClient{calls: calls, service: wiki.New(wiki.Deps{Store: leaseBarrier{WikiStore: store, wg: &wg}})}
	}
	return out
}

// tenantItems returns every item of a tenant (pk T#tenant#…), rendered.
func (e *saveEnv) tenantItems(t *testing.T, tenant string) map[string]string {
	t.Helper()
	out := map[string]string{}
	p := dynamodb.NewScanPaginator(e.env.DynamoDB, &dynamodb.ScanInput{
		TableName: &e.env.WikiTable, FilterExpression: aws.String("begins_with(pk, :t)"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberS{Value: "T#" + tenant + "#"}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			out[saveS(it, "pk")+" "+saveS(it, "sk")] = saveRender(it)
		}
	}
	return out
}

func saveS(it map[string]types.AttributeValue, k string) string {
	if v, ok := it[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// saveRender renders an item's readable values (binary bodies are skipped).
func saveRender(it map[string]types.AttributeValue) string {
	keys := make([]string, 0, len(it))
	for k := range it {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	var val func(v types.AttributeValue)
	val = func(v types.AttributeValue) {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			b.WriteString(v.Value)
		case *types.AttributeValueMemberN:
			b.WriteString(v.Value)
		case *types.AttributeValueMemberSS:
			b.WriteString(strings.Join(v.Value, ","))
		case *types.AttributeValueMemberL:
			for _, e := range v.Value {
				val(e)
				b.WriteString(";")
			}
		case *types.AttributeValueMemberM:
			b.WriteString(saveRender(v.Value))
		}
	}
	for _, k := range keys {
		b.WriteString(k + "=")
		val(it[k])
		b.WriteString(" ")
	}
	return b.String()
}

// raceBody is the page text request i sends: its own description,
// priority and issue key.
func raceBody(i int) string {
	return saveSpecs(
		saveReq("RACE-1", "Stays the same", "High"),
		saveReq("RACE-2", fmt.Sprintf("Text of request %d", i), fmt.Sprintf("Prio%d", i), wt.Jira(fmt.Sprintf("JRA-%d", 100+i), "")),
	)
}

// saveWrites are the operations that write.
var saveWrites = []string{"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"}

func TestWikiStoreParallelSavesOneWinner(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 8
	for round := range 3 {
		t.Run(fmt.Sprint("round ", round), func(t *testing.T) {
			t.Parallel()
			e := saveNew(t)
			tenant := "race"
			e.integration(t, tenant, "jira-1")
			e.save(t, tenant, "952", "DEMO", raceBody(0))
			before := e.tenantItems(t, tenant)

			clients := e.clients(n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					_, errs[i] = clients[i].service.SavePage(ctx, tenant, "alice",
						wiki.PageInput{ID: "952", SpaceKey: "DEMO", Title: "Race", Body: raceBody(i + 1)})
				})
			}
			wg.Wait()

			winner := -1
			for i, err := range errs {
				switch {
				case err == nil:
					if winner >= 0 {
						t.Fatalf("requests %d and %d both succeeded", winner+1, i+1)
					}
					winner = i
				case errors.Is(err, apperr.ErrConflict):
					// Refused at the lease: the page read and the failed
					// conditional UpdateItem, nothing else.
					c := clients[i].calls.Counts()
					if !saveMapsEqual(c, map[string]int{"GetItem": 1, "UpdateItem": 1}) {
						t.Errorf("refused request %d made calls %v", i+1, c)
					}
					if m := apperr.As(err).Message; !strings.Contains(m, "being saved by another request; retry") && !strings.Contains(m, "changed by another request") {
						t.Errorf("refusal: %q", m)
					}
				default:
					t.Fatalf("request %d: %v", i+1, err)
				}
			}
			if winner < 0 {
				t.Fatal("no request succeeded")
			}
			w := winner + 1
			t.Logf("request %d won; winner's calls %v", w, clients[winner].calls.Counts())

			// The page, the row, the index items and the messages are all
			// the winner's.
			pg, err := e.store.Page(ctx, tenant, "952")
			if err != nil || pg.Body != raceBody(w) || pg.Version != 2 {
				t.Fatalf("page v%d %v, want the body of request %d", pg.Version, err, w)
			}
			r := e.get(t, tenant, "DEMO", "RACE-2")
			if r.Status != requirement.Active || r.Text != fmt.Sprintf("Text of request %d", w) || !strings.Contains(r.HTMLExcerpt, fmt.Sprintf("request %d", w)) {
				t.Fatalf("RACE-2 %s %q %q, want request %d's", r.Status, r.Text, r.HTMLExcerpt, w)
			}
			if len(r.Issues) != 1 || r.Issues[0].IssueKey != fmt.Sprintf("JRA-%d", 100+w) {
				t.Fatalf("RACE-2 issues %+v", r.Issues)
			}
			for i := 0; i <= n; i++ {
				got := e.indexed(t, tenant, "Priority", fmt.Sprintf("Prio%d", i))
				if want := i == w; want != slices.Equal(got, []string{"DEMO/RACE-2"}) || !want && len(got) > 0 {
					t.Errorf("Prio%d index %v (winner %d)", i, got, w)
				}
			}
			got := e.outbox(t, tenant, "jira-1")
			want := []string{"LINK RACE-2 JRA-100", "UPDATED RACE-2", fmt.Sprintf("LINK RACE-2 JRA-%d", 100+w)}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("outbox %v, want %v", got, want)
			}

			// No item of the tenant mentions a refused request, and only
			// the winner's items changed.
			after := e.tenantItems(t, tenant)
			for k, v := range after {
				for i := 1; i <= n; i++ {
					if i == w {
						continue
					}
					for _, s := range []string{fmt.Sprintf("request %d<", i), fmt.Sprintf("request %d\"", i), fmt.Sprintf("JRA-%d", 100+i), fmt.Sprintf("prio%d", i)} {
						if strings.Contains(strings.ToLower(v), strings.ToLower(s)) || strings.Contains(strings.ToLower(k), strings.ToLower(s)) {
							t.Errorf("item %s mentions refused request %d (%s): %s", k, i, s, v)
						}
					}
				}
				if strings.Contains(v, "leaseId=") {
					t.Errorf("lease left on %s", k)
				}
			}
			changed := 0
			for k, v := range after {
				if before[k] != v {
					changed++
				}
			}
			t.Logf("%d items before, %d after, %d new or changed", len(before), len(after), changed)
		})
	}
}

func TestWikiStoreLeaseHeldRefusesEverything(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	e.save(t, "demo", "100", "DEMO", saveSpecs(saveReq("REQ-1", "One", "High"), saveReq("REQ-2", "Two", "Low")))
	// Flag REQ-2 for the page view (as a reindex does).
	old := e.get(t, "demo", "DEMO", "REQ-2")
	flagged := old.Clone()
	flagged.HTMLNeedsUpdating = true
	if err := e.store.Commit(ctx, "demo", &wiki.Change{Writes: []wiki.Write{{Old: old, New: flagged}}}); err != nil {
		t.Fatal(err)
	}
	lease, err := e.store.LeasePage(ctx, "demo", "100", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.LeasePage(ctx, "demo", "100", 1); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("second lease: %v", err)
	}
	before := e.tenantItems(t, "demo")

	e.calls.Reset()
	_, err = e.service.SavePage(ctx, "demo", "bob", wiki.PageInput{ID: "100", SpaceKey: "DEMO", Title: "T", Body: saveSpecs(saveReq("REQ-1", "Changed", "Low"))})
	if a := apperr.As(err); a == nil || a.Code != apperr.Conflict || a.Message != "page 100 is being saved by another request; retry" {
		t.Fatalf("save: %v", err)
	}
	if c := e.calls.Counts(); !saveMapsEqual(c, map[string]int{"GetItem": 1, "UpdateItem": 1}) {
		t.Fatalf("refused save made calls %v", c)
	}
	if err := e.service.DeletePage(ctx, "demo", "bob", "100"); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("delete: %v", err)
	}
	if _, err := e.service.Reindex(ctx, "demo", "bob", "100"); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("reindex: %v", err)
	}
	// The page view answers the rows as they are and gathers nothing.
	rows, err := e.service.ViewPage(ctx, "demo", "bob", "DEMO", "100")
	if err != nil || len(rows) != 2 {
		t.Fatalf("view: %v %v", rows, err)
	}
	if after := e.tenantItems(t, "demo"); !mapsEqualS(before, after) {
		t.Fatalf("refused requests changed items:\n%v\n%v", before, after)
	}

	// Released, the page is as it was: the lease attributes are gone.
	if err := e.store.ReleasePage(ctx, "demo", lease); err != nil {
		t.Fatal(err)
	}
	for k, v := range e.tenantItems(t, "demo") {
		if strings.Contains(v, "lease") {
			t.Fatalf("lease left on %s: %s", k, v)
		}
	}
	e.calls.Reset()
	rows, err = e.service.ViewPage(ctx, "demo", "bob", "DEMO", "100")
	if err != nil || len(rows) != 2 || rows[1].HTMLNeedsUpdating {
		t.Fatalf("view after release: %+v %v", rows, err)
	}
	// Page view with a flagged row: page, rows, lease, flagged rows again,
	// row write, lease end.
	if c, want := e.calls.Counts(), map[string]int{"GetItem": 1, "BatchGetItem": 2, "UpdateItem": 2, "BatchWriteItem": 1}; !saveMapsEqual(c, want) {
		t.Errorf("page view calls %v, want %v", c, want)
	}
	if e.get(t, "demo", "DEMO", "REQ-2").HTMLNeedsUpdating {
		t.Fatal("flag not cleared")
	}
	// Reindex that changes nothing of the page: lease taken and ended.
	e.calls.Reset()
	if _, err := e.service.Reindex(ctx, "demo", "bob", "100"); err != nil {
		t.Fatal(err)
	}
	if c, want := e.calls.Counts(), map[string]int{"GetItem": 1, "BatchGetItem": 1, "UpdateItem": 2}; !saveMapsEqual(c, want) {
		t.Errorf("reindex calls %v, want %v", c, want)
	}
	e.calls.Reset()
	if err := e.service.DeletePage(ctx, "demo", "bob", "100"); err != nil {
		t.Fatal(err)
	}
	// Delete: the rows (DELETED) in one batch, then their index items in
	// another (removals come after the rows).
	if c, want := e.calls.Counts(), map[string]int{"GetItem": 1, "UpdateItem": 1, "BatchGetItem": 1, "BatchWriteItem": 2, "DeleteItem": 1}; !saveMapsEqual(c, want) {
		t.Errorf("delete calls %v, want %v", c, want)
	}
}

func mapsEqualS(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A lease whose holder crashed expires: an existing page's and a new
// page's placeholder.
func TestWikiStoreExpiredLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	e.save(t, "demo", "100", "DEMO", saveSpecs(saveReq("REQ-1", "One", "High")))

	// A request that took the leases 61 s ago and crashed.
	crashed := wikitable.NewWikiStore(e.db, e.env.WikiTable)
	crashed.Now = func() time.Time { return time.Now().Add(-61 * time.Second) }
	if _, err := crashed.LeasePage(ctx, "demo", "100", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := crashed.LeasePage(ctx, "demo", "200", 0); err != nil {
		t.Fatal(err)
	}
	// The placeholder is no page.
	if _, err := e.store.Page(ctx, "demo", "200"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("placeholder read as a page: %v", err)
	}
	if _, err := e.store.PageInfo(ctx, "demo", "200"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("placeholder read as a page: %v", err)
	}

	e.save(t, "demo", "100", "DEMO", saveSpecs(saveReq("REQ-1", "One, again", "High")))
	e.save(t, "demo", "200", "DEMO", saveSpecs(saveReq("REQ-2", "Two", "High")))
	if r := e.get(t, "demo", "DEMO", "REQ-1"); r.Text != "One, again" {
		t.Fatalf("REQ-1 %q", r.Text)
	}
	if pg, err := e.store.Page(ctx, "demo", "200"); err != nil || pg.Version != 1 || !slices.Equal(pg.Keys, []string{"REQ-2"}) {
		t.Fatalf("page 200 %+v %v", pg, err)
	}

	// An unexpired lease of a page being created refuses a second create,
	// and a refused create leaves nothing behind once released.
	live, err := e.store.LeasePage(ctx, "demo", "300", 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.service.SavePage(ctx, "demo", "bob", wiki.PageInput{ID: "300", SpaceKey: "DEMO", Title: "T", Body: "<p>x</p>"})
	if a := apperr.As(err); a == nil || a.Code != apperr.Conflict || !strings.Contains(a.Message, "being saved by another request") {
		t.Fatalf("create during a create: %v", err)
	}
	if err := e.store.ReleasePage(ctx, "demo", live); err != nil {
		t.Fatal(err)
	}
	for k := range e.tenantItems(t, "demo") {
		if strings.Contains(k, "PAGE#300") {
			t.Fatalf("placeholder left: %s", k)
		}
	}

	// A request that outlived its lease (taken over by another) cannot
	// write its page: its commit is refused.
	old := wikitable.NewWikiStore(e.db, e.env.WikiTable)
	old.Now = crashed.Now
	stale, err := old.LeasePage(ctx, "demo", "100", 2)
	if err != nil {
		t.Fatal(err)
	}
	mine, err := e.store.LeasePage(ctx, "demo", "100", 2)
	if err != nil {
		t.Fatal(err)
	}
	pg, _ := e.store.Page(ctx, "demo", "100")
	pg.Version = 3
	if err := old.Commit(ctx, "demo", &wiki.Change{PutPage: pg, ExpectVersion: 2, Lease: stale}); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("commit under a lost lease: %v", err)
	}
	if err := e.store.ReleasePage(ctx, "demo", mine); err != nil {
		t.Fatal(err)
	}
}

// A delete and a save of one page in parallel: one of them happens, the
// other is refused having written nothing.
func TestWikiStoreDeleteVersusSave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for round := range 4 {
		t.Run(fmt.Sprint("round ", round), func(t *testing.T) {
			t.Parallel()
			e := saveNew(t)
			e.integration(t, "demo", "jira-1")
			e.save(t, "demo", "100", "DEMO", raceBody(0))
			clients := e.clients(2)
			var saveErr, delErr error
			var wg sync.WaitGroup
			wg.Go(func() {
				_, saveErr = clients[0].service.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "100", SpaceKey: "DEMO", Title: "Race", Body: raceBody(1)})
			})
			wg.Go(func() { delErr = clients[1].service.DeletePage(ctx, "demo", "bob", "100") })
			wg.Wait()
			if (saveErr == nil) == (delErr == nil) {
				t.Fatalf("save: %v, delete: %v; want exactly one", saveErr, delErr)
			}
			loser, err := 1, delErr
			if saveErr != nil {
				loser, err = 0, saveErr
			}
			if !errors.Is(err, apperr.ErrConflict) {
				t.Fatalf("refusal: %v", err)
			}
			if c := clients[loser].calls.Counts(); !saveMapsEqual(c, map[string]int{"GetItem": 1, "UpdateItem": 1}) {
				t.Errorf("refused request made calls %v", c)
			}
			r := e.get(t, "demo", "DEMO", "RACE-2")
			pg, perr := e.store.Page(ctx, "demo", "100")
			got := e.outbox(t, "demo", "jira-1")
			if saveErr == nil {
				if perr != nil || pg.Body != raceBody(1) || r.Status != requirement.Active || r.Text != "Text of request 1" {
					t.Fatalf("save won but page %v, RACE-2 %s %q", perr, r.Status, r.Text)
				}
				if !slices.Contains(got, "LINK RACE-2 JRA-101") || slices.Contains(got, "DELETED RACE-2") {
					t.Fatalf("outbox %v", got)
				}
			} else {
				if !errors.Is(perr, apperr.ErrNotFound) || r.Status != requirement.Deleted || r.Text != "Text of request 0" {
					t.Fatalf("delete won but page %v, RACE-2 %s %q", perr, r.Status, r.Text)
				}
				if !slices.Contains(got, "DELETED RACE-2") || slices.Contains(got, "LINK RACE-2 JRA-101") {
					t.Fatalf("outbox %v", got)
				}
			}
		})
	}
}
