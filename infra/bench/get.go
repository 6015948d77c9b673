package bench

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikirequirements"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// GetOptions size the GET measurement.
type GetOptions struct {
	// Stored is the number of requirements in the tenant; the keys read
	// are spread over them.
	Stored int
	// Runs and Warmup as for searches.
	Runs, Warmup int
	// WikiURL, when set, is a local stack's wiki API.
	WikiURL string
}

// Get measures GET /rest/reqs/1/requirement2/{spaceKey}/{key}: the DynamoDB
// calls of a request once the token is cached, and its latency, through
// the WikiRequirements route group composed as its main.go composes it
// (in process, counted client) and, when opts.WikiURL is set, through the
// local stack.
func Get(ctx context.Context, env *Env, opts GetOptions, row *Row) error {
	row.Method = fmt.Sprintf("GET /rest/reqs/1/requirement2/%s/{key} with a wiki user's token, %d runs after %d warm-up runs (the first one caches the token), "+
		"keys spread over the %d stored requirements. In process: the WikiRequirements route group (httpapi.Router, cached "+
		"authenticator, wikirequirements.Handler on wiki.Service and shared/dynamo/wikitable.WikiStore) composed as in its main.go, on one counted "+
		"DynamoDB client, without the per-tenant rate limit (its leased AuthTable calls are its own, and the in-process loop runs past TENANT_RATE); "+
		"local stack: through the gateway and the real bootstrap, rate limit included.", Space, opts.Runs, opts.Warmup, opts.Stored)
	counted := env.NewCounted()
	authn := auth.NewAuthenticator(authtable.NewAuthStore(counted.API, env.AuthTable), 30*time.Second)
	router := httpapi.NewRouter(auth.Wiki, authn)
	router.Logger = slog.New(slog.DiscardHandler)
	rec := NewRecorder(counted.API)
	(&wikirequirements.Handler{Requirements: wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(rec, env.WikiTable)})}).Register(router)
	floorDB := env.DynamoDB()
	result := row.result("get_requirement", fmt.Sprintf("GET /rest/reqs/1/requirement2/%s/{key} through the WikiRequirements route group "+
		"in process (token cached), keys spread over %d requirements.", Space, opts.Stored),
		"one GetItem of the same requirement row (the service's own GetItem, recorded, sent again as is on another client), "+
			"timed right after each request.")
	var pairs Pairs
	var callCounts []float64

	key := func(i int) string {
		k := (i * 7919) % opts.Stored
		if seedDeleted(k) {
			k++
		}
		return seedKey(k)
	}
	var times Durations
	maxCalls, maxItems := 0, 0
	var callsOf map[string]int
	for i := range opts.Warmup + opts.Runs {
		req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/rest/reqs/1/requirement2/"+Space+"/"+key(i), nil)
		req.Header.Set("Authorization", "Bearer "+wikiUserToken)
		w := httptest.NewRecorder()
		counted.Reset()
		rec.Start()
		start := time.Now()
		router.ServeHTTP(w, req)
		elapsed := time.Since(start)
		got := rec.Stop()
		if w.Code != http.StatusOK {
			return fmt.Errorf("GET %s answered %d: %.200s", req.URL, w.Code, w.Body.String())
		}
		if len(got.Gets) != 1 {
			return fmt.Errorf("GET %s made %d GetItem on the wiki table, want 1", req.URL, len(got.Gets))
		}
		floor, err := getFloor(ctx, floorDB, env.WikiTable, got.Gets[0].Key)
		if err != nil {
			return err
		}
		if i < opts.Warmup {
			continue
		}
		times = append(times, elapsed)
		pairs.Add(elapsed, floor.Took)
		callCounts = append(callCounts, float64(counted.Calls.Total()))
		if n := counted.Calls.Total(); n >= maxCalls {
			maxCalls, callsOf = n, counted.Calls.Counts()
		}
		maxItems = max(maxItems, counted.API.Items())
	}
	result.setPairs(pairs)
	result.Per = "result"
	result.ItemsReadPerResult = &Amplification{Service: float64(maxItems), Floor: 1}
	result.Calls = &Calls{Service: median(callCounts), Floor: 1, ServiceByOp: callsOf}
	row.add("DynamoDB calls per GET, token cached (most of any run)", "exactly 1 read",
		fmt.Sprintf("%d (%s; %d item)", maxCalls, formatCalls(callsOf), maxItems), verdict(maxCalls == 1 && callsOf["GetItem"] == 1))
	row.add("p50 / p95 in process", "", fmt.Sprintf("%s / %s", ms(times.Percentile(50)), ms(times.Percentile(95))), Info)
	if opts.WikiURL == "" {
		return nil
	}
	times = nil
	for i := range opts.Warmup + opts.Runs {
		start := time.Now()
		if _, err := get(ctx, opts.WikiURL+"/rest/reqs/1/requirement2/"+Space+"/"+key(i), wikiUserToken); err != nil {
			row.add("p50 / p95 through the local stack", "", "not measured: "+err.Error(), NotMeasured)
			return nil
		}
		if i >= opts.Warmup {
			times = append(times, time.Since(start))
		}
	}
	row.add("p50 / p95 through the local stack", "", fmt.Sprintf("%s / %s", ms(times.Percentile(50)), ms(times.Percentile(95))), Info)
	return nil
}
