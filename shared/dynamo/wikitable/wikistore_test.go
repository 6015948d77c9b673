package wikitable_test

// Tests of the wiki write path (pages, indexing, reverse dependencies,
// index items, outbox) on DynamoDB Local through infra/testenv, driven
// through wiki.Service as the content API drives it.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// saveEnv is one test's wiki store, service and call counter.
type saveEnv struct {
	env     *testenv.Env
	db      *dynamodb.Client
	calls   *dynamo.CallCounter
	store   *wikitable.WikiStore
	reqs    *wikitable.RequirementStore
	service *wiki.Service
}

func saveNew(t *testing.T) *saveEnv {
	t.Helper()
	env := testenv.AWS(t)
	calls := dynamo.NewCallCounter()
	db := dynamodb.NewFromConfig(env.Config, calls.Options)
	store := wikitable.NewWikiStore(db, env.WikiTable)
	return &saveEnv{env: env, db: db, calls: calls, store: store,
		reqs: wikitable.NewRequirementStore(db, env.WikiTable), service: wiki.New(wiki.Deps{Store: store})}
}

func (e *saveEnv) save(t *testing.T, tenant, id, space, body string) *wiki.Result {
	t.Helper()
	res, err := e.service.SavePage(context.Background(), tenant, "alice", wiki.PageInput{ID: id, SpaceKey: space, Title: "Page " + id, Body: body})
	if err != nil {
		t.Fatalf("save page %s: %v", id, err)
	}
	return res
}

func (e *saveEnv) get(t *testing.T, tenant, space, key string) *requirement.Requirement {
	t.Helper()
	r, err := e.reqs.Get(context.Background(), tenant, requirement.ID{SpaceKey: space, Key: key})
	if err != nil {
		t.Fatalf("get %s/%s: %v", space, key, err)
	}
	return r
}

// integration declares an integration the way the integrations store keys
// it (only pk and sk are read by the wiki store).
func (e *saveEnv) integration(t *testing.T, tenant, serviceID string) {
	t.Helper()
	_, err := e.env.DynamoDB.PutItem(context.Background(), &dynamodb.PutItemInput{
		TableName: &e.env.WikiTable,
		Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: "T#" + tenant + "#INTEG"},
			"sk": &types.AttributeValueMemberS{Value: serviceID},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// outbox returns "TYPE KEY OBJECT" of the messages stored for an
// integration, in id order (read from each of its shards).
func (e *saveEnv) outbox(t *testing.T, tenant, serviceID string) []string {
	t.Helper()
	var items []map[string]types.AttributeValue
	for n := range wikitable.OutboxShards {
		out, err := e.env.DynamoDB.Query(context.Background(), &dynamodb.QueryInput{
			TableName:              &e.env.WikiTable,
			KeyConditionExpression: aws.String("pk = :pk"),
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("T#%s#OUTBOX#%s#%02d", tenant, serviceID, n)},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		items = append(items, out.Items...)
	}
	slices.SortFunc(items, func(a, b map[string]types.AttributeValue) int {
		return strings.Compare(a["sk"].(*types.AttributeValueMemberS).Value, b["sk"].(*types.AttributeValueMemberS).Value)
	})
	var got []string
	for _, it := range items {
		s := func(k string) string {
			if v, ok := it[k].(*types.AttributeValueMemberS); ok {
				return v.Value
			}
			return ""
		}
		if s("state") != "NEW" || !strings.HasPrefix(s("gsi1pk"), "OUTBOX#PENDING#") {
			t.Errorf("message %v", it)
		}
		got = append(got, strings.TrimSpace(s("type")+" "+s("key")+" "+s("objectKey")))
	}
	return got
}

// indexed returns the ids found in a property index partition.
func (e *saveEnv) indexed(t *testing.T, tenant, name, value string) []string {
	t.Helper()
	var got []string
	err := e.reqs.QueryPropertyIndex(context.Background(), tenant, name, value, "", 0, func(id requirement.ID) bool {
		got = append(got, id.SpaceKey+"/"+id.Key)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func saveSpecs(rows ...string) string {
	return wt.Table(append([]string{wt.TH("Key", "Description", "Priority", "Implements")}, rows...)...)
}

func saveReq(key, text, prio string, extra ...string) string {
	return wt.TR(wt.Def(key), "<p>"+text+"</p>", prio, strings.Join(extra, " "))
}

func TestWikiStoreLifeCycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)

	// New page: ACTIVE rows, page item with its keys, space registered.
	res := e.save(t, "demo", "100", "DEMO", saveSpecs(
		saveReq("REQ-1", "One "+wt.Link("", "REQ-2"), "High"),
		saveReq("REQ-2", "Two "+wt.Link("OTHER", "X-1"), "Low"),
	))
	if res.Page.Version != 1 {
		t.Fatalf("version %d", res.Page.Version)
	}
	r1 := e.get(t, "demo", "DEMO", "REQ-1")
	if r1.Status != requirement.Active || r1.Text != "One REQ-2" || r1.Origin.PageID != "100" ||
		!slices.Equal(r1.Dependencies, []requirement.Dependency{{SpaceKey: "DEMO", Key: "REQ-2", Relationship: "dependency"}}) {
		t.Fatalf("REQ-1 %+v", r1)
	}
	if r2 := e.get(t, "demo", "DEMO", "REQ-2"); !slices.Equal(r2.ReverseDependencies, []requirement.Dependency{{SpaceKey: "DEMO", Key: "REQ-1", Relationship: "dependency"}}) {
		t.Fatalf("REQ-2 rdeps %+v", r2.ReverseDependencies)
	}
	// X-1 is a stub: it carries the reverse dependency but reads as absent.
	if _, err := e.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "OTHER", Key: "X-1"}); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("stub readable: %v", err)
	}
	stubs, err := e.store.Requirements(ctx, "demo", []requirement.ID{{SpaceKey: "OTHER", Key: "x-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if s := stubs[requirement.ID{SpaceKey: "OTHER", Key: "X-1"}]; s == nil || s.Status != "" ||
		!slices.Equal(s.ReverseDependencies, []requirement.Dependency{{SpaceKey: "DEMO", Key: "REQ-2", Relationship: "dependency"}}) {
		t.Fatalf("stub %+v", s)
	}
	if sp, err := e.store.Spaces(ctx, "demo"); err != nil || !slices.Equal(sp, []string{"DEMO"}) {
		t.Fatalf("spaces %v %v", sp, err)
	}

	// Defining X-1 later keeps the reverse dependency made before.
	e.save(t, "demo", "300", "OTHER", saveSpecs(saveReq("X-1", "Ex", "")))
	if x := e.get(t, "demo", "OTHER", "X-1"); x.Status != requirement.Active || len(x.ReverseDependencies) != 1 {
		t.Fatalf("X-1 %+v", x)
	}

	// ACTIVE -> DELETED, text kept; the edge to X-1 goes with it.
	e.save(t, "demo", "100", "DEMO", saveSpecs(saveReq("REQ-1", "One", "High")))
	if r := e.get(t, "demo", "DEMO", "REQ-2"); r.Status != requirement.Deleted || r.Text != "Two X-1" {
		t.Fatalf("REQ-2 %+v", r)
	}
	if x := e.get(t, "demo", "OTHER", "X-1"); len(x.ReverseDependencies) != 0 {
		t.Fatalf("X-1 rdeps %+v", x.ReverseDependencies)
	}

	// DELETED -> ACTIVE.
	e.save(t, "demo", "100", "DEMO", saveSpecs(saveReq("REQ-1", "One", "High"), saveReq("REQ-2", "Two back", "Low")))
	if r := e.get(t, "demo", "DEMO", "REQ-2"); r.Status != requirement.Active || r.Text != "Two back" {
		t.Fatalf("REQ-2 %+v", r)
	}

	// ACTIVE -> MOVED: the page goes to space NEW.
	res = e.save(t, "demo", "100", "NEW", saveSpecs(saveReq("REQ-1", "One", "High")))
	if res.Page.Version != 4 {
		t.Fatalf("version %d", res.Page.Version)
	}
	if r := e.get(t, "demo", "DEMO", "REQ-1"); r.Status != requirement.Moved || r.NewSpaceKey != "NEW" || r.NewKey != "REQ-1" {
		t.Fatalf("old REQ-1 %+v", r)
	}
	if r := e.get(t, "demo", "DEMO", "REQ-2"); r.Status != requirement.Deleted {
		t.Fatalf("old REQ-2 %+v", r)
	}
	if r := e.get(t, "demo", "NEW", "REQ-1"); r.Status != requirement.Active || r.Origin.PageID != "100" {
		t.Fatalf("new REQ-1 %+v", r)
	}
	if sp, _ := e.store.Spaces(ctx, "demo"); !slices.Equal(sp, []string{"DEMO", "NEW", "OTHER"}) {
		t.Fatalf("spaces %v", sp)
	}
	pg, err := e.store.Page(ctx, "demo", "100")
	if err != nil || pg.SpaceKey != "NEW" || pg.Version != 4 || !slices.Equal(pg.Keys, []string{"REQ-1"}) || !strings.Contains(pg.Body, "REQ-1") {
		t.Fatalf("page %+v %v", pg, err)
	}

	// Page delete -> DELETED; the page is gone.
	if err := e.service.DeletePage(ctx, "demo", "alice", "100"); err != nil {
		t.Fatal(err)
	}
	if r := e.get(t, "demo", "NEW", "REQ-1"); r.Status != requirement.Deleted || r.Text != "One" {
		t.Fatalf("REQ-1 after page delete %+v", r)
	}
	if _, err := e.store.Page(ctx, "demo", "100"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("deleted page: %v", err)
	}
}

func TestWikiStoreIndexItems(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	e.save(t, "demo", "100", "DEMO", saveSpecs(
		saveReq("REQ-1", "One", "High", wt.Jira("PROJ-1", "")),
		saveReq("REQ-2", "Two", "high"),
	))
	if got := e.indexed(t, "demo", "priority", "HIGH"); !slices.Equal(got, []string{"DEMO/REQ-1", "DEMO/REQ-2"}) {
		t.Fatalf("priority=high: %v", got)
	}
	var issues []string
	if err := e.reqs.QueryIssueIndex(ctx, "demo", "proj-1", "", 0, func(id requirement.ID) bool {
		issues = append(issues, id.SpaceKey+"/"+id.Key)
		return true
	}); err != nil || !slices.Equal(issues, []string{"DEMO/REQ-1"}) {
		t.Fatalf("issue index %v %v", issues, err)
	}
	// A changed value moves the row; a DELETED row leaves the index.
	e.save(t, "demo", "100", "DEMO", saveSpecs(saveReq("REQ-2", "Two", "Low")))
	if got := e.indexed(t, "demo", "Priority", "High"); len(got) != 0 {
		t.Fatalf("priority=high after: %v", got)
	}
	if got := e.indexed(t, "demo", "Priority", "Low"); !slices.Equal(got, []string{"DEMO/REQ-2"}) {
		t.Fatalf("priority=low: %v", got)
	}
	// Key prefix narrows the partition.
	e.save(t, "demo", "200", "DEMO", saveSpecs(saveReq("ABC-1", "x", "Low")))
	var pref []string
	if err := e.reqs.QueryPropertyIndex(ctx, "demo", "Priority", "Low", "abc", 0, func(id requirement.ID) bool {
		pref = append(pref, id.Key)
		return true
	}); err != nil || !slices.Equal(pref, []string{"ABC-1"}) {
		t.Fatalf("prefix %v %v", pref, err)
	}
	// Other tenants see nothing.
	if got := e.indexed(t, "acme", "Priority", "Low"); len(got) != 0 {
		t.Fatalf("acme sees %v", got)
	}
}

func TestWikiStoreOutboxExactlyOnce(t *testing.T) {
	t.Parallel()
	e := saveNew(t)
	e.integration(t, "demo", "jira-1")
	e.integration(t, "demo", "jira-2")
	body := saveSpecs(
		saveReq("REQ-1", "One", "High", wt.Jira("PROJ-1", "jira-1")),
		saveReq("REQ-2", "Two", "Low", wt.Jira("PROJ-2", "")),
		saveReq("REQ-3", "Three", "Low"),
	)
	e.save(t, "demo", "100", "DEMO", body)
	e.save(t, "demo", "100", "DEMO", body)
	if got := e.outbox(t, "demo", "jira-1"); !slices.Equal(got, []string{"LINK REQ-1 PROJ-1", "LINK REQ-2 PROJ-2"}) {
		t.Fatalf("jira-1 %v", got)
	}
	if got := e.outbox(t, "demo", "jira-2"); !slices.Equal(got, []string{"LINK REQ-2 PROJ-2"}) {
		t.Fatalf("jira-2 %v", got)
	}
	// UPDATED and DELETED, once each, however often the page is saved.
	body = saveSpecs(saveReq("REQ-1", "One changed", "High", wt.Jira("PROJ-1", "jira-1")))
	e.save(t, "demo", "100", "DEMO", body)
	e.save(t, "demo", "100", "DEMO", body)
	want := []string{"LINK REQ-1 PROJ-1", "LINK REQ-2 PROJ-2", "DELETED REQ-2", "UPDATED REQ-1"}
	if got := e.outbox(t, "demo", "jira-1"); !slices.Equal(got, want) {
		t.Fatalf("jira-1 %v, want %v", got, want)
	}
	// MOVED, once.
	e.save(t, "demo", "100", "NEW", body)
	e.save(t, "demo", "100", "NEW", body)
	if got := e.outbox(t, "demo", "jira-1"); !slices.Equal(got, append(want, "MOVED REQ-1")) {
		t.Fatalf("jira-1 %v", got)
	}
	if got := e.outbox(t, "acme", "jira-1"); len(got) != 0 {
		t.Fatalf("acme %v", got)
	}
}

// saveBigPage is a page of n requirements with two properties each and a
// dependency on the previous one (same page); with links, each has an
// issue link.
func saveBigPage(n int, links bool) string {
	rows := []string{wt.TH("Key", "Description", "Priority", "Category", "Implements")}
	for i := range n {
		desc := fmt.Sprintf("<p>Requirement %d shall do thing %d.", i, i)
		if i > 0 {
			desc += " " + wt.Link("", fmt.Sprintf("BIG-%d", i-1))
		}
		issue := ""
		if links {
			issue = wt.Jira(fmt.Sprintf("PROJ-%d", i), "jira-1")
		}
		rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("BIG-%d", i)), desc+"</p>", []string{"High", "Low"}[i%2], fmt.Sprintf("Cat %d", i%7), issue))
	}
	return wt.Table(rows...)
}

func saveCeil(a, b int) int { return (a + b - 1) / b }

// the performance targets: a page save of 400 requirements costs O(n/25) DynamoDB
// calls; an unchanged save reads and writes only the page.
func TestWikiStoreSaveCallCounts(t *testing.T) {
	t.Parallel()
	const n = 400
	for _, links := range []bool{false, true} {
		t.Run(fmt.Sprintf("links=%v", links), func(t *testing.T) {
			t.Parallel()
			e := saveNew(t)
			e.integration(t, "demo", "jira-1")
			body := saveBigPage(n, links)
			e.calls.Reset()
			e.save(t, "demo", "100", "DEMO", body)
			c := e.calls.Counts()
			t.Logf("save of %d new requirements: %v", n, c)
			// Rows and index items (2 properties, and an issue with links),
			// and the word index items: "BIG-i" and "Requirement i shall
			// do thing i. BIG-(i-1)" have the words REQUIREMENT, i, SHALL,
			// DO, THING, BIG and i-1 (the first one 6, without i-1).
			words := 7*n - 1
			items := n*3 + words
			// UpdateItem: the page's save lease (the page put ends it) and
			// the record of the 400 rows the page's key list does not
			// name yet (a new page), made before any row is written.
			want := map[string]int{"GetItem": 1, "UpdateItem": 2, "BatchGetItem": saveCeil(n, 100), "PutItem": 2, "BatchWriteItem": saveCeil(items, 25)}
			// O(n/25) calls: 4 per 25 requirements, 7 more for their words.
			limit := saveCeil(n, 25)*11 + 4
			if links {
				// Index items: 2 properties, the issue, and the marker
				// that the page holds links to jira-1 (reconcile's index);
				// then the rows, 25 a call; then their LINK messages, 25
				// a call, once the rows are written. No transaction: no
				// row's change marks another page's row suspect.
				want["BatchWriteItem"] = saveCeil(n*4+words, 25) + 2*saveCeil(n, 25)
				// The integrations, listed once for messages and warnings.
				want["Query"] = 1
				limit = saveCeil(n, 25)*14 + 4
			}
			for op, w := range want {
				if c[op] != w {
					t.Errorf("%s: %d calls, want %d (all: %v)", op, c[op], w, c)
				}
			}
			if total := e.calls.Total(); total > limit {
				t.Errorf("%d calls for %d requirements, want at most %d", total, n, limit)
			}
			if got := len(e.outbox(t, "demo", "jira-1")); links && got != n {
				t.Errorf("%d messages", got)
			}
			if r := e.get(t, "demo", "DEMO", "BIG-10"); len(r.ReverseDependencies) != 1 || r.ReverseDependencies[0].Key != "BIG-11" {
				t.Errorf("BIG-10 rdeps %+v", r.ReverseDependencies)
			}

			// The same page again: page read, lease, rows read, page
			// written; with issue macros, the integrations listed for the
			// answer's warnings.
			e.calls.Reset()
			e.save(t, "demo", "100", "DEMO", body)
			want = map[string]int{"GetItem": 1, "UpdateItem": 1, "BatchGetItem": saveCeil(n, 100), "PutItem": 1}
			if links {
				want["Query"] = 1
			}
			if c := e.calls.Counts(); !saveMapsEqual(c, want) {
				t.Errorf("unchanged save: %v, want %v", c, want)
			}
		})
	}
}

// A new page in a space this store already registered puts only the page:
// the space registry's conditional PutItem is made once per space and
// process, not once per new page.
func TestWikiStoreSaveRegistersKnownSpaceOnce(t *testing.T) {
	t.Parallel()
	e := saveNew(t)
	body := saveBigPage(10, false)
	e.calls.Reset()
	e.save(t, "demo", "100", "DEMO", body)
	if got := e.calls.Count("PutItem"); got != 2 {
		t.Errorf("first page of the space: %d PutItem, want 2 (the space registered, the page)", got)
	}
	e.calls.Reset()
	e.save(t, "demo", "101", "DEMO", strings.ReplaceAll(body, "BIG-", "OTHER-"))
	if got := e.calls.Count("PutItem"); got != 1 {
		t.Errorf("second new page of the space: %d PutItem, want 1 (the page only)", got)
	}
	e.calls.Reset()
	e.save(t, "demo", "102", "OTHER", strings.ReplaceAll(body, "BIG-", "THIRD-"))
	if got := e.calls.Count("PutItem"); got != 2 {
		t.Errorf("first page of another space: %d PutItem, want 2", got)
	}
	spaces, err := e.store.Spaces(context.Background(), "demo")
	if err != nil || !slices.Equal(spaces, []string{"DEMO", "OTHER"}) {
		t.Errorf("Spaces = %v, %v; want [DEMO OTHER]", spaces, err)
	}
}

// Reverse dependencies on another page's rows cost one transaction per 100
// rows changed, whatever the number of edges.
func TestWikiStoreCrossPageRDepsCallCounts(t *testing.T) {
	t.Parallel()
	e := saveNew(t)
	e.save(t, "demo", "100", "DEMO", saveBigPage(150, false))
	rows := []string{wt.TH("Key", "Description")}
	for i := range 150 {
		rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("REF-%d", i)), fmt.Sprintf("<p>see %s and %s</p>",
			wt.Link("", fmt.Sprintf("BIG-%d", i)), wt.Link("OTHER", fmt.Sprintf("NOPE-%d", i)))))
	}
	e.calls.Reset()
	e.save(t, "demo", "200", "DEMO", wt.Table(rows...))
	// 300 targets on other pages (150 rows of page 100, 150 new stubs).
	if got, want := e.calls.Count("TransactWriteItems"), saveCeil(300, 100); got != want {
		t.Fatalf("TransactWriteItems %d, want %d (%v)", got, want, e.calls.Counts())
	}
	if r := e.get(t, "demo", "DEMO", "BIG-7"); !slices.Contains(r.ReverseDependencies, requirement.Dependency{SpaceKey: "DEMO", Key: "REF-7", Relationship: "dependency"}) {
		t.Fatalf("BIG-7 rdeps %+v", r.ReverseDependencies)
	}
	// Dropping every link removes the 300 members again, in as many calls.
	rows = rows[:1]
	for i := range 150 {
		rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("REF-%d", i)), "<p>no links</p>"))
	}
	e.calls.Reset()
	e.save(t, "demo", "200", "DEMO", wt.Table(rows...))
	if got, want := e.calls.Count("TransactWriteItems"), saveCeil(300, 100); got != want {
		t.Fatalf("TransactWriteItems %d, want %d (%v)", got, want, e.calls.Counts())
	}
	if r := e.get(t, "demo", "DEMO", "BIG-7"); len(r.ReverseDependencies) != 1 || r.ReverseDependencies[0].Key != "BIG-8" {
		t.Fatalf("BIG-7 rdeps %+v", r.ReverseDependencies)
	}
}

func saveMapsEqual(a, b map[string]int) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

func TestWikiStoreGetRequirementIsOneRead(t *testing.T) {
	t.Parallel()
	e := saveNew(t)
	e.save(t, "demo", "100", "DEMO", saveSpecs(saveReq("REQ-1", "One", "High")))
	e.calls.Reset()
	r, err := e.service.Requirement(context.Background(), "demo", "DEMO", "req-1", 0)
	if err != nil || r.Key != "REQ-1" {
		t.Fatalf("%+v %v", r, err)
	}
	if c := e.calls.Counts(); !saveMapsEqual(c, map[string]int{"GetItem": 1}) {
		t.Fatalf("calls %v", c)
	}
}

func TestWikiStorePageTooLarge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	// 800 KB of random letters compress to about 500 KB: over the 400 KB
	// an item may hold.
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	b.WriteString("<p>" + wt.Def("REQ-1") + " ")
	for range 800 << 10 {
		b.WriteByte(byte('a' + rng.IntN(26)))
	}
	b.WriteString("</p>")
	_, err := e.service.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "100", SpaceKey: "DEMO", Title: "Big", Body: b.String()})
	if e := apperr.As(err); e == nil || e.Code != apperr.TooLarge || !strings.Contains(e.Message, "compressed") {
		t.Fatalf("got %v", err)
	}
	// Nothing was written.
	if _, err := e.store.Page(ctx, "demo", "100"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("page stored: %v", err)
	}
	if _, err := e.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"}); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("requirement stored: %v", err)
	}
	if e.calls.Count("BatchWriteItem")+e.calls.Count("PutItem")+e.calls.Count("TransactWriteItems") != 0 {
		t.Fatalf("writes %v", e.calls.Counts())
	}
}

func TestWikiStoreRequirementTooLarge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	// 300 KB of words: the page compresses well under the limit, but the
	// requirement's text and excerpt together exceed an item.
	words := strings.Repeat("lorem ipsum dolor sit amet ", 300<<10/27)
	body := "<p>" + wt.Def("REQ-0") + " small</p><p>" + wt.Def("REQ-1") + " " + words + "</p>"
	_, err := e.service.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "100", SpaceKey: "DEMO", Title: "Big", Body: body})
	if e := apperr.As(err); e == nil || e.Code != apperr.TooLarge || !strings.Contains(e.Message, "requirement DEMO/REQ-1") {
		t.Fatalf("got %v", err)
	}
	if _, err := e.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-0"}); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("REQ-0 stored: %v", err)
	}
	if _, err := e.store.Page(ctx, "demo", "100"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("page stored: %v", err)
	}
}

func TestWikiStoreTenantIsolation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	e.save(t, "demo", "100", "DEMO", saveSpecs(saveReq("REQ-1", "One", "High")))
	if _, err := e.service.Page(ctx, "acme", "100"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("acme reads demo's page: %v", err)
	}
	if _, err := e.service.Requirement(ctx, "acme", "DEMO", "REQ-1", 0); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("acme reads demo's requirement: %v", err)
	}
	if err := e.service.DeletePage(ctx, "acme", "mallory", "100"); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("acme deletes demo's page: %v", err)
	}
	// acme's own page 100 is another page.
	e.save(t, "acme", "100", "DEMO", saveSpecs(saveReq("REQ-1", "Acme one", "Low")))
	if r := e.get(t, "demo", "DEMO", "REQ-1"); r.Text != "One" {
		t.Fatalf("demo's row changed: %+v", r)
	}
	if pg, _ := e.store.Page(ctx, "demo", "100"); pg.Version != 1 {
		t.Fatalf("demo's page changed: %+v", pg)
	}
}

func TestWikiStorePagesAndChildren(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	for _, p := range []wiki.PageInput{
		{ID: "1", SpaceKey: "DEMO", Title: "Root"},
		{ID: "3", SpaceKey: "DEMO", Title: "Child B", ParentID: "1", Body: saveSpecs(saveReq("B-1", "b", ""))},
		{ID: "2", SpaceKey: "DEMO", Title: "Child A", ParentID: "1", Body: saveSpecs(saveReq("A-1", "a", ""), saveReq("A-2", "a", ""))},
		{ID: "4", SpaceKey: "DEMO", Title: "Grandchild", ParentID: "2"},
	} {
		if _, err := e.service.SavePage(ctx, "demo", "alice", p); err != nil {
			t.Fatal(err)
		}
	}
	kids, err := e.store.Children(ctx, "demo", "1")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, k := range kids {
		got = append(got, k.ID+":"+k.Title+":"+strings.Join(k.Keys, ","))
		if k.Body != "" {
			t.Errorf("child %s has a body", k.ID)
		}
	}
	if !slices.Equal(got, []string{"2:Child A:A-1,A-2", "3:Child B:B-1"}) {
		t.Fatalf("children %v", got)
	}
	info, err := e.store.PageInfo(ctx, "demo", "2")
	if err != nil || info.Body != "" || info.ParentID != "1" || info.Version != 1 || !slices.Equal(info.Keys, []string{"A-1", "A-2"}) || info.UpdatedAt.IsZero() {
		t.Fatalf("info %+v %v", info, err)
	}
	if kids, _ := e.store.Children(ctx, "acme", "1"); len(kids) != 0 {
		t.Fatalf("acme sees %v", kids)
	}
	// Re-parenting moves the page between trees.
	if _, err := e.service.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "3", SpaceKey: "DEMO", Title: "Child B", ParentID: "2"}); err != nil {
		t.Fatal(err)
	}
	if kids, _ := e.store.Children(ctx, "demo", "1"); len(kids) != 1 || kids[0].ID != "2" {
		t.Fatalf("children of 1 after move: %v", kids)
	}
}

func TestWikiStorePageVersionConflict(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	e.save(t, "demo", "100", "DEMO", "<p>x</p>")
	pg, err := e.store.Page(ctx, "demo", "100")
	if err != nil {
		t.Fatal(err)
	}
	pg.Version = 2
	if err := e.store.Commit(ctx, "demo", &wiki.Change{PutPage: pg, ExpectVersion: 5}); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("stale version: %v", err)
	}
	if err := e.store.Commit(ctx, "demo", &wiki.Change{PutPage: pg}); !errors.Is(err, apperr.ErrConflict) {
		t.Fatalf("create over existing: %v", err)
	}
	if err := e.store.Commit(ctx, "demo", &wiki.Change{PutPage: pg, ExpectVersion: 1}); err != nil {
		t.Fatal(err)
	}
}

// The spec's requirement status table (§3) on DynamoDB, row by row.
func TestWikiStoreStatusTable(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	e.integration(t, "demo", "jira-1")

	// Setup: REQ-2 is defined by page 100 first; page 200's definition is a
	// duplicate until page 100 drops it, which leaves it DELETED.
	e.save(t, "demo", "100", "DEMO", saveSpecs(saveReq("REQ-1", "One", "High"), saveReq("REQ-2", "Two by 100", "Low")))
	res := e.save(t, "demo", "200", "DEMO", saveSpecs(saveReq("REQ-2", "Two by 200", "High", wt.Jira("PROJ-2", "jira-1")), saveReq("REQ-3", "Three", "Low")))
	if !slices.Equal(res.Duplicates, []string{"REQ-2"}) {
		t.Fatalf("duplicates %v", res.Duplicates)
	}
	e.save(t, "demo", "100", "DEMO", saveSpecs(saveReq("REQ-1", "One", "High")))
	// GONE: in page 200's key list, ACTIVE, but not in its body (as if the
	// body had been restored from a backup).
	pg, err := e.store.Page(ctx, "demo", "200")
	if err != nil {
		t.Fatal(err)
	}
	gone := &requirement.Requirement{SpaceKey: "DEMO", Key: "GONE", Status: requirement.Active, Text: "Gone", Origin: pg.Ref(),
		Properties: []requirement.Property{{Key: "Priority", Value: "Gone"}}}
	next := *pg
	next.Keys = append(slices.Clone(pg.Keys), "GONE")
	if err := e.store.Commit(ctx, "demo", &wiki.Change{PutPage: &next, ExpectVersion: pg.Version, Writes: []wiki.Write{{New: gone}}}); err != nil {
		t.Fatal(err)
	}

	t.Run("reindex: ACTIVE or DELETED per content, flagged, only status and flag change", func(t *testing.T) {
		res, err := e.service.Reindex(ctx, "demo", "alice", "200")
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range res.Requirements {
			got = append(got, fmt.Sprintf("%s=%s/%v", s.Key, s.Status, s.HTMLNeedsUpdating))
		}
		if want := []string{"REQ-2=ACTIVE/true", "REQ-3=ACTIVE/false", "GONE=DELETED/false"}; !slices.Equal(got, want) {
			t.Fatalf("reindex %v, want %v", got, want)
		}
		r2 := e.get(t, "demo", "DEMO", "REQ-2")
		if r2.Status != requirement.Active || !r2.HTMLNeedsUpdating || r2.Origin.PageID != "200" || r2.Text != "Two by 100" {
			t.Fatalf("REQ-2 %+v", r2)
		}
		if g := e.get(t, "demo", "DEMO", "GONE"); g.Status != requirement.Deleted || g.Text != "Gone" {
			t.Fatalf("GONE %+v", g)
		}
		if got := e.indexed(t, "demo", "Priority", "Gone"); len(got) != 0 {
			t.Fatalf("DELETED row still indexed: %v", got)
		}
		if pg, _ := e.store.PageInfo(ctx, "demo", "200"); !slices.Equal(pg.Keys, []string{"REQ-2", "REQ-3"}) {
			t.Fatalf("keys %v", pg.Keys)
		}
		if _, err := e.service.Reindex(ctx, "demo", "alice", "999"); !errors.Is(err, apperr.ErrNotFound) {
			t.Fatalf("unknown page: %v", err)
		}
	})

	t.Run("page view: same status, excerpts saved as text and properties, flag cleared", func(t *testing.T) {
		rows, err := e.service.ViewPage(ctx, "demo", "bob", "DEMO", "200")
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) != 2 {
			t.Fatalf("rows %+v", rows)
		}
		r2 := e.get(t, "demo", "DEMO", "REQ-2")
		if r2.Status != requirement.Active || r2.HTMLNeedsUpdating || r2.Text != "Two by 200" ||
			!slices.Equal(r2.Properties, []requirement.Property{{Key: "Priority", Value: "High"}}) {
			t.Fatalf("REQ-2 %+v", r2)
		}
		if got := e.indexed(t, "demo", "Priority", "High"); !slices.Contains(got, "DEMO/REQ-2") {
			t.Fatalf("gathered property not indexed: %v", got)
		}
	})

	t.Run("baseline: the copy is archived, the ACTIVE row stays current", func(t *testing.T) {
		cp := e.get(t, "demo", "DEMO", "REQ-3")
		cp.Baseline, cp.Status = 1, requirement.Archived
		if err := e.reqs.Put(ctx, "demo", []*requirement.Requirement{cp}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.service.Requirement(ctx, "demo", "DEMO", "REQ-3", 1); !errors.Is(err, apperr.ErrNotFound) {
			t.Fatalf("copy of an uncommitted baseline: %v", err)
		}
		bl := wikitable.NewBaselineStore(e.db, e.env.WikiTable)
		job := &baseline.Job{Tenant: "demo", Owner: "test", Baseline: baseline.Baseline{SpaceKey: "DEMO", Number: 1, Name: "b", CEO: "1", Instant: true, CreatedAt: time.Now()}}
		if err := bl.Begin(ctx, job); err != nil {
			t.Fatal(err)
		}
		if err := bl.Commit(ctx, job, false); err != nil {
			t.Fatal(err)
		}
		got, err := e.service.Requirement(ctx, "demo", "DEMO", "REQ-3", 1)
		if err != nil || got.Status != requirement.Archived || got.Baseline != 1 {
			t.Fatalf("copy %+v %v", got, err)
		}
		if cur, err := e.service.Requirement(ctx, "demo", "DEMO", "REQ-3", 0); err != nil || cur.Status != requirement.Active {
			t.Fatalf("current %+v %v", cur, err)
		}
	})
}
