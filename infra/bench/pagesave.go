package bench

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// PageSaveOptions size the page-save measurement.
type PageSaveOptions struct {
	// Stored is the number of requirements already in the tenant (seeded
	// by the caller); it is only reported.
	Stored int
	// Requirements is the size of each saved page (400).
	Requirements int
	// Fresh and Changed are the numbers of saves of new pages and of new
	// versions of the first one, every excerpt changed.
	Fresh, Changed int
}

// pageSaveService is the serviceId of the integration the saved pages
// link issues to, so that saves write outbound messages as real ones do.
const pageSaveService = "jira-bench"

// PageSave measures wiki.Service.SavePage on DynamoDB Local: pages of
// opts.Requirements requirements (two properties, a dependency on the
// previous requirement and an issue link each) saved into tenant Tenant,
// which already holds opts.Stored requirements. Fresh pages create every
// row (LINK messages); changed versions rewrite every row (UPDATED
// messages). It reports the median service time per requirement and the
// DynamoDB calls per save.
func PageSave(ctx context.Context, env *Env, opts PageSaveOptions, row *Row) error {
	row.Method = fmt.Sprintf("wiki.Service.SavePage with shared/dynamo.WikiStore, in process, on DynamoDB Local; tenant %s holds %d requirements; "+
		"%d saves of new pages and %d of a changed version of a page (every excerpt changed), %d requirements each, "+
		"with two properties, a dependency on the previous requirement and an issue link of an integration (outbound messages written). "+
		"Service time is the wall time of SavePage divided by the requirements on the page.",
		Tenant, opts.Stored, opts.Fresh, opts.Changed, opts.Requirements)
	counted := env.NewCounted()
	if err := createIntegration(ctx, counted.API, env.WikiTable, Tenant, pageSaveService, "http://127.0.0.1:9"); err != nil {
		return err
	}
	timed := &timedStore{WikiStore: dynamo.NewWikiStore(counted.API, env.WikiTable)}
	svc := wiki.NewService(timed)

	type save struct {
		fresh       bool
		total, data time.Duration
		calls       map[string]int
		written     int
	}
	var saves []save
	run := func(in wiki.PageInput, fresh bool) error {
		counted.Reset()
		timed.reset()
		start := time.Now()
		res, err := svc.SavePage(ctx, Tenant, "bench", in)
		total := time.Since(start)
		if err != nil {
			return fmt.Errorf("save page %s: %w", in.ID, err)
		}
		if len(res.Requirements) != opts.Requirements || len(res.Duplicates) > 0 {
			return fmt.Errorf("save page %s: %d requirements indexed, %d duplicates; want %d and 0",
				in.ID, len(res.Requirements), len(res.Duplicates), opts.Requirements)
		}
		saves = append(saves, save{fresh: fresh, total: total, data: timed.elapsed(), calls: counted.Calls.Counts(), written: timed.written})
		return nil
	}

	stop, err := startProfile(env, "page-save")
	if err != nil {
		return err
	}
	defer stop()
	for i := range opts.Fresh {
		id := fmt.Sprint(2_000_000 + i)
		if err := run(wiki.PageInput{ID: id, SpaceKey: Space, Title: "Save " + id, Body: savePageBody(i, 0, opts.Requirements)}, true); err != nil {
			return err
		}
	}
	for v := 1; v <= opts.Changed; v++ {
		if err := run(wiki.PageInput{ID: "2000000", SpaceKey: Space, Title: "Save 2000000", Body: savePageBody(0, v, opts.Requirements)}, false); err != nil {
			return err
		}
	}
	stop()

	var all, fresh, changed, data Durations
	maxCalls, callsOf := 0, map[string]int{}
	for _, s := range saves {
		all = append(all, s.total)
		data = append(data, s.data)
		if s.fresh {
			fresh = append(fresh, s.total)
		} else {
			changed = append(changed, s.total)
		}
		if n := sum(s.calls); n > maxCalls {
			maxCalls, callsOf = n, s.calls
		}
	}
	n := opts.Requirements
	perReq := all.Median() / time.Duration(n)
	row.add(fmt.Sprintf("service time per requirement (median of %d saves)", len(saves)), "≤ 1 ms",
		fmt.Sprintf("%s (%s per save)", ms(perReq), ms(all.Median())), verdict(perReq <= time.Millisecond))
	row.add("… fresh pages / changed versions (median per requirement)", "", fmt.Sprintf("%s / %s",
		ms(fresh.Median()/time.Duration(n)), ms(changed.Median()/time.Duration(n))), Info)
	row.add("… of which in DynamoDB calls (store methods, median per save)", "", ms(data.Median()), Info)

	// O(n/25): every DynamoDB call carries up to 25 writes or 100 reads,
	// so a save of n requirements that writes n rows with their index
	// items and messages needs a small multiple of ⌈n/25⌉ calls; allow 3×.
	bound := 3 * ceilDiv(n, 25)
	row.add("DynamoDB calls per save (most of any save)", fmt.Sprintf("O(n/25): ≤ 3·⌈%d/25⌉ = %d", n, bound),
		fmt.Sprintf("%d (%s)", maxCalls, formatCalls(callsOf)), verdict(maxCalls <= bound))
	row.note("Verdict rule for the call count: DESIGN.md asks for O(requirements/25); the bench calls it met when a save " +
		"makes at most 3·⌈n/25⌉ calls, i.e. the calls grow with the batches of 25 writes, not with the requirements.")
	row.note("Seeding writes the stored requirements through the indexing write path without parsing page bodies; " +
		"the measured saves parse their bodies like the content API does.")
	return nil
}

// createIntegration stores an ACTIVE version-4 integration.
func createIntegration(ctx context.Context, db dynamo.API, table, tenant, serviceID, rpcURL string) error {
	d := &integration.Descriptor{ServiceID: serviceID, RPCURL: rpcURL, Endpoint: integration.DefaultEndpoint,
		Version: integration.DefaultVersion, Status: integration.Active, Token: "bench-token"}
	d.Normalize()
	if err := dynamo.NewIntegrationStore(db, table).Create(ctx, tenant, d); err != nil {
		return fmt.Errorf("create integration %s: %w", serviceID, err)
	}
	return nil
}

// savePageBody is the body of saved page number page at version v: n
// requirements SAVE<page>-<i>, each with Priority and Category, a
// dependency on the previous one and an issue link; the description
// changes with v.
func savePageBody(page, v, n int) string {
	key := func(i int) string { return fmt.Sprintf("SAVE%d-%04d", page, i) }
	rows := []string{wt.TH("Key", "Description", "Priority", "Category", "Implements")}
	for i := range n {
		desc := fmt.Sprintf("<p>Requirement %d shall record the change of every requirement, version %d.", i, v)
		if i > 0 {
			desc += " " + wt.Link("", key(i-1))
		}
		rows = append(rows, wt.TR(wt.Def(key(i)), desc+"</p>", seedPriority(i), seedCategories[i%len(seedCategories)],
			wt.Jira(fmt.Sprintf("PROJ-%d", i), pageSaveService)))
	}
	return wt.Table(rows...)
}

// timedStore times the store calls of a page save, to tell the time spent
// waiting on DynamoDB from the service's own work.
type timedStore struct {
	*dynamo.WikiStore
	mu      sync.Mutex
	total   time.Duration
	written int
}

func (t *timedStore) reset() {
	t.mu.Lock()
	t.total, t.written = 0, 0
	t.mu.Unlock()
}

func (t *timedStore) elapsed() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

func (t *timedStore) since(start time.Time) {
	t.mu.Lock()
	t.total += time.Since(start)
	t.mu.Unlock()
}

// Page implements wiki.Store.
func (t *timedStore) Page(ctx context.Context, tenant, id string) (*wiki.Page, error) {
	defer t.since(time.Now())
	return t.WikiStore.Page(ctx, tenant, id)
}

// Requirements implements wiki.Store.
func (t *timedStore) Requirements(ctx context.Context, tenant string, ids []wiki.ID) (map[wiki.ID]*requirement.Requirement, error) {
	defer t.since(time.Now())
	return t.WikiStore.Requirements(ctx, tenant, ids)
}

// ServiceIDs implements wiki.Store.
func (t *timedStore) ServiceIDs(ctx context.Context, tenant string) ([]string, error) {
	defer t.since(time.Now())
	return t.WikiStore.ServiceIDs(ctx, tenant)
}

// Commit implements wiki.Store.
func (t *timedStore) Commit(ctx context.Context, tenant string, c *wiki.Change) error {
	defer t.since(time.Now())
	t.mu.Lock()
	t.written = len(c.Writes)
	t.mu.Unlock()
	return t.WikiStore.Commit(ctx, tenant, c)
}

// sum adds up calls by operation.
func sum(calls map[string]int) int {
	n := 0
	for _, c := range calls {
		n += c
	}
	return n
}

// formatCalls renders calls by operation, most frequent first.
func formatCalls(calls map[string]int) string {
	ops := make([]string, 0, len(calls))
	for op := range calls {
		ops = append(ops, op)
	}
	slices.SortFunc(ops, func(a, b string) int {
		if calls[a] != calls[b] {
			return calls[b] - calls[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = fmt.Sprintf("%s %d", op, calls[op])
	}
	return strings.Join(parts, ", ")
}
