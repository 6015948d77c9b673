package wikitable_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// faultyAPI fails the failAt-th write call (BatchWriteItem or
// TransactWriteItems) it sees, without applying it; 0 never fails.
type faultyAPI struct {
	dynamo.API
	mu             sync.Mutex
	writes, failAt int
}

var errInjected = errors.New("injected failure")

func (f *faultyAPI) arm(failAt int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes, f.failAt = 0, failAt
}

func (f *faultyAPI) fail() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	return f.failAt > 0 && f.writes == f.failAt
}

func (f *faultyAPI) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	if f.fail() {
		return nil, errInjected
	}
	return f.API.BatchWriteItem(ctx, in, opts...)
}

func (f *faultyAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if f.fail() {
		return nil, errInjected
	}
	return f.API.TransactWriteItems(ctx, in, opts...)
}

// failureVersion is page 2 at version v: 30 requirements with a priority,
// a link and an issue, all three changed in v2, which also adds R-30.
func failureVersion(v int) string {
	prio, target, issue, n := "High", "Z", "PROJ-1", 30
	if v == 2 {
		prio, target, issue, n = "Low", "X", "PROJ-2", 31
	}
	rows := []string{wt.TH("Key", "Description", "Priority", "Refines", "Implements")}
	for i := range n {
		p := prio
		if i == 30 {
			p = "High"
		}
		rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("R-%02d", i)), fmt.Sprintf("<p>R, version %d</p>", v), p, wt.Link("", target), wt.Jira(issue, "")))
	}
	return wt.Table(rows...)
}

// trackerView is what an integration's tracker knows of one requirement
// after applying its outbound messages in id order.
type trackerView struct {
	excerpt string
	links   map[string]bool // "ISSUE-KEY relationship"
	deleted bool
}

// replayOutbox applies every message of an integration, in id order, as
// its tracker would: UPDATED, LINK and LINKS carry the excerpt; LINKS sets
// the page link set (version 5), LINK adds one link (version 4, which is
// never told of removals); DELETED marks the requirement deleted, keeping
// its links.
func replayOutbox(t *testing.T, ob *wikitable.OutboxStore, tenant, serviceID string) map[string]*trackerView {
	t.Helper()
	msgs, err := ob.List(context.Background(), tenant, serviceID, "", 100_000, true)
	if err != nil {
		t.Fatal(err)
	}
	views := map[string]*trackerView{}
	for _, m := range msgs {
		v := views[m.Key]
		if v == nil {
			v = &trackerView{links: map[string]bool{}}
			views[m.Key] = v
		}
		switch m.Type {
		case outbox.Deleted:
			v.deleted = true // trackers keep a deleted requirement's links
		case outbox.Updated:
			v.excerpt, v.deleted = m.NewHTMLExcerpt, false
		case outbox.Link:
			v.excerpt, v.deleted = m.NewHTMLExcerpt, false
			v.links[strings.ToUpper(m.ObjectKey)+" "+m.Relationship] = true
		case outbox.Links:
			v.excerpt, v.deleted, v.links = m.NewHTMLExcerpt, false, map[string]bool{}
			for _, l := range m.Links {
				v.links[strings.ToUpper(l.IssueKey)+" "+l.Relationship] = true
			}
		}
	}
	return views
}

// checkTrackers compares what each integration's tracker heard (replayed
// from the outbox) with the stored rows: an ACTIVE row's excerpt, and its
// page links (all of them for version 5; version 4 hears additions only,
// so it must have heard each of them); a row that is not ACTIVE is
// unknown to the tracker or DELETED there.
func checkTrackers(t *testing.T, ob *wikitable.OutboxStore, rows *wikitable.RequirementStore, tenant string, keys []string, after string) {
	t.Helper()
	for _, svc := range []struct {
		id      string
		version int
	}{{"jira-v5", 5}, {"jira-v4", 4}} {
		views := replayOutbox(t, ob, tenant, svc.id)
		for _, k := range keys {
			r, err := rows.Get(context.Background(), tenant, requirement.ID{SpaceKey: "DEMO", Key: k})
			v := views[k]
			if errors.Is(err, apperr.ErrNotFound) || err == nil && r.Status != requirement.Active {
				if v != nil && !v.deleted {
					t.Errorf("%s: %s's tracker (v%d) holds %s, which is not ACTIVE", after, svc.id, svc.version, k)
				}
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]bool{}
			for _, l := range r.PageLinksFor(svc.id) {
				want[strings.ToUpper(l.IssueKey)+" "+l.Relationship] = true
			}
			if len(want) == 0 && v == nil {
				continue
			}
			if v == nil || v.deleted || v.excerpt != r.HTMLExcerpt {
				t.Errorf("%s: %s's tracker (v%d) holds %s as %+v, the row's excerpt is %q", after, svc.id, svc.version, k, v, r.HTMLExcerpt)
				continue
			}
			for l := range want {
				if !v.links[l] {
					t.Errorf("%s: %s's tracker (v%d) never heard of %s's link %s (it holds %v)", after, svc.id, svc.version, k, l, v.links)
				}
			}
			if svc.version >= 5 && len(v.links) != len(want) {
				t.Errorf("%s: %s's tracker (v5) holds for %s %v, the row's page links are %v", after, svc.id, k, v.links, want)
			}
		}
	}
}

// TestCommitFailureLeavesNothingMissing fails each write call of a page
// save in turn, then saves the page again (its old or its new version,
// after the failed save's lease expired) and checks that every search
// driven by the index or by reverse dependencies finds exactly what the
// rows say: a failure may leave extra index items or reverse
// dependencies (searches check rows), never a missing one, which no later
// save would write because saves write only what differs from the stored
// rows; and a requirement the failed save added, which the page's
// key list never named, is found through the record the failed save left
// and is DELETED when the page is saved without it.
func TestCommitFailureLeavesNothingMissing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	env := testenv.AWS(t)
	faulty := &faultyAPI{API: dynamodb.NewFromConfig(env.Config)}
	store := wikitable.NewWikiStore(faulty, env.WikiTable)
	var mu sync.Mutex
	var skew time.Duration
	store.Now = func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	svc := wiki.New(wiki.Deps{Store: store})
	reader := wikitable.NewSearchStore(dynamodb.NewFromConfig(env.Config), env.WikiTable)
	searches := search.New(search.Deps{Store: reader, Settings: reader})

	save := func(tenant, id, body string) error {
		_, err := svc.SavePage(ctx, tenant, "alice", wiki.PageInput{ID: id, SpaceKey: "DEMO", Title: "P" + id, Body: body})
		return err
	}
	keys := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("R-%02d", i))
		}
		return out
	}
	// What each search must find after version v was saved.
	want := map[int]map[string][]string{
		1: {"@Priority = 'High'": keys(0, 30), "@Priority = 'Low'": nil, "jira = 'PROJ-1'": keys(0, 30),
			"jira = 'PROJ-2'": nil, "to = 'Z'": keys(0, 30), "to = 'X'": nil},
		2: {"@Priority = 'High'": keys(30, 31), "@Priority = 'Low'": keys(0, 30), "jira = 'PROJ-1'": nil,
			"jira = 'PROJ-2'": keys(0, 31), "to = 'Z'": nil, "to = 'X'": keys(0, 31)},
	}
	rows := wikitable.NewRequirementStore(dynamodb.NewFromConfig(env.Config), env.WikiTable)
	check := func(t *testing.T, tenant string, v int) {
		t.Helper()
		// Reverse dependencies exactly as the rows say: what GET shows
		// and parent/child closures follow.
		for target, refs := range map[string][]string{"X": want[v]["to = 'X'"], "Z": want[v]["to = 'Z'"]} {
			r, err := rows.Get(ctx, tenant, requirement.ID{SpaceKey: "DEMO", Key: target})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, d := range r.ReverseDependencies {
				got = append(got, d.Key)
			}
			slices.Sort(got)
			if !slices.Equal(got, refs) {
				t.Errorf("after version %d, %s's reverse dependencies are %v, want %v", v, target, got, refs)
			}
		}
		for q, keys := range want[v] {
			e, err := query.Parse(q)
			if err != nil {
				t.Fatal(err)
			}
			res, err := searches.Search(ctx, search.Request{Tenant: tenant, PathSpace: "DEMO", Query: e, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range res.Requirements {
				got = append(got, r.Key)
			}
			if !slices.Equal(got, keys) {
				t.Errorf("after version %d, %s (%s) finds %v, want %v", v, q, res.Plan, got, keys)
			}
		}
	}
	outboxes := wikitable.NewOutboxStore(dynamodb.NewFromConfig(env.Config), env.WikiTable)
	setup := func(tenant string) {
		// Two integrations hear of the page's issue links: the trackers
		// must end up told of what the rows say, whichever write failed.
		for _, it := range []struct {
			id      string
			version int
		}{{"jira-v5", 5}, {"jira-v4", 4}} {
			if _, err := env.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: &env.WikiTable, Item: map[string]types.AttributeValue{
				"pk": &types.AttributeValueMemberS{Value: "T#" + tenant + "#INTEG"}, "sk": &types.AttributeValueMemberS{Value: it.id},
				"version": &types.AttributeValueMemberN{Value: fmt.Sprint(it.version)},
			}}); err != nil {
				t.Fatal(err)
			}
		}
		if err := save(tenant, "1", wt.Table(wt.TH("Key", "Description"), wt.TR(wt.Def("X"), "x"), wt.TR(wt.Def("Z"), "z"))); err != nil {
			t.Fatal(err)
		}
		if err := save(tenant, "2", failureVersion(1)); err != nil {
			t.Fatal(err)
		}
	}

	// How many write calls a successful save of version 2 makes.
	setup("count")
	faulty.arm(0)
	if err := save("count", "2", failureVersion(2)); err != nil {
		t.Fatal(err)
	}
	faulty.mu.Lock()
	calls := faulty.writes
	faulty.mu.Unlock()
	check(t, "count", 2)
	if calls < 4 {
		t.Fatalf("a save of version 2 made %d write calls, want several to fail in turn", calls)
	}

	for failAt := 1; failAt <= calls; failAt++ {
		// Saved again at version 1 or 2; 0: the page is deleted, then
		// saved at version 2.
		for _, again := range []int{1, 2, 0} {
			tenant := fmt.Sprintf("fail%d-v%d", failAt, again)
			faulty.arm(0)
			setup(tenant)
			faulty.arm(failAt)
			if err := save(tenant, "2", failureVersion(2)); !errors.Is(err, errInjected) {
				t.Fatalf("write call %d failing: save answered %v", failAt, err)
			}
			faulty.arm(0)
			mu.Lock()
			skew += time.Minute + time.Second // the failed save's lease expires
			mu.Unlock()
			if again == 0 {
				if err := svc.DeletePage(ctx, tenant, "alice", "2"); err != nil {
					t.Fatalf("write call %d failed, deleting the page: %v", failAt, err)
				}
				checkTrackers(t, outboxes, rows, tenant, keys(0, 31), fmt.Sprintf("write call %d failed, page deleted", failAt))
				again = 2
			}
			if err := save(tenant, "2", failureVersion(again)); err != nil {
				t.Fatalf("write call %d failed, saving version %d again: %v", failAt, again, err)
			}
			check(t, tenant, again)
			checkTrackers(t, outboxes, rows, tenant, keys(0, 31), fmt.Sprintf("write call %d failed, version %d saved again", failAt, again))
			if again == 1 {
				got, err := wikitable.NewRequirementStore(faulty, env.WikiTable).Get(ctx, tenant, requirement.ID{SpaceKey: "DEMO", Key: "R-30"})
				if err == nil && got.Status != "DELETED" {
					t.Errorf("write call %d failed: R-30, added by the failed save only, is %s", failAt, got.Status)
				}
			}
		}
	}

	// The first save of a new page fails: its rows are found again when
	// the page is then saved with fewer requirements.
	newPage := func(n int) string {
		rows := []string{wt.TH("Key", "Description", "Priority", "Implements")}
		for i := range n {
			rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("N-%d", i)), fmt.Sprintf("<p>N, %d requirements</p>", n), "Urgent", wt.Jira(fmt.Sprintf("PROJ-%d", 10+i), "")))
		}
		return wt.Table(rows...)
	}
	for failAt := 1; ; failAt++ {
		tenant := fmt.Sprintf("new%d", failAt)
		faulty.arm(0)
		setup(tenant)
		faulty.arm(failAt)
		err := save(tenant, "3", newPage(3))
		faulty.arm(0)
		if err == nil {
			break // every write call has failed once
		}
		mu.Lock()
		skew += time.Minute + time.Second
		mu.Unlock()
		if err := save(tenant, "3", newPage(1)); err != nil {
			t.Fatalf("write call %d failed, saving the new page again: %v", failAt, err)
		}
		e, _ := query.Parse("@Priority = 'Urgent'")
		res, err := searches.Search(ctx, search.Request{Tenant: tenant, PathSpace: "DEMO", Query: e})
		if err != nil || len(res.Requirements) != 1 || res.Requirements[0].Key != "N-0" {
			t.Errorf("write call %d of a new page's first save failed: after saving it with N-0 only, %v, %v", failAt, res, err)
		}
		checkTrackers(t, outboxes, rows, tenant, []string{"N-0", "N-1", "N-2"}, fmt.Sprintf("write call %d of a new page's first save failed, saved again with N-0", failAt))
	}
}

// A requirement linked from so many others that its reverse dependencies
// would pass DynamoDB's item size: the save answers 413 and writes none of
// the page's rows.
func TestReverseDependenciesTooLarge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	e.save(t, "demo", "1", "DEMO", wt.Table(wt.TH("Key", "Description"), wt.TR(wt.Def("X"), "x")))
	rel := strings.Repeat("r", 250)
	rows := []string{wt.TH("Key", "Description", rel)}
	for i := range 1000 {
		rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("%s-%04d", strings.Repeat("K", 190), i)), "", wt.Link("", "X")))
	}
	_, err := e.service.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "2", SpaceKey: "DEMO", Title: "P", Body: wt.Table(rows...)})
	if !errors.Is(err, apperr.ErrTooLarge) || !strings.Contains(err.Error(), "reverse dependencies") {
		t.Fatalf("save = %v, want 413 naming reverse dependencies", err)
	}
	if r := e.get(t, "demo", "DEMO", "X"); len(r.ReverseDependencies) != 0 {
		t.Errorf("X has %d reverse dependencies after a refused save", len(r.ReverseDependencies))
	}
	if _, err := e.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: strings.Repeat("K", 190) + "-0000"}); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("a row of the refused save: %v", err)
	}
}

// raceAPI runs before once, just before the first write call it sees
// (BatchWriteItem or TransactWriteItems): a write that lands between the
// caller's reads and its writes.
type raceAPI struct {
	dynamo.API
	once   sync.Once
	before func()
}

func (r *raceAPI) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	r.once.Do(r.before)
	return r.API.BatchWriteItem(ctx, in, opts...)
}

func (r *raceAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	r.once.Do(r.before)
	return r.API.TransactWriteItems(ctx, in, opts...)
}

// The links callback reads rows, then writes their links: a page save in
// between keeps what it wrote (text, properties, the page's own links),
// and the callback's links are there too.
func TestLinksCallbackRacingAPageSave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, pageLinks := range []bool{false, true} {
		t.Run(fmt.Sprintf("save changes links=%v", pageLinks), func(t *testing.T) {
			t.Parallel()
			e := saveNew(t)
			body := func(text, issue string) string {
				return wt.Table(wt.TH("Key", "Description", "Priority", "Implements"), wt.TR(wt.Def("R-1"), "<p>"+text+"</p>", "High", issue))
			}
			e.save(t, "demo", "1", "DEMO", body("first", ""))
			race := &raceAPI{API: e.db, before: func() {
				issue := ""
				if pageLinks {
					issue = wt.Jira("PAGE-1", "")
				}
				e.save(t, "demo", "1", "DEMO", body("second", issue))
			}}
			links := wikitable.NewIntegrationStore(race, e.env.WikiTable)
			n, err := links.ReplaceIssueLinks(ctx, "demo", "jira-1", []integration.LinkSet{{SpaceKey: "DEMO", Key: "R-1",
				Links: []requirement.IssueLink{{ServiceID: "jira-1", IssueKey: "TRK-1", Relationship: "tests"}}}})
			if err != nil || n != 1 {
				t.Fatalf("ReplaceIssueLinks = %d, %v", n, err)
			}
			r := e.get(t, "demo", "DEMO", "R-1")
			var issues []string
			for _, l := range r.Issues {
				issues = append(issues, l.IssueKey)
			}
			want := []string{"TRK-1"}
			if pageLinks {
				want = []string{"PAGE-1", "TRK-1"}
			}
			if r.Text != "second" || !slices.Equal(issues, want) {
				t.Fatalf("R-1: text %q, issues %v; want the save's text and issues %v", r.Text, issues, want)
			}
			reader := wikitable.NewSearchStore(e.db, e.env.WikiTable)
			for _, issue := range want {
				e, _ := query.Parse("jira = '" + issue + "'")
				res, err := search.New(search.Deps{Store: reader, Settings: reader}).Search(ctx, search.Request{Tenant: "demo", PathSpace: "DEMO", Query: e})
				if err != nil || len(res.Requirements) != 1 {
					t.Errorf("jira = %s: %v, %v", issue, res, err)
				}
			}
		})
	}
}

// Links callbacks whose rows carry many links: a transaction stays under
// DynamoDB's 4 MB however many rows it could hold by count.
func TestLinksCallbackLargeTransactions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	rows := []string{wt.TH("Key", "Description")}
	for i := range 100 {
		rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("R-%03d", i)), "x"))
	}
	e.save(t, "demo", "1", "DEMO", wt.Table(rows...))
	links := wikitable.NewIntegrationStore(e.db, e.env.WikiTable)
	// 45 links of about 500 bytes per row, the same issues in both rounds
	// (so the second writes no index item) under another relationship:
	// the second round's updates carry ~23 KB before and ~23 KB after
	// each, 4.6 MB for 100 rows.
	project := strings.Repeat("P", 240)
	for _, rel := range []string{strings.Repeat("a", 250), strings.Repeat("b", 250)} {
		var sets []integration.LinkSet
		for i := range 100 {
			var ls []requirement.IssueLink
			for j := range 45 {
				ls = append(ls, requirement.IssueLink{ServiceID: "jira-1", IssueKey: fmt.Sprintf("%s-%d", project, j), Relationship: rel})
			}
			sets = append(sets, integration.LinkSet{SpaceKey: "DEMO", Key: fmt.Sprintf("R-%03d", i), Links: ls})
		}
		if n, err := links.ReplaceIssueLinks(ctx, "demo", "jira-1", sets); err != nil || n != 100 {
			t.Fatalf("links %.1s…: %d updated, %v", rel, n, err)
		}
	}
	if r := e.get(t, "demo", "DEMO", "R-099"); len(r.Issues) != 45 || r.Issues[0].Relationship[0] != 'b' {
		t.Fatalf("R-099 has %d links", len(r.Issues))
	}
}

// beforeNthTx runs hook once, before the n-th TransactWriteItems call.
type beforeNthTx struct {
	dynamo.API
	mu      sync.Mutex
	seen, n int
	hook    func()
}

func (b *beforeNthTx) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	b.mu.Lock()
	b.seen++
	run := b.seen == b.n
	b.mu.Unlock()
	if run {
		b.hook()
	}
	return b.API.TransactWriteItems(ctx, in, opts...)
}

// 150 rows: a page save changes one row of the callback's second
// transaction just before it; the first transaction's 100 rows are done.
// The callback reads again and finishes: it reports every row it changed,
// and the first rows' old index items are deleted too.
func TestLinksCallbackRoundAfterAPartialWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	body := func(extra string) string {
		rows := []string{wt.TH("Key", "Description", "Implements")}
		for i := range 150 {
			issue := ""
			if i == 140 {
				issue = extra
			}
			rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("R-%03d", i)), "x", issue))
		}
		return wt.Table(rows...)
	}
	e.save(t, "demo", "1", "DEMO", body(""))
	set := func(issue string) []integration.LinkSet {
		var sets []integration.LinkSet
		for i := range 150 {
			sets = append(sets, integration.LinkSet{SpaceKey: "DEMO", Key: fmt.Sprintf("R-%03d", i),
				Links: []requirement.IssueLink{{ServiceID: "jira-1", IssueKey: issue, Relationship: "tests"}}})
		}
		return sets
	}
	if _, err := wikitable.NewIntegrationStore(e.db, e.env.WikiTable).ReplaceIssueLinks(ctx, "demo", "jira-1", set("OLD-1")); err != nil {
		t.Fatal(err)
	}
	hooked := &beforeNthTx{API: e.db, n: 2, hook: func() { e.save(t, "demo", "1", "DEMO", body(wt.Jira("PAGE-1", ""))) }}
	n, err := wikitable.NewIntegrationStore(hooked, e.env.WikiTable).ReplaceIssueLinks(ctx, "demo", "jira-1", set("NEW-1"))
	if err != nil {
		t.Fatal(err)
	}
	count := func(issue string) int {
		c := 0
		if err := e.reqs.QueryIssueIndex(ctx, "demo", issue, "", 0, func(requirement.ID) bool { c++; return true }); err != nil {
			t.Fatal(err)
		}
		return c
	}
	if n != 150 || count("OLD-1") != 0 || count("NEW-1") != 150 || count("PAGE-1") != 1 {
		t.Errorf("%d updated (150 changed); index items OLD-1 %d (want 0), NEW-1 %d (want 150), PAGE-1 %d (want 1)",
			n, count("OLD-1"), count("NEW-1"), count("PAGE-1"))
	}
}

// failPagePut fails the PutItem of page items while armed: a first save
// whose rows are written but whose page is not.
type failPagePut struct {
	dynamo.API
	armed bool
}

func (f *failPagePut) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if pk, ok := in.Item["pk"].(*types.AttributeValueMemberS); ok && f.armed && strings.Contains(pk.Value, "#PAGE#") {
		return nil, errInjected
	}
	return f.API.PutItem(ctx, in, opts...)
}

// The first save of a new page fails after writing its rows: deleting the
// page (which was never saved) finds them through the record the save left
// and makes them DELETED, so that another page may define the key; a page
// that never existed is still not found.
func TestDeleteAPageWhoseFirstSaveFailed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	faulty := &failPagePut{API: e.db, armed: true}
	svc := wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(faulty, e.env.WikiTable)})
	body := wt.Table(wt.TH("Key", "Description"), wt.TR(wt.Def("N-1"), "n"))
	if _, err := svc.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "7", SpaceKey: "DEMO", Title: "P", Body: body}); !errors.Is(err, errInjected) {
		t.Fatalf("first save = %v", err)
	}
	faulty.armed = false
	if r := e.get(t, "demo", "DEMO", "N-1"); r.Status != "ACTIVE" || r.Origin.PageID != "7" {
		t.Fatalf("the failed save wrote N-1 as %s of page %s", r.Status, r.Origin.PageID)
	}
	if err := svc.DeletePage(ctx, "demo", "alice", "7"); err != nil {
		t.Fatalf("delete the page whose first save failed: %v", err)
	}
	if r := e.get(t, "demo", "DEMO", "N-1"); r.Status != "DELETED" {
		t.Fatalf("N-1 is %s after the delete", r.Status)
	}
	if err := svc.DeletePage(ctx, "demo", "alice", "7"); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("deleting it again = %v, want not found", err)
	}
	if err := svc.DeletePage(ctx, "demo", "alice", "99"); !errors.Is(err, apperr.ErrNotFound) || err.Error() != "page 99 not found" {
		t.Errorf("a page that never existed = %v", err)
	}
	res, err := svc.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "8", SpaceKey: "DEMO", Title: "Q", Body: body})
	if err != nil || len(res.Duplicates) != 0 {
		t.Fatalf("page 8 defining N-1: %v, duplicates %v", err, res)
	}
}

// A page whose stored item is large (an incompressible body) and whose new
// version, small, adds many long keys: recording them on the stored item
// before the save would pass DynamoDB's item size. 413, nothing written.
func TestPendingRecordTooLarge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := saveNew(t)
	noise := make([]byte, 270_000)
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := range noise {
		noise[i] = byte(rnd.Uint32())
	}
	e.save(t, "demo", "9", "DEMO", "<p>"+base64.StdEncoding.EncodeToString(noise)+"</p>")
	var body strings.Builder
	for i := range 800 {
		body.WriteString("<p>" + wt.Def(fmt.Sprintf("%s-%04d", strings.Repeat("K", 240), i)) + "</p>")
	}
	_, err := e.service.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "9", SpaceKey: "DEMO", Title: "P", Body: body.String()})
	if !errors.Is(err, apperr.ErrTooLarge) || !strings.Contains(err.Error(), "two steps") {
		t.Fatalf("save = %v, want 413", err)
	}
	if _, err := e.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: strings.Repeat("K", 240) + "-0000"}); !errors.Is(err, apperr.ErrNotFound) {
		t.Errorf("a row of the refused save: %v", err)
	}
	if pg, err := e.service.Page(ctx, "demo", "9"); err != nil || pg.Version != 1 {
		t.Errorf("the page after the refused save: %v, %v", pg, err)
	}
}
