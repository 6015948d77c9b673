package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/search"
)

// SearchCase is one measured search.
type SearchCase struct {
	Name string
	Q    string
}

// SearchCases are the searches of DESIGN.md §9 (key prefix, property
// equality) and a NOT/OR mix driven by the property index.
var SearchCases = []SearchCase{
	{"key prefix", "key ~ 'REQ-00%'"},
	{"property equality", "@Priority = 'High'"},
	{"NOT/OR mix", "@Priority = 'High' AND NOT (status = 'DELETED' OR key ~ 'X%')"},
}

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
// GetItem items) and latency, in process with search.Service on DynamoDB
// Local and, when opts.WikiURL is set, through the local stack.
func Search(ctx context.Context, env *Env, opts SearchOptions, row *Row) error {
	row.Method = fmt.Sprintf("First page (limit %d, default order) over %d requirements of tenant %s, no spaceKey (tenant-wide scope); "+
		"%d runs each after %d warm-up runs. In process: search.Service with shared/dynamo.SearchStore on DynamoDB Local, "+
		"items counted by wrapping the client. Local stack: GET /rest/reqs/1/requirement2/%s through the local gateway, "+
		"the Lambda Runtime API shim and the real WikiRequirements bootstrap (warm process), timed by the HTTP client.",
		searchLimit, opts.Stored, Tenant, opts.Runs, opts.Warmup, Space)
	counted := env.NewCounted()
	store := dynamo.NewSearchStore(counted.API, env.WikiTable)
	svc := search.NewService(store, store)

	stop, err := startProfile(env, "search")
	if err != nil {
		return err
	}
	defer stop()
	for _, c := range SearchCases {
		if err := searchInProcess(ctx, svc, counted, c, opts, row); err != nil {
			return err
		}
	}
	stop()
	if opts.WikiURL == "" {
		return nil
	}
	for _, c := range SearchCases {
		if err := searchHTTP(ctx, opts.WikiURL, c, opts, row); err != nil {
			row.add(c.Name+": p50 / p95 through the local stack", "p95 ≤ 100 ms", "not measured: "+err.Error(), NotMeasured)
		}
	}
	return nil
}

// searchInProcess measures one search with the service in this process.
func searchInProcess(ctx context.Context, svc *search.Service, counted *Counted, c SearchCase, opts SearchOptions, row *Row) error {
	e, err := query.Parse(c.Q)
	if err != nil {
		return fmt.Errorf("parse %q: %w", c.Q, err)
	}
	req := search.Request{Tenant: Tenant, PathSpace: Space, Query: e, Limit: searchLimit}
	var times Durations
	var items, returned int
	var plan string
	var calls map[string]int
	for i := range opts.Warmup + opts.Runs {
		counted.Reset()
		start := time.Now()
		res, err := svc.Search(ctx, req)
		elapsed := time.Since(start)
		if err != nil {
			return fmt.Errorf("search %q: %w", c.Q, err)
		}
		if i < opts.Warmup {
			continue
		}
		times = append(times, elapsed)
		items, returned, plan, calls = counted.API.Items(), len(res.Requirements), res.Plan, counted.Calls.Counts()
	}
	if returned != searchLimit {
		return fmt.Errorf("search %q returned %d requirements, want a full page of %d", c.Q, returned, searchLimit)
	}
	ratio := float64(items) / float64(returned)
	row.add(fmt.Sprintf("%s `%s`: items read per item returned", c.Name, c.Q), "≤ 2",
		fmt.Sprintf("%.2f (%d items for %d; %s; plan: %s)", ratio, items, returned, formatCalls(calls), plan), verdict(ratio <= 2))
	row.add(c.Name+": p50 / p95 in process", "p95 ≤ 100 ms",
		fmt.Sprintf("%s / %s", ms(times.Percentile(50)), ms(times.Percentile(95))), verdict(times.Percentile(95) <= 100*time.Millisecond))
	return nil
}

// searchHTTP measures one search through the local stack.
func searchHTTP(ctx context.Context, wikiURL string, c SearchCase, opts SearchOptions, row *Row) error {
	u := fmt.Sprintf("%s/rest/reqs/1/requirement2/%s?limit=%d&q=%s", wikiURL, Space, searchLimit, url.QueryEscape(c.Q))
	var times Durations
	for i := range opts.Warmup + opts.Runs {
		start := time.Now()
		body, err := get(ctx, u, wikiUserToken)
		elapsed := time.Since(start)
		if err != nil {
			return err
		}
		var answer struct {
			Count int `json:"count"`
		}
		if err := json.Unmarshal(body, &answer); err != nil {
			return fmt.Errorf("decode the answer: %w", err)
		}
		if answer.Count != searchLimit {
			return fmt.Errorf("answered %d results, want %d", answer.Count, searchLimit)
		}
		if i >= opts.Warmup {
			times = append(times, elapsed)
		}
	}
	row.add(c.Name+": p50 / p95 through the local stack", "p95 ≤ 100 ms",
		fmt.Sprintf("%s / %s", ms(times.Percentile(50)), ms(times.Percentile(95))), verdict(times.Percentile(95) <= 100*time.Millisecond))
	return nil
}

// wikiUserToken is a development token of tenant demo (infra/devseed).
const wikiUserToken = "demo-wiki-user"

// httpClient is the client of the local stack measurements.
var httpClient = &http.Client{Timeout: 30 * time.Second}

// get sends an authenticated GET and returns the body of a 200 answer.
func get(ctx context.Context, u, token string) ([]byte, error) {
	status, body, err := do(ctx, http.MethodGet, u, token)
	if err != nil {
		return nil, err
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("GET %s answered %d: %.200s", u, status, body)
	}
	return body, nil
}

// do sends a request without a body and returns the status and body.
func do(ctx context.Context, method, u, token string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, body, err
}
