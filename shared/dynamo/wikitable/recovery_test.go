package wikitable_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// crashAPI is faultyAPI whose process dies at the failing write: that
// call and every call after it fail, so the operation's lease is never
// released, as when a function is killed between two writes.
type crashAPI struct {
	*faultyAPI
	mu sync.Mutex
	// crashing makes the failing call a crash; dead, once it happened.
	crashing, dead bool
	// failPut fails the next PutItem (a page write), once.
	failPut bool
}

func (c *crashAPI) down() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.dead
}

func (c *crashAPI) kill(failed bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dead = c.dead || (failed && c.crashing)
	return c.dead || failed
}

// arm fails the failAt-th write call, as a crash when crashing.
func (c *crashAPI) arm(failAt int, crashing bool) {
	c.faultyAPI.arm(failAt)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.crashing, c.dead = crashing, false
}

func (c *crashAPI) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	if c.kill(c.fail()) {
		return nil, errInjected
	}
	return c.API.BatchWriteItem(ctx, in, opts...)
}

func (c *crashAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if c.kill(c.fail()) {
		return nil, errInjected
	}
	return c.API.TransactWriteItems(ctx, in, opts...)
}

func (c *crashAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	if c.down() {
		return nil, errInjected
	}
	return c.API.UpdateItem(ctx, in, opts...)
}

func (c *crashAPI) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if c.down() {
		return nil, errInjected
	}
	return c.API.DeleteItem(ctx, in, opts...)
}

func (c *crashAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.mu.Lock()
	failPut := c.failPut
	c.failPut = false
	c.mu.Unlock()
	if failPut || c.down() {
		return nil, errInjected
	}
	return c.API.PutItem(ctx, in, opts...)
}

// recoveryNew builds a wiki service on a store whose write calls can fail
// or crash (crashAPI), with a clock expire moves past a lease, and a
// reader of rows that never fails.
func recoveryNew(t *testing.T) (*crashAPI, *wikitable.WikiStore, *wiki.Service, *wikitable.RequirementStore, func() time.Time, func()) {
	env := testenv.AWS(t)
	crash := &crashAPI{faultyAPI: &faultyAPI{API: dynamodb.NewFromConfig(env.Config)}}
	store := wikitable.NewWikiStore(crash, env.WikiTable)
	var mu sync.Mutex
	var skew time.Duration
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return time.Now().Add(skew) }
	expire := func() { mu.Lock(); skew += time.Minute + time.Second; mu.Unlock() }
	store.Now = now
	svc := wiki.New(wiki.Deps{Store: store})
	svc.Now = now
	return crash, store, svc, wikitable.NewRequirementStore(dynamodb.NewFromConfig(env.Config), env.WikiTable), now, expire
}

// TestRecoveryUndoesAFailedSave fails, and separately kills, each write
// call of a page save in turn, then runs the recovery sweep, and checks
// that every requirement of the page (and those its links point at) is
// exactly as in a tenant where the failed save never happened: the page's
// stored version is redone, the rows the failed save wrote are undone and
// the requirement only it added is DELETED. A failure lists the page for
// recovery at once; a kill, once the lease expires. Ordinary operations
// leave nothing listed. The failed save marks a row of another page (Z,
// which refines R-00): after each failed write, Z is marked exactly when
// R-00's change was written (one transaction), and the recovery drops it.
func TestRecoveryUndoesAFailedSave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	crash, store, svc, rows, now, expire := recoveryNew(t)

	save := func(tenant, body string) error {
		_, err := svc.SavePage(ctx, tenant, "alice", wiki.PageInput{ID: "2", SpaceKey: "DEMO", Title: "P2", Body: body})
		return err
	}
	// Z (page 1) refines R-00 (page 2): version 2 changes R-00's text,
	// which marks Z's dependency suspect in R-00's transaction; the
	// recovery of a failed version 2 must drop that mark from Z's row.
	setup := func(tenant string) {
		t.Helper()
		if _, err := svc.SavePage(ctx, tenant, "alice", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: "P1",
			Body: wt.Table(wt.TH("Key", "Description", "Refines"), wt.TR(wt.Def("X"), "x", ""), wt.TR(wt.Def("Z"), "z", wt.Link("", "R-00")))}); err != nil {
			t.Fatal(err)
		}
		if err := save(tenant, failureVersion(1)); err != nil {
			t.Fatal(err)
		}
	}
	keys := []string{"X", "Z"} // and the page's, but R-30 (added by version 2)
	for i := range 30 {
		keys = append(keys, fmt.Sprintf("R-%02d", i))
	}
	// state is every row as the checks compare it (LinksVersion counts
	// changes, so a redone row's differs).
	state := func(t *testing.T, tenant string) map[string]requirement.Requirement {
		t.Helper()
		out := map[string]requirement.Requirement{}
		for _, k := range keys {
			r, err := rows.Get(ctx, tenant, requirement.ID{SpaceKey: "DEMO", Key: k})
			if err != nil {
				continue
			}
			r.LinksVersion = 0
			out[k] = *r
		}
		return out
	}
	listed := func(t *testing.T, tenant string, at time.Time) int {
		t.Helper()
		pages, err := store.Unfinished(ctx, at, 1000)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range pages {
			if p.Tenant == tenant {
				n++
			}
		}
		return n
	}

	setup("ref")
	want := state(t, "ref")
	if n := listed(t, "ref", now().Add(time.Hour)); n != 0 {
		t.Fatalf("after ordinary saves, %d pages are listed for recovery, want 0", n)
	}
	// How many write calls a save of version 2 makes.
	crash.arm(0, false)
	setup("count")
	crash.arm(0, false)
	if err := save("count", failureVersion(2)); err != nil {
		t.Fatal(err)
	}
	crash.mu.Lock()
	calls := crash.writes
	crash.mu.Unlock()
	// marked reports whether Z's dependency on R-00 is suspect, and
	// whether R-00 has version 2's text: a mark is written in the same
	// transaction as the change that causes it, so the two agree after
	// any failed write.
	marked := func(t *testing.T, tenant string) (mark, changed bool) {
		t.Helper()
		z, err := rows.Get(ctx, tenant, requirement.ID{SpaceKey: "DEMO", Key: "Z"})
		if err != nil {
			t.Fatal(err)
		}
		r0, err := rows.Get(ctx, tenant, requirement.ID{SpaceKey: "DEMO", Key: "R-00"})
		if err != nil {
			t.Fatal(err)
		}
		return z.DependencySuspect(requirement.Dependency{SpaceKey: "DEMO", Key: "R-00"}) != nil, r0.Text == "R, version 2"
	}
	if m, c := marked(t, "count"); !m || !c {
		t.Fatalf("version 2 saved: Z → R-00 suspect %v, R-00 changed %v; want both", m, c)
	}
	if m, _ := marked(t, "ref"); m {
		t.Fatal("Z → R-00 is suspect without version 2")
	}
	failedMarked := 0

	ran := 0
	for failAt := 1; failAt <= calls; failAt++ {
		for _, killed := range []bool{false, true} {
			tenant := fmt.Sprintf("f%d-%v", failAt, killed)
			crash.arm(0, false)
			setup(tenant)
			crash.arm(failAt, killed)
			err := save(tenant, failureVersion(2))
			if !errors.Is(err, errInjected) {
				t.Fatalf("write call %d failing: save answered %v", failAt, err)
			}
			crash.arm(0, false)
			if m, c := marked(t, tenant); m != c {
				t.Errorf("write call %d failed (killed %v): Z → R-00 suspect %v but R-00 changed %v", failAt, killed, m, c)
			} else if m {
				failedMarked++
			}
			if killed {
				if n := listed(t, tenant, now()); n != 0 {
					t.Errorf("write call %d killed: the page is due for recovery before its lease expired", failAt)
				}
				expire()
			}
			if n := listed(t, tenant, now()); n != 1 {
				t.Fatalf("write call %d failed (killed %v): %d pages listed for recovery, want 1", failAt, killed, n)
			}
			rep, err := svc.RecoverUnfinished(ctx, store, now(), 1000)
			if err != nil || rep.Failed > 0 || rep.Recovered < 1 {
				t.Fatalf("write call %d failed (killed %v): recovery %+v, %v", failAt, killed, rep, err)
			}
			if n := listed(t, tenant, now().Add(time.Hour)); n != 0 {
				t.Errorf("write call %d failed (killed %v): still listed after the recovery", failAt, killed)
			}
			got := state(t, tenant)
			for _, k := range keys {
				g, w := got[k], want[k]
				g.Origin, w.Origin = requirement.PageRef{}, requirement.PageRef{}
				if fmt.Sprint(g) != fmt.Sprint(w) {
					t.Errorf("write call %d failed (killed %v), after the recovery %s is\n%+v\nwant\n%+v", failAt, killed, k, g, w)
				}
			}
			if r, err := rows.Get(ctx, tenant, requirement.ID{SpaceKey: "DEMO", Key: "R-30"}); err == nil && r.Status != requirement.Deleted {
				t.Errorf("write call %d failed (killed %v): R-30, added by the failed save only, is %s", failAt, killed, r.Status)
			}
			ran++
		}
	}
	t.Logf("%d failed or killed saves recovered (%d write calls per save; %d had marked Z, which the recovery dropped)", ran, calls, failedMarked)
	if failedMarked == 0 || failedMarked == ran {
		t.Errorf("%d of %d failed saves had marked Z: the recovery of a mark on another page's row, and of none, are not both tested", failedMarked, ran)
	}
	if rep, err := svc.RecoverUnfinished(ctx, store, now().Add(time.Hour), 1000); err != nil || rep.Listed != 0 {
		t.Errorf("a second pass lists %+v, %v; want nothing", rep, err)
	}
}

// TestRecoveryOfOtherOperations: a killed first save of a new page leaves
// nothing ACTIVE once recovered (and the page can be saved again); a
// killed delete leaves the page's rows as they were; a reindex of a page
// whose save failed redoes the stored version, rather than keeping the
// failed save's text under a status-only pass.
func TestRecoveryOfOtherOperations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	crash, store, svc, rows, now, expire := recoveryNew(t)
	status := func(t *testing.T, tenant, key string) requirement.Status {
		t.Helper()
		r, err := rows.Get(ctx, tenant, requirement.ID{SpaceKey: "DEMO", Key: key})
		if err != nil {
			return ""
		}
		return r.Status
	}
	recoverAll := func(t *testing.T) {
		t.Helper()
		rep, err := svc.RecoverUnfinished(ctx, store, now(), 1000)
		if err != nil || rep.Failed > 0 {
			t.Fatalf("recovery %+v, %v", rep, err)
		}
		if rep, _ := svc.RecoverUnfinished(ctx, store, now().Add(time.Hour), 1000); rep.Listed != 0 {
			t.Fatalf("still listed after the recovery: %+v", rep)
		}
	}
	newPage := wt.Table(wt.TH("Key", "Description", "Priority", "Refines"),
		wt.TR(wt.Def("N-1"), "n", "High", ""), wt.TR(wt.Def("N-2"), "n", "High", wt.Link("", "N-1")), wt.TR(wt.Def("N-3"), "n", "Low", wt.Link("", "N-1")))

	t.Run("new page", func(t *testing.T) {
		for failAt := 1; ; failAt++ {
			tenant := fmt.Sprintf("new%d", failAt)
			crash.arm(failAt, true)
			_, err := svc.SavePage(ctx, tenant, "alice", wiki.PageInput{ID: "3", SpaceKey: "DEMO", Title: "P3", Body: newPage})
			crash.arm(0, false)
			if err == nil {
				break
			}
			expire()
			recoverAll(t)
			for _, k := range []string{"N-1", "N-2", "N-3"} {
				if st := status(t, tenant, k); st == requirement.Active {
					t.Errorf("write call %d of a new page's first save killed: after the recovery %s is ACTIVE", failAt, k)
				}
			}
			if _, err := svc.Page(ctx, tenant, "3"); err == nil {
				t.Errorf("write call %d killed: the page exists after the recovery", failAt)
			}
			if _, err := svc.SavePage(ctx, tenant, "alice", wiki.PageInput{ID: "3", SpaceKey: "DEMO", Title: "P3", Body: newPage}); err != nil {
				t.Fatalf("write call %d killed: saving the page after the recovery: %v", failAt, err)
			}
			if st := status(t, tenant, "N-2"); st != requirement.Active {
				t.Errorf("write call %d killed: saved again, N-2 is %q", failAt, st)
			}
		}
	})
	t.Run("delete", func(t *testing.T) {
		for failAt := 1; ; failAt++ {
			tenant := fmt.Sprintf("del%d", failAt)
			crash.arm(0, false)
			if _, err := svc.SavePage(ctx, tenant, "alice", wiki.PageInput{ID: "3", SpaceKey: "DEMO", Title: "P3", Body: newPage}); err != nil {
				t.Fatal(err)
			}
			crash.arm(failAt, true)
			err := svc.DeletePage(ctx, tenant, "alice", "3")
			crash.arm(0, false)
			if err == nil {
				break
			}
			expire()
			recoverAll(t)
			for _, k := range []string{"N-1", "N-2", "N-3"} {
				if st := status(t, tenant, k); st != requirement.Active {
					t.Errorf("write call %d of a delete killed: after the recovery %s is %q, want ACTIVE (the page is still there)", failAt, k, st)
				}
			}
		}
	})
	t.Run("reindex", func(t *testing.T) {
		tenant := "reindex"
		crash.arm(0, false)
		if _, err := svc.SavePage(ctx, tenant, "alice", wiki.PageInput{ID: "3", SpaceKey: "DEMO", Title: "P3", Body: newPage}); err != nil {
			t.Fatal(err)
		}
		changed := wt.Table(wt.TH("Key", "Description"), wt.TR(wt.Def("N-1"), "changed"), wt.TR(wt.Def("N-2"), "changed"), wt.TR(wt.Def("N-3"), "changed"))
		want := map[string]string{}
		for _, k := range []string{"N-1", "N-2", "N-3"} {
			r, _ := rows.Get(ctx, tenant, requirement.ID{SpaceKey: "DEMO", Key: k})
			r.LinksVersion = 0
			want[k] = fmt.Sprint(*r)
		}
		crash.mu.Lock()
		crash.failPut = true // the rows are written, the page write fails
		crash.mu.Unlock()
		if _, err := svc.SavePage(ctx, tenant, "alice", wiki.PageInput{ID: "3", SpaceKey: "DEMO", Title: "P3", Body: changed}); err == nil {
			crash.arm(0, false)
			t.Fatal("the save did not fail")
		}
		crash.arm(0, false)
		if _, err := svc.Reindex(ctx, tenant, "alice", "3"); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"N-1", "N-2", "N-3"} {
			r, err := rows.Get(ctx, tenant, requirement.ID{SpaceKey: "DEMO", Key: k})
			if err != nil {
				t.Fatal(err)
			}
			r.LinksVersion = 0
			if got := fmt.Sprint(*r); got != want[k] {
				t.Errorf("after the reindex, %s is\n%s\nwant it as the stored version saved it\n%s", k, got, want[k])
			}
		}
		if rep, _ := svc.RecoverUnfinished(ctx, store, now().Add(time.Hour), 1000); rep.Listed != 0 {
			t.Errorf("the reindex left the page listed: %+v", rep)
		}
	})
}
