package bench

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
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
	row.Method = fmt.Sprintf("wiki.Service.SavePage with shared/dynamo/wikitable.WikiStore, in process, on DynamoDB Local; tenant %s holds %d requirements; "+
		"%d saves of new pages and %d of a changed version of a page (every excerpt changed), %d requirements each, "+
		"with two properties, a dependency on the previous requirement and an issue link of an integration (outbound messages written). "+
		"Service time is the wall time of SavePage divided by the requirements on the page.",
		Tenant, opts.Stored, opts.Fresh, opts.Changed, opts.Requirements)
	counted := env.NewCounted()
	if err := createIntegration(ctx, counted.API, env.WikiTable, Tenant, pageSaveService, "http://127.0.0.1:9"); err != nil {
		return err
	}
	rec := NewRecorder(counted.API)
	sv := &saver{counted: counted, rec: rec, floorDB: env.DynamoDB(), table: env.WikiTable,
		timed: &timedStore{WikiStore: wikitable.NewWikiStore(rec, env.WikiTable)}, meter: env.cpu(), n: opts.Requirements}
	sv.svc = wiki.New(wiki.Deps{Store: sv.timed})

	stop, err := startProfile(env, "page-save")
	if err != nil {
		return err
	}
	defer stop()
	linked := row.result("page_save", fmt.Sprintf("wiki.Service.SavePage of a page of %d requirements with issue links "+
		"(outbound messages written), %d fresh pages and %d changed versions, %d requirements stored.",
		opts.Requirements, opts.Fresh, opts.Changed, opts.Stored), saveFloor)
	saves, err := sv.series(ctx, 2_000_000, pageSaveService, opts.Fresh, opts.Changed)
	stop()
	if err != nil {
		return err
	}
	reportSaves(row, saves, opts.Requirements)
	saveResult(linked, saves, opts.Requirements)
	plainResult := row.result("page_save_no_links", fmt.Sprintf("The same saves without issue links (no outbound messages), %d requirements a page.",
		opts.Requirements), saveFloor)

	// The same pages without issue links write no outbound messages:
	// every row goes out in BatchWriteItem calls instead of transactions
	// with its messages.
	plain, err := sv.series(ctx, 2_100_000, "", opts.Fresh, opts.Changed)
	if err != nil {
		return err
	}
	saveResult(plainResult, plain, opts.Requirements)
	if err := suspectMarking(ctx, env, sv, opts.Changed, row); err != nil {
		return err
	}
	var all Durations
	calls := 0
	for _, s := range plain {
		all = append(all, s.total)
		calls = max(calls, sum(s.calls))
	}
	row.add(fmt.Sprintf("… the same pages without issue links, hence without outbound messages (median of %d saves)", len(plain)), "",
		fmt.Sprintf("%s per requirement, at most %d calls (%s)", ms(all.Median()/time.Duration(opts.Requirements)), calls, plain[len(plain)-1].latencies), Info)
	return nil
}

// saveFloor says what a page save's floor is.
const saveFloor = "the distinct items the save wrote (recorded from its own calls: rows, index items, outbound messages, " +
	"the page, its lease and pending records; an update as its key and values; deletes as keys), written again right after " +
	"it as plain BatchWriteItem calls of 25, 8 at a time as the service runs its calls, to the same table under a scratch " +
	"tenant of the same length (same item sizes, same indexes, nothing the service reads changed). Reads are not part of " +
	"the floor (a save that knew nothing of the stored rows could not keep reverse dependencies), so the ratio also " +
	"charges the service its reads."

// saver saves pages and measures each save and its floor.
type saver struct {
	svc     *wiki.Service
	counted *Counted
	rec     *Recorder
	floorDB dynamo.API
	table   string
	timed   *timedStore
	meter   cpuMeter
	n       int // requirements per page
}

// series saves `fresh` new pages numbered from base, then `changed` new
// versions of the first, with issue links of integration server ("": none).
func (sv *saver) series(ctx context.Context, base int, server string, fresh, changed int) ([]saveFigures, error) {
	var out []saveFigures
	for i := range fresh {
		s, err := sv.save(ctx, base+i, savePageBody(base+i, 0, sv.n, server), true)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	for v := 1; v <= changed; v++ {
		s, err := sv.save(ctx, base, savePageBody(base, v, sv.n, server), false)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// save saves body as page id and measures it.
func (sv *saver) save(ctx context.Context, id int, body string, fresh bool) (saveFigures, error) {
	pageID := fmt.Sprint(id)
	in := wiki.PageInput{ID: pageID, SpaceKey: Space, Title: "Save " + pageID, Body: body}
	sv.counted.Reset()
	sv.timed.reset()
	sv.rec.Start()
	cpu, start := sv.meter.now(), time.Now()
	res, err := sv.svc.SavePage(ctx, Tenant, "bench", in)
	total := time.Since(start)
	used := sv.meter.since(cpu)
	recorded := sv.rec.Stop()
	if err != nil {
		return saveFigures{}, fmt.Errorf("save page %s: %w", pageID, err)
	}
	if len(res.Requirements) != sv.n || len(res.Duplicates) > 0 {
		return saveFigures{}, fmt.Errorf("save page %s: %d requirements indexed, %d duplicates; want %d and 0",
			pageID, len(res.Requirements), len(res.Duplicates), sv.n)
	}
	f := saveFigures{fresh: fresh, total: total, store: sv.timed.elapsed(), cpu: used,
		calls: sv.counted.Calls.Counts(), written: sv.counted.API.Written(), latencies: sv.counted.API.Latencies()}
	// The floor round, right after the service's.
	cpu = sv.meter.now()
	if f.floor, err = writeFloor(ctx, sv.floorDB, sv.table, Tenant, recorded); err != nil {
		return saveFigures{}, fmt.Errorf("floor of page %s: %w", pageID, err)
	}
	f.floorCPU = sv.meter.since(cpu).self
	return f, nil
}

// saveResult fills a page-save floor row from saves of n requirements.
func saveResult(r *Result, saves []saveFigures, n int) {
	var p Pairs
	var calls, floorCalls, written, floorItems, cpu, floorCPU []float64
	byOp := map[string]int{}
	for _, s := range saves {
		p.Add(s.total, s.floor.Took)
		calls, floorCalls = append(calls, float64(sum(s.calls))), append(floorCalls, float64(s.floor.Calls))
		written, floorItems = append(written, float64(s.written)/float64(n)), append(floorItems, float64(s.floor.Items)/float64(n))
		cpu = append(cpu, float64(s.cpu.self)/float64(time.Millisecond)/float64(n))
		floorCPU = append(floorCPU, float64(s.floorCPU)/float64(time.Millisecond)/float64(n))
		if sum(s.calls) > sum(byOp) {
			byOp = s.calls
		}
	}
	r.setPairs(p)
	r.Per = "requirement"
	r.ItemsWrittenPerRequirement = &Amplification{Service: round3(median(written)), Floor: round3(median(floorItems))}
	r.Calls = &Calls{Service: median(calls), Floor: median(floorCalls), ServiceByOp: byOp}
	c := median(cpu)
	r.CPUMSPerRequirement = ptr(c)
	r.FloorCPUMSPerRequirement = ptr(round3(median(floorCPU)))
	r.Goals = append(r.Goals, Goal{Name: "service CPU per requirement (median)", Target: fmt.Sprintf("≤ %.1f ms", MaxSaveCPU),
		Measured: fmt.Sprintf("%.3f ms", c), Verdict: verdict(c <= MaxSaveCPU)})
}

// saveFigures are the figures of one page save.
type saveFigures struct {
	fresh bool
	// total is the wall time of SavePage, store the part spent in store
	// methods.
	total, store time.Duration
	// cpu is the CPU this process and DynamoDB Local used meanwhile.
	cpu cpuSample
	// floor is the floor round measured right after the save, floorCPU
	// the CPU this process used for it.
	floor     FloorRound
	floorCPU  time.Duration
	calls     map[string]int
	written   int
	latencies string
}

// reportSaves adds the page-save metrics to row.
func reportSaves(row *Row, saves []saveFigures, n int) {
	var all, fresh, changed, store, self, ddb Durations
	worst := saveFigures{}
	for _, s := range saves {
		all, store = append(all, s.total), append(store, s.store)
		self, ddb = append(self, s.cpu.self), append(ddb, s.cpu.dynamo)
		if s.fresh {
			fresh = append(fresh, s.total)
		} else {
			changed = append(changed, s.total)
		}
		if sum(s.calls) > sum(worst.calls) {
			worst = s
		}
	}
	perReq := all.Median() / time.Duration(n)
	row.add(fmt.Sprintf("service time per requirement (median of %d saves)", len(saves)), "≤ 1 ms",
		fmt.Sprintf("%s (%s per save)", ms(perReq), ms(all.Median())), verdict(perReq <= time.Millisecond))
	row.add("… fresh pages / changed versions (median per requirement)", "", fmt.Sprintf("%s / %s",
		ms(fresh.Median()/time.Duration(n)), ms(changed.Median()/time.Duration(n))), Info)
	row.add("… per save: wall time in store methods (waiting on DynamoDB) / CPU of the service (bench process: parse, plan, SDK) / CPU of DynamoDB Local", "",
		fmt.Sprintf("%s / %s / %s (medians)", ms(store.Median()), ms(self.Median()), ms(ddb.Median())), Info)
	row.add("… DynamoDB call latencies of the save with most calls (calls run up to 8 at a time)", "", worst.latencies, Info)

	// O(n/25): the writes go out 25 per BatchWriteItem (up to 100 per
	// transaction) and the reads 100 per BatchGetItem, whatever n is.
	calls := sum(worst.calls)
	bound := ceilDiv(worst.written, 25) + 2*ceilDiv(n, 100) + 5
	row.add("DynamoDB calls per save (the save with most calls)",
		fmt.Sprintf("O(n/25): ≤ ⌈W/25⌉ + 2·⌈n/100⌉ + 5 = %d for W = %d items written", bound, worst.written),
		fmt.Sprintf("%d = %.1f·⌈n/25⌉ (%s)", calls, float64(calls)/float64(ceilDiv(n, 25)), formatCalls(worst.calls)),
		verdict(calls <= bound))
	row.note("Verdict rule for the call count: O(requirements/25) is read as \"no call per requirement\": every write " +
		"goes in a batch of 25 (or a transaction of up to 100) and every read in a batch of 100, so a save of n " +
		"requirements writing W items (rows, search index items, outbound messages) may make ⌈W/25⌉ + 2·⌈n/100⌉ calls " +
		"(old and new keys read) plus 5 for the page, the space registry and the integrations.")
	row.note("Seeding writes the stored requirements through the indexing write path without parsing page bodies; " +
		"the measured saves parse their bodies like the content API does.")
}

// createIntegration stores an ACTIVE version-4 integration.
func createIntegration(ctx context.Context, db dynamo.API, table, tenant, serviceID, rpcURL string) error {
	d := &integration.Descriptor{ServiceID: serviceID, RPCURL: rpcURL, Endpoint: integration.DefaultEndpoint,
		Version: integration.DefaultVersion, Status: integration.Active, Token: "bench-token"}
	d.Normalize()
	if err := wikitable.NewIntegrationStore(db, table).Create(ctx, tenant, d); err != nil {
		return fmt.Errorf("create integration %s: %w", serviceID, err)
	}
	return nil
}

// savePageBody is the body of saved page number page at version v: n
// requirements SAVE<page>-<i>, each with Priority and Category, a
// dependency on the previous one and an issue link of integration server
// ("": no issue link); the description changes with v.
func savePageBody(page, v, n int, server string) string {
	key := func(i int) string { return fmt.Sprintf("SAVE%d-%04d", page, i) }
	rows := []string{wt.TH("Key", "Description", "Priority", "Category", "Implements")}
	for i := range n {
		desc := fmt.Sprintf("<p>Requirement %d shall record the change of every requirement, version %d.", i, v)
		if i > 0 {
			desc += " " + wt.Link("", key(i-1))
		}
		issue := ""
		if server != "" {
			issue = wt.Jira(fmt.Sprintf("PROJ-%d", i), server)
		}
		rows = append(rows, wt.TR(wt.Def(key(i)), desc+"</p>", seedPriority(i), seedCategories[i%len(seedCategories)], issue))
	}
	return wt.Table(rows...)
}

// timedStore times the store calls of a page save, to tell the time spent
// waiting on DynamoDB from the service's own work.
type timedStore struct {
	*wikitable.WikiStore
	mu    sync.Mutex
	total time.Duration
}

func (t *timedStore) reset() {
	t.mu.Lock()
	t.total = 0
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
func (t *timedStore) Requirements(ctx context.Context, tenant string, ids []requirement.ID) (map[requirement.ID]*requirement.Requirement, error) {
	defer t.since(time.Now())
	return t.WikiStore.Requirements(ctx, tenant, ids)
}

// Integrations implements wiki.Store.
func (t *timedStore) Integrations(ctx context.Context, tenant string) ([]wiki.Integration, error) {
	defer t.since(time.Now())
	return t.WikiStore.Integrations(ctx, tenant)
}

// AddPendingRemovals implements wiki.Store.
func (t *timedStore) AddPendingRemovals(ctx context.Context, tenant string, counts map[string]int) error {
	defer t.since(time.Now())
	return t.WikiStore.AddPendingRemovals(ctx, tenant, counts)
}

// Commit implements wiki.Store.
func (t *timedStore) Commit(ctx context.Context, tenant string, c *wiki.Change) error {
	defer t.since(time.Now())
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

// suspectRefs is how many requirements of other pages reference each
// requirement of the page whose saves measure suspect marking.
const suspectRefs = 5

// suspectMarking measures what suspect marking adds to a page save: a page
// of sv.n requirements, each referenced by suspectRefs requirements of
// suspectRefs other pages, saved with every text changed, rounds times
// with the tenant's suspectFields [] (nothing marks) and, right after each,
// with the default (text, properties: every referencing row is marked,
// suspectRefs × sv.n marks). The row page_save_suspect_marking is the
// marking saves against their floor; the metrics are what marking adds
// per requirement (time, calls, items written) over the saves that mark
// nothing.
func suspectMarking(ctx context.Context, env *Env, sv *saver, rounds int, row *Row) error {
	const target = 2_200_000
	// Keys after every other key of the data set (REQ-, SAVE…), so that
	// the searches measured later, which read in key order and stop at
	// their first page, read none of these rows.
	key := func(i int) string { return fmt.Sprintf("ZMARK-%04d", i) }
	body := func(v int) string {
		rows := []string{wt.TH("Key", "Description")}
		for i := range sv.n {
			rows = append(rows, wt.TR(wt.Def(key(i)), fmt.Sprintf("<p>Requirement %d shall be traced, version %d.</p>", i, v)))
		}
		return wt.Table(rows...)
	}
	seed := func(id int, body string) error {
		_, err := sv.svc.SavePage(ctx, Tenant, "bench", wiki.PageInput{ID: fmt.Sprint(id), SpaceKey: Space, Title: "Save " + fmt.Sprint(id), Body: body})
		return err
	}
	if err := seed(target, body(0)); err != nil {
		return fmt.Errorf("seed the marked page: %w", err)
	}
	for p := 1; p <= suspectRefs; p++ {
		rows := []string{wt.TH("Key", "Description")}
		for i := range sv.n {
			rows = append(rows, wt.TR(wt.Def(fmt.Sprintf("ZREF%d-%04d", p, i)), "<p>Refines "+wt.Link("", key(i))+".</p>"))
		}
		if err := seed(target+p, wt.Table(rows...)); err != nil {
			return fmt.Errorf("seed a referencing page: %w", err)
		}
	}
	settings := wikitable.NewSettingsStore(env.DynamoDB(), env.WikiTable)
	defer settings.Put(context.WithoutCancel(ctx), Tenant, integration.Settings{}) //nolint:errcheck // back to the default
	var off, on []saveFigures
	v := 0
	for range rounds {
		for _, fields := range [][]string{{}, nil} {
			if err := settings.Put(ctx, Tenant, integration.Settings{SuspectFields: fields}); err != nil {
				return err
			}
			v++
			s, err := sv.save(ctx, target, body(v), false)
			if err != nil {
				return err
			}
			if fields == nil {
				on = append(on, s)
			} else {
				off = append(off, s)
			}
		}
	}
	res := row.result("page_save_suspect_marking", fmt.Sprintf("wiki.Service.SavePage of a changed version of a page of %d "+
		"requirements (every text changed, no issue links), each referenced by %d requirements of %d other pages, with the "+
		"default suspectFields: %d referencing rows marked suspect (their mark and suspect index item); %d saves, each right "+
		"after the same save with suspectFields [] (nothing marked).", sv.n, suspectRefs, suspectRefs, suspectRefs*sv.n, rounds), saveFloor)
	saveResult(res, on, sv.n)
	perReq := func(saves []saveFigures) (t time.Duration, calls, written float64) {
		var d Durations
		var c, w []float64
		for _, s := range saves {
			d = append(d, s.total)
			c, w = append(c, float64(sum(s.calls))), append(w, float64(s.written))
		}
		return d.Median() / time.Duration(sv.n), median(c) / float64(sv.n), median(w) / float64(sv.n)
	}
	tOff, cOff, wOff := perReq(off)
	tOn, cOn, wOn := perReq(on)
	row.add(fmt.Sprintf("suspect marking: a save of %d changed requirements, %d referencing rows each on other pages, with the "+
		"default suspectFields / with [] (medians of %d saves each, per requirement)", sv.n, suspectRefs, rounds), "",
		fmt.Sprintf("%s / %s; calls %.3f / %.3f; items written %.2f / %.2f", ms(tOn), ms(tOff), cOn, cOff, wOn, wOff), Info)
	row.add("… added by marking, per requirement", fmt.Sprintf("%d items (a mark and an index item per referencing row)", 2*suspectRefs),
		fmt.Sprintf("%s, %.3f calls, %.2f items written", ms(tOn-tOff), cOn-cOff, wOn-wOff), verdict(math.Abs(wOn-wOff-2*suspectRefs) < 1e-6))
	return nil
}
