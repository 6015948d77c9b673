package wikirequirements_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikirequirements"
	"github.com/reqtrace/reqtrace/shared/lambdaapp"
	"github.com/reqtrace/reqtrace/shared/ratelimit"
	"github.com/reqtrace/reqtrace/shared/wiki"
	wt "github.com/reqtrace/reqtrace/shared/wiki/wikitest"
)

// handClock is a hand-moved clock starting at the current second (window
// counters expire by DynamoDB TTL an hour after their second, and
// DynamoDB Local deletes expired items: a clock in the past would lose
// them mid-test).
type handClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *handClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *handClock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// TestRateLimitHoldsAcrossInstances serves GET requirement2 from two
// routers composed as two warm WikiRequirements functions are
// (lambdaapp.Deps.Router, each with its own limiter and DynamoDB clients)
// on one set of tables: requests alternate between them and the tenant
// still gets exactly its rate per second, then 429 with Retry-After and the
// JSON error body; another tenant keeps its own budget; the next second
// serves again. The route's own DynamoDB calls are counted apart from the
// limiter's, and stay one GetItem per answered request.
func TestRateLimitHoldsAcrossInstances(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	ctx := context.Background()
	if err := authtable.NewAuthStore(env.DynamoDB, env.AuthTable).PutTenant(ctx, "demo", "Demo"); err != nil {
		t.Fatal(err)
	}
	// demo's own rate, as `reqtrace-admin tenant limit demo 60` sets it;
	// acme stays on the default.
	const demoRate, defaultRate = 60, 40
	if err := authtable.NewRateStore(env.DynamoDB, env.AuthTable).SetTenantRate(ctx, "demo", demoRate); err != nil {
		t.Fatal(err)
	}
	svc := wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(env.DynamoDB, env.WikiTable)})
	if _, err := svc.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "1", SpaceKey: "DEMO", Title: "Specs",
		Body: specs(wt.TR(wt.Def("REQ-1"), "Rate limits hold.", "", "", ""))}); err != nil {
		t.Fatal(err)
	}

	clk := &handClock{now: time.Now().Truncate(time.Second)}
	routeCalls, limiterCalls := dynamo.NewCallCounter(), dynamo.NewCallCounter()
	instance := func() http.Handler {
		limiterDB := dynamodb.NewFromConfig(env.Config, limiterCalls.Options)
		d := &lambdaapp.Deps{
			Auth: auth.NewAuthenticator(devTokens, time.Minute),
			Limiter: ratelimit.New(authtable.NewRateStore(limiterDB, env.AuthTable),
				ratelimit.Options{Rate: defaultRate, RateTTL: time.Minute, Timeout: 30 * time.Second, Now: clk.Now}),
			Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}
		rt := d.Router(auth.Wiki)
		routeDB := dynamodb.NewFromConfig(env.Config, routeCalls.Options)
		(&wikirequirements.Handler{Requirements: wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(routeDB, env.WikiTable)})}).Register(rt)
		return rt
	}
	instances := []http.Handler{instance(), instance()}

	// send makes n requests, alternating instances, and returns how many
	// were answered (200 or 404); the others must be proper 429s.
	send := func(token, path string, n int) int {
		t.Helper()
		answered := 0
		for i := range n {
			a := do(t, instances[i%2], "GET", path, token)
			switch a.code {
			case http.StatusOK, http.StatusNotFound:
				answered++
			case http.StatusTooManyRequests:
				msgs, _ := a.body["errorMessages"].([]any)
				if a.header.Get("Retry-After") != "1" || len(msgs) != 1 || a.body["errors"] == nil {
					t.Fatalf("429 with Retry-After %q and body %s; want 1 and errorMessages/errors", a.header.Get("Retry-After"), a.raw)
				}
			default:
				t.Fatalf("GET %s: %d %s", path, a.code, a.raw)
			}
		}
		return answered
	}

	const path = "/rest/reqs/1/requirement2/DEMO/REQ-1"
	if got := send("demo-wiki-user", path, 100); got != demoRate {
		t.Fatalf("demo (own rate %d/s) through two instances: %d of 100 answered in one second", demoRate, got)
	}
	if got := send("acme-wiki-user", path, 100); got != defaultRate { // 404s: demo's page is not acme's
		t.Fatalf("acme (default %d/s) while demo is throttled: %d of 100 answered", defaultRate, got)
	}
	if c := routeCalls.Counts(); len(c) != 1 || c["GetItem"] != demoRate+defaultRate {
		t.Fatalf("route DynamoDB calls %v, want one GetItem per answered request (%d) and none for a 429", c, demoRate+defaultRate)
	}
	// Two instances, two tenants: one rate read each; leases (at most a
	// twentieth of the limit: 3 for demo, 2 for acme) amortize the rest.
	if n := limiterCalls.Count("GetItem"); n != 4 {
		t.Errorf("limiter read tenants' rates %d times, want 4", n)
	}
	t.Logf("limiter calls for %d answered and %d refused requests: %v", demoRate+defaultRate, 200-demoRate-defaultRate, limiterCalls.Counts())
	if n := limiterCalls.Count("UpdateItem"); n >= demoRate+defaultRate {
		t.Errorf("limiter made %d UpdateItem calls for %d answered requests: no amortization", n, demoRate+defaultRate)
	}

	clk.add(time.Second)
	if got := send("demo-wiki-user", path, 10); got != 10 {
		t.Fatalf("demo in the next second: %d of 10 answered", got)
	}
}
