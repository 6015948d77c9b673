package wikibaselines_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikibaselines"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikirequirements"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// bgServer serves the baseline and requirement routes over a counted
// client, with a service that freezes nothing in the request.
type bgServer struct {
	*server
	svc   *baseline.Service
	calls *dynamo.CallCounter
	db    *dynamodb.Client
	table string
}

func newBgServer(t *testing.T, n int) *bgServer {
	t.Helper()
	env := testenv.AWS(t)
	calls := dynamo.NewCallCounter()
	db := dynamodb.NewFromConfig(env.Config, calls.Options)
	bl := wikitable.NewBaselineStore(db, env.WikiTable)
	svc := baseline.New(baseline.Deps{Store: bl, Source: bl})
	svc.InlineBudget, svc.SliceSize = 0, 500
	store := wikitable.NewWikiStore(db, env.WikiTable)
	rt := httpapi.NewRouter(auth.Wiki, auth.NewAuthenticator(devTokens, time.Minute))
	(&wikibaselines.Handler{Baselines: svc}).Register(rt)
	(&wikirequirements.Handler{Requirements: wiki.New(wiki.Deps{Store: store})}).Register(rt)
	s := &bgServer{server: &server{Handler: rt, pages: wiki.New(wiki.Deps{Store: store}), store: store}, svc: svc, calls: calls, db: db, table: env.WikiTable}
	ctx := context.Background()
	if _, err := s.pages.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "300", SpaceKey: "BIG", Title: "Baselines", Body: "<p>x</p>"}); err != nil {
		t.Fatal(err)
	}
	reqs := make([]*requirement.Requirement, 0, n)
	for i := range n {
		reqs = append(reqs, &requirement.Requirement{SpaceKey: "BIG", Key: fmt.Sprintf("REQ-%05d", i), Status: requirement.Active,
			Text: fmt.Sprint("Requirement ", i), Origin: requirement.PageRef{PageID: fmt.Sprint(1000 + i/500), Title: fmt.Sprint("Page ", i/500)},
			Dependencies: []requirement.Dependency{{SpaceKey: "BIG", Key: fmt.Sprintf("REQ-%05d", (i+1)%n), Relationship: "refines"}}})
	}
	if err := wikitable.NewRequirementStore(db, env.WikiTable).Put(ctx, "demo", reqs); err != nil {
		t.Fatal(err)
	}
	calls.Reset()
	return s
}

// items counts the items of a partition (copies and job key chunks).
func (s *bgServer) items(t *testing.T, pk string) int {
	t.Helper()
	p := dynamodb.NewQueryPaginator(s.db, &dynamodb.QueryInput{
		TableName: &s.table, KeyConditionExpression: aws.String("pk = :pk"), Select: types.SelectCount,
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: pk}},
	})
	n := 0
	for p.HasMorePages() {
		out, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n += int(out.Count)
	}
	return n
}

// TestBackgroundFreeze freezes 2,000 requirements with no inline budget:
// 202 FREEZING, listed with progress, copies invisible until the worker
// (run with a tiny budget, one slice of 500 per run, and twice in
// parallel to exercise the lease) commits; ⌈N/25⌉ BatchWriteItem calls
// over all runs.
func TestBackgroundFreeze(t *testing.T) {
	t.Parallel()
	const n = 2000
	s := newBgServer(t, n)
	const user = "demo-wiki-user"
	ctx := context.Background()
	a := do(t, s, "POST", base+"BIG/1/create", user, "application/json", `{"name": "Big", "ceo": "300"}`)
	if a.code != 202 || a.obj["status"] != "FREEZING" || a.obj["number"] != 1.0 || fmt.Sprint(a.obj["progress"]) != "map[total:2000 written:0]" {
		t.Fatalf("create: %d %s", a.code, a.raw)
	}
	// Invisible while freezing.
	if r := do(t, s, "GET", "/rest/reqs/1/requirement2/BIG/REQ-00001?v=1", user, "", ""); r.code != 404 || !strings.Contains(r.raw, "baseline 1 not found") {
		t.Errorf("copy while freezing: %d %s", r.code, r.raw)
	}
	rep, err := s.svc.RunJobs(ctx, time.Nanosecond)
	if err != nil || rep.Jobs != 1 || rep.Copies != 500 {
		t.Fatalf("first run: %+v, %v", rep, err)
	}
	a = do(t, s, "GET", base+"BIG", user, "", "")
	if len(a.list) != 1 || a.list[0]["status"] != "FREEZING" || fmt.Sprint(a.list[0]["progress"]) != "map[total:2000 written:500]" {
		t.Fatalf("list while freezing: %s", a.raw)
	}
	if r := do(t, s, "GET", "/rest/reqs/1/requirement2/BIG/REQ-00001?v=1", user, "", ""); r.code != 404 {
		t.Errorf("copy while freezing: %d %s", r.code, r.raw)
	}
	// Two workers at once: the lease lets one of them work at a time.
	for runs := 0; ; runs++ {
		if runs > 10 {
			t.Fatal("the workers do not finish")
		}
		var wg sync.WaitGroup
		reps := make([]baseline.JobReport, 2)
		for i := range reps {
			wg.Go(func() {
				var err error
				if reps[i], err = s.svc.RunJobs(ctx, time.Nanosecond); err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if reps[0].Completed+reps[1].Completed == 1 {
			break
		}
	}
	if got := s.calls.Count("BatchWriteItem"); got != n/25 {
		t.Errorf("%d BatchWriteItem calls, want %d", got, n/25)
	}
	a = do(t, s, "GET", base+"BIG?expand=details", user, "", "")
	if len(a.list) != 1 || a.list[0]["status"] != "COMPLETE" || a.list[0]["count"] != float64(n) || a.list[0]["progress"] != nil {
		t.Fatalf("list after the worker: %s", a.raw)
	}
	if r := do(t, s, "GET", "/rest/reqs/1/requirement2/BIG/REQ-01999?v=1", user, "", ""); r.code != 200 || r.obj["status"] != "ARCHIVED" ||
		fmt.Sprint(r.obj["dependencies"]) == "[]" {
		t.Errorf("copy after the worker: %d %s", r.code, r.raw)
	}
	if p, err := s.store.PageInfo(ctx, "demo", "300"); err != nil || p.Title != "Big" {
		t.Errorf("page 300: %+v %v", p, err)
	}
	if got := s.items(t, "T#demo#S#BIG#B#00000001"); got != n {
		t.Errorf("baseline partition holds %d items, want the %d copies", got, n)
	}
	a = do(t, s, "GET", base+"BIG/1/pages", user, "", "")
	if len(a.list) != n/500 || a.list[0]["count"] != 500.0 {
		t.Errorf("pages: %s", a.raw)
	}
	if rep, err := s.svc.RunJobs(ctx, time.Nanosecond); err != nil || rep.Jobs != 0 {
		t.Errorf("nothing pending, yet %+v, %v", rep, err)
	}
}

// TestBackgroundCancel deletes a baseline while it is freezing: the job
// and the copies written so far go, the worker finds nothing, and the
// number is not reused.
func TestBackgroundCancel(t *testing.T) {
	t.Parallel()
	s := newBgServer(t, 1200)
	const user = "demo-wiki-user"
	ctx := context.Background()
	if a := do(t, s, "POST", base+"BIG/1/create-instant", user, "application/json", `{"name": "Empty", "fromCeo": "300"}`); a.code != 200 || a.obj["status"] != "COMPLETE" {
		t.Fatalf("an empty freeze completes in the request: %d %s", a.code, a.raw)
	}
	a := do(t, s, "POST", base+"BIG/1/create", user, "application/json", `{"name": "Big", "ceo": "300"}`)
	if a.code != 202 || a.obj["number"] != 2.0 {
		t.Fatalf("create: %d %s", a.code, a.raw)
	}
	if _, err := s.svc.RunJobs(ctx, time.Nanosecond); err != nil {
		t.Fatal(err)
	}
	if got := s.items(t, "T#demo#S#BIG#B#00000002"); got != 500 {
		t.Fatalf("%d items in the partition, want 500 copies", got)
	}
	job, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: &s.table, Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: "T#demo#S#BIG"}, "sk": &types.AttributeValueMemberS{Value: "BLJOB#00000002"}}})
	keysID, _ := job.Item["keysId"].(*types.AttributeValueMemberS)
	if err != nil || keysID == nil {
		t.Fatalf("job 2: %v, %v", job.Item, err)
	}
	staged := "T#demo#S#BIG#BJ#" + keysID.Value
	if got := s.items(t, staged); got != 1 {
		t.Fatalf("%d staged key chunks, want 1", got)
	}
	if a := do(t, s, "DELETE", base+"BIG/2", user, "", ""); a.code != 204 {
		t.Fatalf("cancel: %d %s", a.code, a.raw)
	}
	if got := s.items(t, "T#demo#S#BIG#B#00000002") + s.items(t, staged); got != 0 {
		t.Errorf("%d items left after the cancel", got)
	}
	if rep, err := s.svc.RunJobs(ctx, time.Nanosecond); err != nil || rep.Jobs != 0 {
		t.Errorf("a cancelled job was worked on: %+v, %v", rep, err)
	}
	a = do(t, s, "GET", base+"BIG", user, "", "")
	if len(a.list) != 1 || a.list[0]["number"] != 1.0 {
		t.Errorf("list after the cancel: %s", a.raw)
	}
	if a := do(t, s, "DELETE", base+"BIG/2", user, "", ""); a.code != 404 {
		t.Errorf("second delete: %d %s", a.code, a.raw)
	}
	a = do(t, s, "POST", base+"BIG/1/create", user, "application/json", `{"name": "Again", "ceo": "300", "queryString": "key = 'REQ-00001'"}`)
	if a.code != 202 || a.obj["number"] != 3.0 {
		t.Errorf("next create: %d %s", a.code, a.raw)
	}
}
