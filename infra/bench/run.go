package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
)

// Sizes are the sizes of the measurements; Full are the sizes the performance targets name.
type Sizes struct {
	// PageSaveStored is the requirements stored before the page saves;
	// PageSaveRequirements the size of a saved page; PageSaveFresh and
	// PageSaveChanged the number of saves of each kind.
	PageSaveStored, PageSaveRequirements, PageSaveFresh, PageSaveChanged int
	// SearchStored is the requirements stored for search and GET.
	SearchStored int
	// Runs and Warmup are the measured and unmeasured repetitions of each
	// search and GET.
	Runs, Warmup int
	// Baseline is the size of the frozen baseline.
	Baseline int
	// SyncMessages is the backlog of the sync run.
	SyncMessages int
	// ReconcileRequirements are the linked requirements of the reconcile.
	ReconcileRequirements int
	// ColdStarts is the number of fresh starts of each function.
	ColdStarts int
	// Changes is the size of each side of the diff and of the exports.
	Changes int
}

// Full are the sizes of the performance targets.
var Full = Sizes{
	PageSaveStored: 50_000, PageSaveRequirements: 400, PageSaveFresh: 3, PageSaveChanged: 4,
	SearchStored: 100_000, Runs: 30, Warmup: 3,
	Baseline: 100_000, SyncMessages: 10_000, ReconcileRequirements: 10_000, ColdStarts: 5, Changes: 100_000,
}

// Quick are small sizes for checking the bench itself in a minute or two;
// its figures say nothing about the targets.
var Quick = Sizes{
	PageSaveStored: 4_000, PageSaveRequirements: 400, PageSaveFresh: 1, PageSaveChanged: 1,
	SearchStored: 8_000, Runs: 5, Warmup: 1,
	Baseline: 2_000, SyncMessages: 1_000, ReconcileRequirements: 1_000, ColdStarts: 1, Changes: 2_000,
}

// Limits bound each measurement, seeding included, so that the bench ends
// in bounded time whatever a service does.
var Limits = struct{ PageSave, Search, Get, Baseline, Sync, Reconcile, ColdStart, Changes time.Duration }{
	PageSave: 8 * time.Minute, Search: 8 * time.Minute, Get: 2 * time.Minute,
	Baseline: 8 * time.Minute, Sync: 11 * time.Minute, Reconcile: 5 * time.Minute, ColdStart: 6 * time.Minute,
	Changes: 10 * time.Minute,
}

// The rows of the performance targets: what, target, anchor.
func newRows() (pageSave, search, get, baseline, sync, reconcile, cold, changes *Row) {
	return &Row{ID: "page-save", What: "page save, 400 requirements, 50,000 already stored",
			Target: "≤ 1 ms of service time per requirement; DynamoDB calls O(requirements/25)",
			Anchor: "Requirement Yogi: ~20 ms per requirement on save and on view at 50k"},
		&Row{ID: "search", What: "search, first page of 50 over 100,000 requirements (key prefix, property equality)",
			Target: "items read ≤ 2 × items returned; p95 ≤ 100 ms on the local stack",
			Anchor: "Requirement Yogi: 12,000-result global limit, matrix OOM"},
		&Row{ID: "get", What: "GET requirement", Target: "exactly 1 DynamoDB read (auth cached)",
			Anchor: "physical limit: one round trip"},
		&Row{ID: "baseline", What: "baseline of 100,000 requirements", Target: "completes; writes = ⌈N/25⌉ batches",
			Anchor: "Requirement Yogi: 12,000 cap by default"},
		&Row{ID: "sync", What: "sync run, 10,000 NEW messages", Target: "all delivered in one run, ≤ ⌈N/100⌉ POSTs per tracker",
			Anchor: "spec: one run every 3 minutes"},
		&Row{ID: "reconcile", What: "reconcile of an integration with 10,000 linked requirements",
			Target: "one LINKS per requirement; DynamoDB calls O(requirements/25); time per requirement reported",
			Anchor: "the original: re-save every page by hand"},
		&Row{ID: "cold-start", What: "cold start", Target: "each bootstrap ≤ 15 MB, init ≤ 50 ms to first request on the local shim",
			Anchor: "Go on provided.al2023"},
		&Row{ID: "changes", What: "diff of 100,000 vs 100,000 requirements (1% changed); CSV export of 100,000",
			Target: "completes within one request; items read ≤ 1 per requirement and side; peak memory of the function reported",
			Anchor: "Requirement Yogi: comparison screen stops at 600 rows, exports at 12,000 (OOM before)"}
}

// Run measures every row of the performance targets on env with the given sizes, in
// an order that lets the page saves and the searches share one data set
// (seeded to PageSaveStored, saves measured, seeded on to SearchStored).
// It logs progress to log and never stops early: a row that fails is
// returned with its error.
func Run(ctx context.Context, env *Env, sz Sizes, functionLog io.Writer, log *slog.Logger) []*Row {
	pageSave, search, get, baseline, sync, reconcile, cold, changes := newRows()
	store := wikitable.NewWikiStore(env.DynamoDB(), env.WikiTable)

	log.Info("seeding", "requirements", sz.PageSaveStored)
	seedStart := time.Now()
	seedErr := Seed(ctx, store, 0, sz.PageSaveStored)
	seeded := time.Since(seedStart)
	log.Info("measuring", "row", pageSave.ID)
	Measure(ctx, pageSave, Limits.PageSave, func(ctx context.Context, row *Row) error {
		if seedErr != nil {
			return seedErr
		}
		return PageSave(ctx, env, PageSaveOptions{Stored: sz.PageSaveStored, Requirements: sz.PageSaveRequirements,
			Fresh: sz.PageSaveFresh, Changed: sz.PageSaveChanged}, row)
	})

	if seedErr == nil {
		log.Info("seeding", "requirements", sz.SearchStored-sz.PageSaveStored)
		seedStart = time.Now()
		seedErr = Seed(ctx, store, sz.PageSaveStored, sz.SearchStored)
		if seedErr == nil {
			seedErr = SeedSmall(ctx, store, sz.SearchStored)
		}
		seeded += time.Since(seedStart)
	}
	stored := sz.SearchStored + len(seedRange(0, sz.SearchStored, SmallStep)) + sz.PageSaveFresh*sz.PageSaveRequirements
	for _, row := range []*Row{pageSave, get} {
		row.note("Data set: %s (%s to seed; not counted in the measurements).", seedSummary(sz.SearchStored), secs(seeded))
	}
	search.note("Data set: %s; %s (%s to seed; not counted in the measurements).", seedSummary(sz.SearchStored),
		smallSummary(sz.SearchStored), secs(seeded))
	var wikiURL string
	var stackErr error
	if seedErr == nil {
		st, err := startStack(ctx, env, "", []string{"WikiRequirements"}, functionLog)
		if err != nil {
			stackErr = fmt.Errorf("start the local stack: %w", err)
		} else {
			defer st.Close()
			wikiURL = st.WikiURL
		}
	}
	log.Info("measuring", "row", search.ID)
	Measure(ctx, search, Limits.Search, func(ctx context.Context, row *Row) error {
		if seedErr != nil {
			return seedErr
		}
		if stackErr != nil {
			row.note("Not measured through the local stack: %v", stackErr)
		}
		return Search(ctx, env, SearchOptions{Stored: stored, Runs: sz.Runs, Warmup: sz.Warmup, WikiURL: wikiURL}, row)
	})
	log.Info("measuring", "row", get.ID)
	Measure(ctx, get, Limits.Get, func(ctx context.Context, row *Row) error {
		if seedErr != nil {
			return seedErr
		}
		return Get(ctx, env, GetOptions{Stored: sz.SearchStored, Runs: sz.Runs, Warmup: sz.Warmup, WikiURL: wikiURL}, row)
	})

	log.Info("measuring", "row", baseline.ID, "requirements", sz.Baseline)
	Measure(ctx, baseline, Limits.Baseline, func(ctx context.Context, row *Row) error {
		return Baseline(ctx, env, sz.Baseline, functionLog, row)
	})
	log.Info("measuring", "row", sync.ID, "messages", sz.SyncMessages)
	Measure(ctx, sync, Limits.Sync, func(ctx context.Context, row *Row) error {
		return Sync(ctx, env, sz.SyncMessages, row)
	})
	log.Info("measuring", "row", reconcile.ID, "requirements", sz.ReconcileRequirements)
	Measure(ctx, reconcile, Limits.Reconcile, func(ctx context.Context, row *Row) error {
		return Reconcile(ctx, env, sz.ReconcileRequirements, row)
	})
	log.Info("measuring", "row", changes.ID, "requirements", sz.Changes)
	Measure(ctx, changes, Limits.Changes, func(ctx context.Context, row *Row) error {
		return Changes(ctx, env, sz.Changes, functionLog, row)
	})
	log.Info("measuring", "row", cold.ID)
	Measure(ctx, cold, Limits.ColdStart, func(ctx context.Context, row *Row) error {
		return ColdStart(ctx, env, ColdStartOptions{Starts: sz.ColdStarts, ARM64: true, FunctionLog: functionLog}, row)
	})
	return []*Row{pageSave, search, get, baseline, sync, reconcile, changes, cold}
}
