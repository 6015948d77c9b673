package convergence_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// The eight failures of issue 13, each through the HTTP APIs of the real
// local stack (one stack per test, so one test's queue and sync runs never
// touch another's).

// trackerSet returns the links of requirement space/key through applink
// app as the tracker shows them, over issues.
func trackerSet(t *testing.T, e *env, tn *tenant, app, space, key string, issues ...string) map[held]bool {
	t.Helper()
	out := map[held]bool{}
	for _, issue := range issues {
		links, err := e.issueLinks(tn, issue)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range links {
			if l.ApplinkID == app && l.SpaceKey == space && l.Key == key && l.BaselineNumber == nil {
				out[held{l.IssueKey, l.Relationship, l.Origin}] = true
			}
		}
	}
	return out
}

func wikiIssues(t *testing.T, e *env, tn *tenant, space, key, serviceID string) map[held]bool {
	t.Helper()
	r, found, err := e.requirement(tn, space, key)
	if err != nil || !found {
		t.Fatalf("requirement %s/%s: found %v, %v", space, key, found, err)
	}
	return wikiSet(r, serviceID)
}

func helds(hs ...held) map[held]bool {
	out := map[held]bool{}
	for _, h := range hs {
		out[h] = true
	}
	return out
}

// assertBoth requires the wiki's issues of space/key for serviceID and the
// tracker's links of it through the applink of the same id to be want.
func assertBoth(t *testing.T, e *env, tn *tenant, serviceID, space, key string, want map[held]bool, issues ...string) {
	t.Helper()
	w := wikiIssues(t, e, tn, space, key, serviceID)
	k := trackerSet(t, e, tn, serviceID, space, key, issues...)
	if !maps.Equal(w, want) || !maps.Equal(k, want) {
		t.Fatalf("%s/%s via %s: wiki %v, tracker %v, want %v", space, key, serviceID, sortedHelds(w), sortedHelds(k), sortedHelds(want))
	}
}

// (a) A page that names issues before their integration exists, and a macro
// whose serverId names no integration yet: the save warns, and creating
// the integrations delivers the links on the next sync runs with no page
// saved again (at version 5 and at version 4).
func TestLinksSavedBeforeTheIntegrationReachTheTracker(t *testing.T) {
	e := startStack(t)
	tn := e.newTenant(t, "before")
	a := want(t, call(t, "PUT", e.st.WikiURL+api+"/content/100", tn.wikiUser, map[string]any{
		"spaceKey": "DEMO", "title": "Specs", "body": pageBody([]row{{Key: "REQ-1", Description: "Log in.",
			Implements: []macro{{"PROJ-1", "jira-1"}}, Tests: []macro{{"PROJ-2", "jira-9"}}}})}), 200, "save")
	if got := warned(decode[saveAnswer](t, a)); setString(got) != "[jira-1 jira-9]" {
		t.Errorf("warnings name %s, want [jira-1 jira-9]: %s", setString(got), a)
	}
	for _, w := range decode[saveAnswer](t, a).Warnings {
		if w.Key != "REQ-1" || !strings.Contains(w.Message, "PROJ-") {
			t.Errorf("warning %+v does not name the requirement and the issue", w)
		}
	}

	mustConnect(t, e, tn, "jira-1", 5)
	mustConnect(t, e, tn, "jira-9", 4)
	e.sync(t)
	e.sync(t)
	assertBoth(t, e, tn, "jira-1", "DEMO", "REQ-1", helds(held{"PROJ-1", "implements", "PAGE"}), "PROJ-1", "PROJ-2")
	if k := trackerSet(t, e, tn, "jira-9", "DEMO", "REQ-1", "PROJ-2"); len(k) != 1 {
		t.Fatalf("version-4 integration created after the save: tracker links %v, want PROJ-2 tests", sortedHelds(k))
	}
	// A later save that names only known integrations warns of nothing.
	a = want(t, call(t, "PUT", e.st.WikiURL+api+"/content/100", tn.wikiUser, map[string]any{
		"spaceKey": "DEMO", "title": "Specs", "body": pageBody([]row{{Key: "REQ-1", Description: "Log in.",
			Implements: []macro{{"PROJ-1", "jira-1"}}, Tests: []macro{{"PROJ-2", "jira-9"}}}})}), 200, "save again")
	if ws := decode[saveAnswer](t, a).Warnings; len(ws) != 0 {
		t.Errorf("warnings for known integrations: %s", a)
	}
}

// (b) Removing an issue macro removes the link on the tracker (version 5);
// a link the tracker also made stays, as TRACKER.
func TestRemovedMacroRemovesTheTrackerLink(t *testing.T) {
	e := startStack(t)
	tn := e.newTenant(t, "remove")
	mustConnect(t, e, tn, "jira-1", 5)
	save := func(ms ...macro) {
		t.Helper()
		want(t, call(t, "PUT", e.st.WikiURL+api+"/content/100", tn.wikiUser, map[string]any{
			"spaceKey": "DEMO", "title": "Specs", "body": pageBody([]row{{Key: "REQ-1", Description: "Log in.", Implements: ms}})}), 200, "save")
	}
	save(macro{"PROJ-1", "jira-1"}, macro{"PROJ-2", "jira-1"}, macro{"PROJ-3", "jira-1"})
	e.sync(t)
	issues := []string{"PROJ-1", "PROJ-2", "PROJ-3"}
	assertBoth(t, e, tn, "jira-1", "DEMO", "REQ-1", helds(held{"PROJ-1", "implements", "PAGE"},
		held{"PROJ-2", "implements", "PAGE"}, held{"PROJ-3", "implements", "PAGE"}), issues...)

	// The tracker also holds PROJ-3 (POST of a link the page defines: 200).
	want(t, call(t, "POST", e.st.TrackerURL+api+"/issuelinks/PROJ-3", tn.trackUser,
		[]linkItem{{ApplinkID: "jira-1", SpaceKey: "DEMO", Key: "REQ-1", Relationship: "implements"}}), 200, "tracker also links PROJ-3")

	save(macro{"PROJ-2", "jira-1"})
	e.sync(t)
	assertBoth(t, e, tn, "jira-1", "DEMO", "REQ-1", helds(held{"PROJ-2", "implements", "PAGE"},
		held{"PROJ-3", "implements", "TRACKER"}), issues...)
}

// (c) A queued message an admin deletes, and one whose envelope ends in the
// dead-letter queue, are repaired: by POST .../reconcile, and by the sync
// run by itself.
func TestDeletedAndDeadLetteredMessagesAreRepaired(t *testing.T) {
	e := startStack(t)
	tn := e.newTenant(t, "lost")
	mustConnect(t, e, tn, "jira-1", 5)
	rows := []row{{Key: "REQ-1", Description: "Log in.", Implements: []macro{{"PROJ-1", "jira-1"}}}}
	save := func() {
		t.Helper()
		a, err := e.savePage(tn, "100", "DEMO", "Specs", rows)
		if err != nil || a.status != 200 {
			t.Fatalf("save: %v %s", err, a)
		}
	}
	deleteNew := func() {
		t.Helper()
		q, err := e.queue(tn, "jira-1", false)
		if err != nil || len(q) == 0 {
			t.Fatalf("queue: %v %+v", err, q)
		}
		for _, m := range q {
			want(t, call(t, "DELETE", e.st.WikiURL+api+"/integration/jira-1/queue/outbound/"+m.ID, tn.wikiAdmin, nil), 204, "delete "+m.ID)
		}
	}
	issues := []string{"PROJ-1", "PROJ-2", "PROJ-3"}

	t.Run("deleted, then reconcile", func(t *testing.T) {
		save()
		deleteNew()
		a := want(t, call(t, "POST", e.st.WikiURL+api+"/integration/jira-1/reconcile", tn.wikiAdmin, nil), 200, "reconcile")
		if q := decode[struct{ Queued int }](t, a); q.Queued < 1 {
			t.Fatalf("reconcile queued %d: %s", q.Queued, a)
		}
		e.sync(t)
		assertBoth(t, e, tn, "jira-1", "DEMO", "REQ-1", helds(held{"PROJ-1", "implements", "PAGE"}), issues...)
	})
	t.Run("deleted, the sync reconciles by itself", func(t *testing.T) {
		rows[0].Implements = append(rows[0].Implements, macro{"PROJ-2", "jira-1"})
		save()
		deleteNew()
		e.sync(t)
		e.sync(t)
		assertBoth(t, e, tn, "jira-1", "DEMO", "REQ-1", helds(held{"PROJ-1", "implements", "PAGE"}, held{"PROJ-2", "implements", "PAGE"}), issues...)
	})
	t.Run("dead-lettered", func(t *testing.T) {
		rows[0].Implements = append(rows[0].Implements, macro{"PROJ-3", "jira-1"})
		save()
		// Receive the envelope and give it back at once, as often as the
		// queue's maxReceiveCount allows, so SQS moves it to the DLQ.
		client := sqs.NewFromConfig(e.st.Config)
		ctx := t.Context()
		qURL, dlq := e.st.Resources.Queues["OutboundQueue"], e.st.Resources.Queues["OutboundDLQ"]
		var received int
		for i := 0; i < 20 && dlqDepth(ctx, t, client, dlq) == 0; i++ {
			out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(qURL),
				MaxNumberOfMessages: 10, VisibilityTimeout: 30, WaitTimeSeconds: 1})
			if err != nil {
				t.Fatal(err)
			}
			received += len(out.Messages)
			for _, m := range out.Messages {
				if _, err := client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(qURL),
					ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if dlqDepth(ctx, t, client, dlq) == 0 {
			t.Fatalf("the envelope never reached the dead-letter queue (%d receives)", received)
		}
		if q, _ := e.queue(tn, "jira-1", false); len(q) == 0 {
			t.Fatalf("no NEW message left to lose")
		}
		e.sync(t)
		e.sync(t)
		assertBoth(t, e, tn, "jira-1", "DEMO", "REQ-1", helds(held{"PROJ-1", "implements", "PAGE"},
			held{"PROJ-2", "implements", "PAGE"}, held{"PROJ-3", "implements", "PAGE"}), issues...)
	})
}

func dlqDepth(ctx context.Context, t *testing.T, c *sqs.Client, url string) int {
	t.Helper()
	out, err := c.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages,
			sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, v := range out.Attributes {
		var k int
		fmt.Sscan(v, &k)
		n += k
	}
	return n
}

// (d) A tracker answering 200 with an HTML login page, or JSON without
// results, leaves the messages NEW with lastResponse saying why, and an
// error e-mail is attempted (logged by the local stack); once the tracker
// answers properly the messages are delivered.
func TestTrackerAnswersAreStrict(t *testing.T) {
	e := startStack(t)
	tn := e.newTenant(t, "strict")
	cases := []struct {
		mode mode
		link *link
		says []string // lastResponse holds one of them (lower case)
	}{
		{mode: htmlLogin, says: []string{"html", "not a json", "not a tracker answer"}},
		{mode: noResults, says: []string{"result"}},
	}
	for i := range cases {
		// One integration per failure: a failed POST must not make the
		// other case depend on when its envelope becomes visible again.
		cases[i].link = mustConnect(t, e, tn, fmt.Sprintf("jira-%d", i+1), 5)
	}
	for i, c := range cases {
		id, key := c.link.id, fmt.Sprintf("REQ-%d", i+1)
		t.Run(string(c.mode), func(t *testing.T) {
			c.link.tracker.set(c.mode)
			mailsBefore := strings.Count(e.logs.String(), "API error e-mail")
			a, err := e.savePage(tn, fmt.Sprint(100+i), "DEMO", "Specs", []row{{Key: key,
				Description: "Log in.", Implements: []macro{{"PROJ-1", id}}}})
			if err != nil || a.status != 200 {
				t.Fatalf("save: %v %s", err, a)
			}
			since := time.Now()
			e.sync(t)
			if n := len(c.link.tracker.hitsSince(since)); n == 0 {
				t.Fatalf("the sync run did not call the tracker")
			}
			q, err := e.queue(tn, id, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(q) == 0 {
				t.Fatalf("no message for %s", key)
			}
			for _, m := range q {
				lr := strings.ToLower(m.LastResponse)
				if m.State != "NEW" || !slices.ContainsFunc(c.says, func(s string) bool { return strings.Contains(lr, s) }) {
					t.Errorf("message %s after a %s answer: state %s, lastResponse %q (want NEW, saying one of %q)", m.ID, c.mode, m.State, m.LastResponse, c.says)
				}
			}
			logs := e.logs.String()
			if strings.Count(logs, "API error e-mail") <= mailsBefore || !strings.Contains(logs, "ops@example.com") {
				t.Errorf("no error e-mail attempted after a %s answer", c.mode)
			}
			if k := trackerSet(t, e, tn, id, "DEMO", key, "PROJ-1"); len(k) != 0 {
				t.Errorf("the tracker proxy answered %s but the link is there: %v", c.mode, sortedHelds(k))
			}
		})
	}
	// The trackers answer again: the next sync run delivers everything.
	t.Run("recovered", func(t *testing.T) {
		for _, c := range cases {
			c.link.tracker.set(pass)
		}
		e.sync(t)
		for i, c := range cases {
			q, err := e.queue(tn, c.link.id, false)
			if err != nil || len(q) != 0 {
				t.Errorf("%s: messages still NEW after the tracker answers again and one sync run: %v %+v", c.link.id, err, q)
				continue
			}
			assertBoth(t, e, tn, c.link.id, "DEMO", fmt.Sprintf("REQ-%d", i+1), helds(held{"PROJ-1", "implements", "PAGE"}), "PROJ-1")
		}
	})
}

// (e) A DISABLED integration's incomingToken gets 403 on reading
// requirements and on the links callback; nothing is sent while DISABLED;
// set ACTIVE again, its messages are delivered.
func TestDisabledIntegrationIsDisabledEverywhere(t *testing.T) {
	e := startStack(t)
	tn := e.newTenant(t, "disabled")
	l := mustConnect(t, e, tn, "jira-1", 5)
	W := e.st.WikiURL
	a, err := e.savePage(tn, "100", "DEMO", "Specs", []row{{Key: "REQ-1", Description: "Log in."}})
	if err != nil || a.status != 200 {
		t.Fatalf("save: %v %s", err, a)
	}
	// The links callback as the tracker sends it (the tracker holds no
	// link of REQ-1: the set is empty).
	callback := []map[string]any{{"spaceKey": "DEMO", "key": "REQ-1", "baseline": nil, "links": []map[string]string{}}}
	reads := []struct{ method, path string }{
		{"GET", "/requirement2/DEMO/REQ-1"},
		{"GET", "/requirement2/DEMO?q=key%20%3D%20'REQ-1'"},
		{"GET", "/integration/jira-1/version"},
	}
	for _, r := range reads {
		want(t, call(t, r.method, W+api+r.path, l.wikiToken, nil), 200, "ACTIVE: "+r.path)
	}
	want(t, call(t, "PUT", W+api+"/integration/jira-1/links", l.wikiToken, callback), 200, "ACTIVE: links callback")

	if err := e.setStatus(tn, "jira-1", "DISABLED"); err != nil {
		t.Fatal(err)
	}
	// A warm function may answer from its token cache for AUTH_CACHE_TTL.
	time.Sleep(authCacheTTL + 500*time.Millisecond)
	for _, r := range reads {
		want(t, call(t, r.method, W+api+r.path, l.wikiToken, nil), 403, "DISABLED: "+r.path)
	}
	want(t, call(t, "PUT", W+api+"/integration/jira-1/links", l.wikiToken, callback), 403, "DISABLED: links callback")

	// Nothing is sent while DISABLED.
	a, err = e.savePage(tn, "100", "DEMO", "Specs", []row{{Key: "REQ-1", Description: "Log in.", Implements: []macro{{"PROJ-1", "jira-1"}}}})
	if err != nil || a.status != 200 {
		t.Fatalf("save: %v %s", err, a)
	}
	since := time.Now()
	e.sync(t)
	for _, h := range l.tracker.hitsSince(since) {
		if h.method == "POST" {
			t.Fatalf("a DISABLED integration sent to its tracker: %+v", h)
		}
	}
	if q, err := e.queue(tn, "jira-1", false); err != nil || len(q) == 0 {
		t.Fatalf("messages of a DISABLED integration are not NEW: %v %+v", err, q)
	}

	if err := e.setStatus(tn, "jira-1", "ACTIVE"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(authCacheTTL + 500*time.Millisecond)
	want(t, call(t, "GET", W+api+"/requirement2/DEMO/REQ-1", l.wikiToken, nil), 200, "ACTIVE again")
	e.sync(t)
	assertBoth(t, e, tn, "jira-1", "DEMO", "REQ-1", helds(held{"PROJ-1", "implements", "PAGE"}), "PROJ-1")
}

// (f) Two concurrent PUT /rest/reqs/1/issuelinks/{issue} leave exactly one
// of the two sets, never a mix.
func TestConcurrentIssueReplacesLeaveOneSet(t *testing.T) {
	e := startStack(t)
	tn := e.newTenant(t, "replace")
	mustConnect(t, e, tn, "jira-1", 5)
	var rows []row
	for i := range 24 {
		rows = append(rows, row{Key: fmt.Sprintf("REQ-%d", i+1), Description: "Thing."})
	}
	if a, err := e.savePage(tn, "100", "DEMO", "Specs", rows); err != nil || a.status != 200 {
		t.Fatalf("save: %v %s", err, a)
	}
	set := func(from int, rel string) []linkItem {
		var out []linkItem
		for i := from; i < from+8; i++ {
			out = append(out, linkItem{ApplinkID: "jira-1", SpaceKey: "DEMO", Key: fmt.Sprintf("REQ-%d", i+1), Relationship: rel})
		}
		return out
	}
	sets := [][]linkItem{set(0, "implements"), set(8, "tests"), set(16, "implements")}
	key := func(items []linkItem) string {
		var ks []string
		for _, it := range items {
			ks = append(ks, it.Key+"/"+it.Relationship)
		}
		slices.Sort(ks)
		return strings.Join(ks, ",")
	}
	U := e.st.TrackerURL + api + "/issuelinks/PROJ-1"
	for round := range 4 {
		want(t, call(t, "PUT", U, tn.trackUser, sets[2]), 200, "reset")
		var wg sync.WaitGroup
		answers := make([]answer, 2)
		errs := make([]error, 2)
		start := make(chan struct{})
		for i := range 2 {
			wg.Go(func() {
				<-start
				answers[i], errs[i] = do("PUT", U, tn.trackUser, sets[i])
			})
		}
		close(start)
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		links, err := e.issueLinks(tn, "PROJ-1")
		if err != nil {
			t.Fatal(err)
		}
		var got []linkItem
		for _, l := range links {
			got = append(got, linkItem{ApplinkID: l.ApplinkID, SpaceKey: l.SpaceKey, Key: l.Key, Relationship: l.Relationship})
		}
		g := key(got)
		ok := false
		for i := range 2 {
			if answers[i].status != 200 && answers[i].status != 409 {
				t.Fatalf("round %d: PUT %d answered %s", round, i, answers[i])
			}
			if answers[i].status == 200 && g == key(sets[i]) {
				ok = true
			}
		}
		if !ok {
			t.Fatalf("round %d: concurrent replaces (%d, %d) left %s; want exactly %s or %s", round,
				answers[0].status, answers[1].status, g, key(sets[0]), key(sets[1]))
		}
	}
}

// (g) The tracker refuses links to requirements the wiki does not have
// (404 naming it, nothing written), and answers 502 with nothing written
// when it cannot ask the wiki.
func TestTrackerRefusesLinksToMissingRequirements(t *testing.T) {
	e := startStack(t)
	tn := e.newTenant(t, "missing")
	wp := newFaultProxy(e.st.WikiURL, 4*httpTimeout)
	t.Cleanup(wp.close)
	if _, err := e.connect(t, tn, "jira-1", wp.URL(), 5); err != nil {
		t.Fatal(err)
	}
	if a, err := e.savePage(tn, "100", "DEMO", "Specs", []row{{Key: "REQ-1", Description: "Log in."}}); err != nil || a.status != 200 {
		t.Fatalf("save: %v %s", err, a)
	}
	U := e.st.TrackerURL + api + "/issuelinks/PROJ-1"
	good := linkItem{ApplinkID: "jira-1", SpaceKey: "DEMO", Key: "REQ-1", Relationship: "implements"}
	seven := 7
	for _, c := range []struct {
		name    string
		method  string
		items   []linkItem
		status  int
		mention string
	}{
		{"POST naming a missing requirement", "POST", []linkItem{good, {ApplinkID: "jira-1", SpaceKey: "DEMO", Key: "REQ-404", Relationship: "tests"}}, 404, "REQ-404"},
		{"PUT naming a missing requirement", "PUT", []linkItem{good, {ApplinkID: "jira-1", SpaceKey: "NOSPACE", Key: "REQ-1", Relationship: "tests"}}, 404, "NOSPACE"},
		{"POST naming a missing baseline", "POST", []linkItem{{ApplinkID: "jira-1", SpaceKey: "DEMO", Key: "REQ-1", BaselineNumber: &seven, Relationship: "tests"}}, 404, "REQ-1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := call(t, c.method, U, tn.trackUser, c.items)
			if a.status != c.status || !strings.Contains(a.body, c.mention) {
				t.Fatalf("answer %s, want %d naming %s", a, c.status, c.mention)
			}
			if links, err := e.issueLinks(tn, "PROJ-1"); err != nil || len(links) != 0 {
				t.Fatalf("written anyway: %+v %v", links, err)
			}
		})
	}
	t.Run("wiki unreachable", func(t *testing.T) {
		wp.set(fail500)
		a := call(t, "POST", U, tn.trackUser, []linkItem{good})
		wp.set(pass)
		if a.status != 502 {
			t.Fatalf("answer %s, want 502", a)
		}
		if links, err := e.issueLinks(tn, "PROJ-1"); err != nil || len(links) != 0 {
			t.Fatalf("written anyway: %+v %v", links, err)
		}
	})
	t.Run("an existing requirement is linked", func(t *testing.T) {
		want(t, call(t, "POST", U, tn.trackUser, []linkItem{good}), 200, "POST")
		e.trackerOutbox(t)
		assertBoth(t, e, tn, "jira-1", "DEMO", "REQ-1", helds(held{"PROJ-1", "implements", "TRACKER"}), "PROJ-1")
	})
}

// (h) One tenant's hanging trackers do not delay another tenant's delivery
// beyond about one tracker timeout: trackers are served concurrently.
func TestHangingTrackersDoNotDelayOtherTenants(t *testing.T) {
	e := startStack(t)
	slow, fast := e.newTenant(t, "slow"), e.newTenant(t, "fast")
	var hanging []*link
	for _, id := range []string{"jira-1", "jira-2", "jira-3"} {
		l := mustConnect(t, e, slow, id, 5)
		l.tracker.set(hang)
		hanging = append(hanging, l)
	}
	quick := mustConnect(t, e, fast, "jira-1", 5)
	// The slow tenant's messages are queued first.
	if a, err := e.savePage(slow, "100", "DEMO", "Specs", []row{{Key: "REQ-1", Description: "Log in.",
		Implements: []macro{{"PROJ-1", "jira-1"}, {"PROJ-2", "jira-2"}, {"PROJ-3", "jira-3"}}}}); err != nil || a.status != 200 {
		t.Fatalf("save: %v %s", err, a)
	}
	if a, err := e.savePage(fast, "100", "DEMO", "Specs", []row{{Key: "REQ-1", Description: "Log in.",
		Implements: []macro{{"PROJ-1", "jira-1"}}}}); err != nil || a.status != 200 {
		t.Fatalf("save: %v %s", err, a)
	}
	begin := time.Now()
	took := e.sync(t)
	var fastAt time.Duration = -1
	for _, h := range quick.tracker.hitsSince(begin) {
		if h.method == "POST" && h.path == api+"/api" {
			fastAt = h.at.Sub(begin)
			break
		}
	}
	var slowHits int
	for _, l := range hanging {
		for _, h := range l.tracker.hitsSince(begin) {
			if h.method == "POST" {
				slowHits++
			}
		}
	}
	t.Logf("HTTP_TIMEOUT %v: sync run %v; the other tenant's tracker reached after %v; %d POSTs to hanging trackers",
		httpTimeout, took.Round(time.Millisecond), fastAt.Round(time.Millisecond), slowHits)
	if slowHits == 0 {
		t.Fatalf("the hanging trackers were not called: the test proves nothing")
	}
	if fastAt < 0 {
		t.Fatalf("the other tenant's tracker was not called in the run")
	}
	if bound := httpTimeout + httpTimeout/2; fastAt > bound {
		t.Fatalf("the other tenant's tracker was reached %v after the run began, beyond %v (1.5 timeouts): trackers are served one after another", fastAt, bound)
	}
	assertBoth(t, e, fast, "jira-1", "DEMO", "REQ-1", helds(held{"PROJ-1", "implements", "PAGE"}), "PROJ-1")
	if q, err := e.queue(slow, "jira-1", false); err != nil || len(q) == 0 {
		t.Fatalf("the hanging tracker's messages are not NEW: %v %+v", err, q)
	}
}
