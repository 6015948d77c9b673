package bench

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/queue"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// reconcileService is the integration the reconcile measurement queues for.
const reconcileService = "jira-reconcile-bench"

// Reconcile measures one reconcile (integration.Reconcile.Run, what POST
// .../reconcile and the sync run's reconcile do) of a version-5
// integration whose pages link n requirements: the requirements are
// committed through the wiki store (so the page indexing writes their
// service index items), the integration is created afterwards, and the run
// queues one LINKS message per requirement and publishes them to SQS.
func Reconcile(ctx context.Context, env *Env, n int, row *Row) error {
	row.Method = fmt.Sprintf("%d current requirements, %d per page, each with 2 issue macros naming %s, committed through "+
		"WikiStore.Commit (the page indexing writes their service index items); the version-5 integration is created after; "+
		"then one integration.Reconcile run composed as in functions/wikiintegrations (IntegrationStore, Publisher on moto), in "+
		"process, queueing and publishing one LINKS message per requirement. Own tables and queue.", n, seedPerPage, reconcileService)
	res, err := env.Resources(ctx, "reconcile")
	if err != nil {
		return err
	}
	table, queueURL := res.Tables["WikiTable"], res.Queues["OutboundQueue"]
	db := env.NewCounted()
	store := wikitable.NewWikiStore(db.API, table)
	start := time.Now()
	for p := 0; p*seedPerPage < n; p++ {
		pg := &wiki.Page{ID: fmt.Sprint(7_000_000 + p), SpaceKey: Space, Title: fmt.Sprintf("Linked %d", p), Version: 1,
			Body: "<p>seeded by make bench</p>", UpdatedAt: time.Now().UTC(), UpdatedBy: "bench"}
		c := &wiki.Change{PutPage: pg, RegisterSpace: Space}
		for i := p * seedPerPage; i < min(n, (p+1)*seedPerPage); i++ {
			r := seedRequirement(i, pg)
			r.Status = requirement.Active
			r.Issues = []requirement.IssueLink{
				{ServiceID: reconcileService, IssueKey: fmt.Sprintf("PROJ-%d", i), Relationship: "implements", Page: true},
				{ServiceID: reconcileService, IssueKey: fmt.Sprintf("TEST-%d", i), Relationship: "tests", Page: true},
			}
			r.LinksVersion = 1
			pg.Keys = append(pg.Keys, r.Key)
			c.Writes = append(c.Writes, wiki.Write{New: r})
		}
		if err := store.Commit(ctx, Tenant, c); err != nil {
			return fmt.Errorf("seed linked page %s: %w", pg.ID, err)
		}
	}
	seeded := time.Since(start)
	if err := createIntegration(ctx, db.API, table, Tenant, reconcileService, "https://tracker.example.com"); err != nil {
		return err
	}
	rec := NewRecorder(db.API)
	// A message is put whole, then marked enqueued: the floor writes it
	// once as it ends, not only the mark's few attributes.
	rec.Merge = true
	integ := wikitable.NewIntegrationStore(rec, table)
	d, err := integ.Get(ctx, Tenant, reconcileService)
	if err != nil {
		return err
	}
	d.Version = 5
	if err := integ.Update(ctx, Tenant, d); err != nil {
		return fmt.Errorf("raise %s to version 5: %w", reconcileService, err)
	}
	ob := wikitable.NewOutboxStore(rec, table)
	q := queue.New(env.SQS(), queueURL)
	deps := integration.Deps{Store: integ, Outbox: ob, Publisher: integration.NewPublisher(q, ob),
		Logger: slog.New(slog.DiscardHandler)}
	rc := integration.NewReconciler(deps, integ)
	stop, err := startProfile(env, "reconcile")
	if err != nil {
		return err
	}
	defer stop()
	result := row.result("reconcile_10k", fmt.Sprintf("one integration.Reconcile run over %d linked requirements, in process, one round.", n),
		"right after the run: its index Query calls (recorded) sent again without filter or projection, the rows it read "+
			"(keys recorded) read again with BatchGetItem of 100, the items it wrote (recorded; a message put and then marked "+
			"enqueued once, whole, with the mark's values) written again with BatchWriteItem "+
			"of 25 under a scratch tenant of the same length, 8 calls at a time, and as many references published to SQS "+
			"(same envelopes, scratch tenant).")
	db.Reset()
	rec.Start()
	cpu := env.cpu()
	used := cpu.now()
	start = time.Now()
	queued, runErr := rc.Run(ctx, Tenant, reconcileService, "bench")
	elapsed := time.Since(start)
	selfCPU := cpu.since(used).self
	recorded := rec.Stop()
	stop()
	calls := db.Calls.Counts()
	if runErr == nil {
		floor, err := reconcileFloor(ctx, env, table, q, recorded, n)
		if err != nil {
			return err
		}
		result.oneRound(elapsed, floor, db.API.Written(), recorded, calls, selfCPU, n)
	}
	total := 0
	for _, c := range calls {
		total += c
	}
	row.add("LINKS messages queued", fmt.Sprintf("one per linked requirement = %d", n), fmt.Sprint(queued), verdict(queued == n && runErr == nil))
	// Rows read (BatchGetItem of 100), messages written (BatchWriteItem of
	// 25), marked enqueued once published (the publisher's
	// BatchExecuteStatement of 25 conditional UPDATEs: 1 write unit a
	// message where a transaction of 100 cost 2), plus the index Queries
	// (1 MB each), the integration read and the pendingRemovals reset.
	bound := ceilDiv(n, 100) + 2*ceilDiv(n, 25) + ceilDiv(n, 5_000) + 1 + 2
	row.add("DynamoDB calls", fmt.Sprintf("O(N/25): ⌈N/100⌉ + 2·⌈N/25⌉ + a few = %d", bound),
		fmt.Sprintf("%d (%.3f per requirement): %s", total, float64(total)/float64(n), formatCalls(calls)),
		verdict(total <= bound))
	row.add("run duration", "reported", fmt.Sprintf("%s (%.3f ms per requirement)", secs(elapsed),
		float64(elapsed.Microseconds())/1000/float64(n)), Info)
	row.add("setup: linked requirements committed", "", secs(seeded), Info)
	if runErr != nil {
		row.note("The run failed: %v", runErr)
	}
	return nil
}

// reconcileFloor times the minimum of a reconcile that read and wrote rec
// and queued n messages.
func reconcileFloor(ctx context.Context, env *Env, table string, q *queue.Queue, rec Recorded, n int) (FloorRound, error) {
	refs := make([]integration.Ref, n)
	now := time.Now()
	for i := range refs {
		refs[i] = integration.Ref{Tenant: floorTenant, ServiceID: reconcileService, ID: outbox.NewID(now.Add(time.Duration(i)))}
	}
	envs := integration.Envelopes(refs)
	db := env.DynamoDB()
	start := time.Now()
	dbRound, err := readWriteFloor(ctx, db, table, rec)
	if err != nil {
		return FloorRound{}, err
	}
	if _, err := q.Publish(ctx, envs); err != nil {
		return FloorRound{}, fmt.Errorf("floor: publish: %w", err)
	}
	took := time.Since(start)
	round := dbRound
	round.Took, round.Calls = took, round.Calls+ceilDiv(len(envs), 10)
	// The references go nowhere: drain them (and the run's own) so that
	// no later run meets them.
	_, _ = drain(ctx, q, 2*len(envs), 0)
	return round, nil
}
