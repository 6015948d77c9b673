package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
)

// SearchCase is one measured search.
type SearchCase struct {
	Name string
	// Row is the case's row in docs/benchmarks.json.
	Row string
	Q   string
	// Space is the spaceKey parameter: "" searches every space of the
	// tenant (after reading its isolateSpaces setting).
	Space string
	// MaxRatio is the target of items read per item returned (0: 2).
	MaxRatio float64
}

// SearchCases are the searches of the performance targets (key prefix, property
// equality, external property equality through its own index), a NOT/OR
// mix driven by the property index, all over every
// space, and property equality within one space: the large one, and the
// small one whose keys interleave with the large one's (its matches are a
// fiftieth of the tenant's: a search of that space must not read the
// others' index items).
var SearchCases = []SearchCase{
	{Name: "key prefix", Row: "search_key_prefix", Q: "key ~ 'REQ-00%'"},
	{Name: "property equality", Row: "search_property", Q: "@Priority = 'High'"},
	// Full text: RECORD, the whole word of the pattern, drives through
	// the word index (every seeded text holds it): its index items and
	// rows, plus the space registry (one item per space), which tells
	// whether the spaces have the word index.
	{Name: "full text", Row: "search_fulltext", Q: "text ~ '%shall record every%'", MaxRatio: 2.1},
	// A bare string without a whole word ('Requirement 12' also matches
	// "Requirement 123"): no index applies, the bounded scan reads the
	// scope in key order.
	{Name: "full text, no whole word", Row: "search_fulltext_substring", Q: "'Requirement 12'"},
	{Name: "NOT/OR mix", Row: "search_not_or_mix", Q: "@Priority = 'High' AND NOT (status = 'DELETED' OR key ~ 'X%')"},
	{Name: "property equality in one space", Row: "search_property_one_space", Q: "@Priority = 'High'", Space: Space},
	{Name: "property equality in a small space", Row: "search_property_small_space", Q: "@Priority = 'High'", Space: SmallSpace},
	{Name: "external property equality", Row: "search_external_property", Q: "ext@Tier = 'Gold'"},
}

// searchFloor says what a search page's floor is.
const searchFloor = "one BatchGetItem of exactly the requirement rows the page returned (keys recorded from " +
	"RequirementStore.GetMany of the returned ids, read untimed once), timed right after each service round."

// SearchOptions size the search measurement.
type SearchOptions struct {
	// Stored is the number of requirements in the tenant (reported).
	Stored int
	// Runs is the number of measured runs of each search, after Warmup
	// unmeasured ones.
	Runs, Warmup int
	// WikiURL, when set, is a local stack's wiki API: each search is also
	// measured through the gateway and the WikiRequirements bootstrap.
	WikiURL string
}

// searchLimit is the page size measured: the first page of 50.
const searchLimit = 50

// Search measures the first page of each SearchCase over the data set:
// items read per item returned (Query items evaluated plus BatchGetItem and
// GetItem items; the next page's first match, read for hasMore, counts as
// returned) and latency, in process with search.Service on DynamoDB
// Local and, when opts.WikiURL is set, through the local stack.
func Search(ctx context.Context, env *Env, opts SearchOptions, row *Row) error {
	row.Method = fmt.Sprintf("First page (limit %d, default order) over %d requirements of tenant %s, without spaceKey (every space) unless the search says \"in one space\"; "+
		"%d runs each after %d warm-up runs. In process: search.Service with shared/dynamo/wikitable.SearchStore on DynamoDB Local and the tenant settings cached as in the function (30 s), "+
		"items counted by wrapping the client. Local stack: GET /rest/reqs/1/requirement2/%s through the local gateway, "+
		"the Lambda Runtime API shim and the real WikiRequirements bootstrap (warm process), timed by the HTTP client.",
		searchLimit, opts.Stored, Tenant, opts.Runs, opts.Warmup, Space)
	counted := env.NewCounted()
	store := wikitable.NewSearchStore(counted.API, env.WikiTable)
	// Composed as WikiRequirements composes it: the tenant settings cached
	// for AUTH_CACHE_TTL's default (30 s).
	svc := search.New(search.Deps{Store: store, Settings: search.NewSettingsCache(store, 30*time.Second)})
	fl := &searchFloorer{db: env.DynamoDB(), table: env.WikiTable}
	fl.rec = NewRecorder(fl.db)
	fl.reqs = wikitable.NewRequirementStore(fl.rec, env.WikiTable)

	stop, err := startProfile(env, "search")
	if err != nil {
		return err
	}
	defer stop()
	var ratios []string
	var local, stack Durations // p95 of each search
	for _, c := range SearchCases {
		ratio, p95, err := searchInProcess(ctx, svc, counted, fl, c, opts, row)
		if err != nil {
			return err
		}
		ratios = append(ratios, fmt.Sprintf("%s %.2f", c.Name, ratio))
		local = append(local, p95)
	}
	stop()
	row.Headline = fmt.Sprintf("items read per item returned: %s (%s); p95 ≤ %s in process", strings.Join(ratios, ", "),
		verdictOf(row, "items read"), ms(local.Max()))
	if opts.WikiURL == "" {
		return nil
	}
	for _, c := range SearchCases {
		p95, err := searchHTTP(ctx, opts.WikiURL, c, opts, row)
		if err != nil {
			row.add(c.Name+": p50 / p95 through the local stack", "p95 ≤ 100 ms", "not measured: "+err.Error(), NotMeasured)
			continue
		}
		stack = append(stack, p95)
	}
	if len(stack) > 0 {
		row.Headline += fmt.Sprintf(", ≤ %s through the local stack (%s)", ms(stack.Max()), verdictOf(row, "p95"))
	}
	return nil
}

// searchInProcess measures one search with the service in this process
// and returns its items read per item returned and its p95.
func searchInProcess(ctx context.Context, svc *search.Service, counted *Counted, fl *searchFloorer, c SearchCase, opts SearchOptions, row *Row) (float64, time.Duration, error) {
	e, err := query.Parse(c.Q)
	if err != nil {
		return 0, 0, fmt.Errorf("parse %q: %w", c.Q, err)
	}
	req := search.Request{Tenant: Tenant, PathSpace: Space, Space: c.Space, Query: e, Limit: searchLimit}
	result := row.result(c.Row, fmt.Sprintf("search.Service.Search, first page of %d of `%s`%s over %d requirements, in process.",
		searchLimit, c.Q, scopeSuffix(c), opts.Stored), searchFloor)
	var times Durations
	var pairs Pairs
	var keys []map[string]types.AttributeValue
	var callCounts, itemCounts, floorCalls []float64
	var items, returned, found int
	var units float64
	var plan, byOp string
	var calls map[string]int
	for i := range opts.Warmup + opts.Runs {
		counted.Reset()
		start := time.Now()
		res, err := svc.Search(ctx, req)
		elapsed := time.Since(start)
		if err != nil {
			return 0, 0, fmt.Errorf("search %q: %w", c.Q, err)
		}
		if keys == nil {
			if keys, err = fl.keys(ctx, res.Requirements); err != nil {
				return 0, 0, err
			}
		}
		floor, err := batchGetFloor(ctx, fl.db, fl.table, keys)
		if err != nil {
			return 0, 0, err
		}
		if i < opts.Warmup {
			continue
		}
		times = append(times, elapsed)
		pairs.Add(elapsed, floor.Took)
		callCounts, floorCalls = append(callCounts, float64(counted.Calls.Total())), append(floorCalls, float64(floor.Calls))
		if n := len(res.Requirements); n > 0 {
			itemCounts = append(itemCounts, float64(counted.API.Items())/float64(n))
		}
		items, units, returned = counted.API.Items(), counted.API.ReadUnits(), len(res.Requirements)
		// A page with a next one also read that page's first match, which
		// is how the answer knows hasMore: it is read and found, not
		// returned.
		found = returned
		if res.HasMore {
			found++
		}
		plan, calls, byOp = res.Plan, counted.Calls.Counts(), counted.API.ItemsRead()
	}
	result.setPairs(pairs)
	result.Per = "result"
	result.ItemsReadPerResult = &Amplification{Service: round3(median(itemCounts)), Floor: 1}
	result.Calls = &Calls{Service: median(callCounts), Floor: median(floorCalls), ServiceByOp: calls}
	if returned != searchLimit {
		return 0, 0, fmt.Errorf("search %q returned %d requirements, want a full page of %d", c.Q, returned, searchLimit)
	}
	ratio := float64(items) / float64(found)
	maxRatio := c.MaxRatio
	if maxRatio == 0 {
		maxRatio = 2
	}
	row.add(fmt.Sprintf("%s `%s`: items read per item returned", c.Name, c.Q+scopeSuffix(c)), fmt.Sprintf("≤ %g", maxRatio),
		fmt.Sprintf("%.2f (%d items = %s for %d found: %d returned and, for hasMore, the next page's first; calls %s; plan: %s)",
			ratio, items, byOp, found, returned, formatCalls(calls), plan), verdict(ratio <= maxRatio))
	row.add(c.Name+": read capacity units per item returned", "",
		fmt.Sprintf("%.2f (%.1f RCU as DynamoDB Local reports them)", units/float64(returned), units), Info)
	p95 := times.Percentile(95)
	row.add(c.Name+": p50 / p95 in process", "p95 ≤ 100 ms",
		fmt.Sprintf("%s / %s", ms(times.Percentile(50)), ms(p95)), verdict(p95 <= maxSearchP95))
	return ratio, p95, nil
}

// maxSearchP95 is the latency target of the performance targets.
const maxSearchP95 = 100 * time.Millisecond

// searchHTTP measures one search through the local stack and returns its
// p95.
func searchHTTP(ctx context.Context, wikiURL string, c SearchCase, opts SearchOptions, row *Row) (time.Duration, error) {
	u := fmt.Sprintf("%s/rest/reqs/1/requirement2/%s?limit=%d&q=%s", wikiURL, Space, searchLimit, url.QueryEscape(c.Q))
	if c.Space != "" {
		u += "&spaceKey=" + url.QueryEscape(c.Space)
	}
	var times Durations
	for i := range opts.Warmup + opts.Runs {
		start := time.Now()
		body, err := get(ctx, u, wikiUserToken)
		elapsed := time.Since(start)
		if err != nil {
			return 0, err
		}
		var answer struct {
			Count int `json:"count"`
		}
		if err := json.Unmarshal(body, &answer); err != nil {
			return 0, fmt.Errorf("decode the answer: %w", err)
		}
		if answer.Count != searchLimit {
			return 0, fmt.Errorf("answered %d results, want %d", answer.Count, searchLimit)
		}
		if i >= opts.Warmup {
			times = append(times, elapsed)
		}
	}
	p95 := times.Percentile(95)
	row.add(c.Name+": p50 / p95 through the local stack", "p95 ≤ 100 ms",
		fmt.Sprintf("%s / %s", ms(times.Percentile(50)), ms(p95)), verdict(p95 <= maxSearchP95))
	return p95, nil
}

// wikiUserToken is a development token of tenant demo (infra/devseed).
const wikiUserToken = "demo-wiki-user"

// httpClient is the client of the local stack measurements.
var httpClient = &http.Client{Timeout: 2 * time.Minute}

// get sends an authenticated GET and returns the body of a 200 answer.
func get(ctx context.Context, u, token string) ([]byte, error) {
	status, body, err := do(ctx, http.MethodGet, u, token, nil)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("GET %s answered %d: %.200s", u, status, body)
	}
	return body, nil
}

// do sends a request, with a JSON body unless body is nil, and returns the
// status and body of the answer.
func do(ctx context.Context, method, u, token string, body []byte) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return resp.StatusCode, answer, err
}

// scopeSuffix shows a search's spaceKey parameter.
func scopeSuffix(c SearchCase) string {
	if c.Space == "" {
		return ""
	}
	return "` spaceKey=`" + c.Space
}

// searchFloorer reads the rows a search page returned, for its floor.
type searchFloorer struct {
	db    dynamo.API
	table string
	rec   *Recorder
	reqs  *wikitable.RequirementStore
}

// keys returns the table keys of the rows reqs, recorded from the store's
// own read of them (untimed), so the floor reads exactly those items.
func (f *searchFloorer) keys(ctx context.Context, reqs []*requirement.Requirement) ([]map[string]types.AttributeValue, error) {
	ids := make([]requirement.ID, len(reqs))
	for i, r := range reqs {
		ids[i] = r.ID()
	}
	f.rec.Start()
	_, err := f.reqs.GetMany(ctx, Tenant, ids)
	rec := f.rec.Stop()
	if err != nil {
		return nil, fmt.Errorf("read the returned rows: %w", err)
	}
	keys := recordedKeys(rec, f.table)
	if len(keys) != len(reqs) {
		return nil, fmt.Errorf("the returned rows are %d keys, want %d", len(keys), len(reqs))
	}
	return keys, nil
}
