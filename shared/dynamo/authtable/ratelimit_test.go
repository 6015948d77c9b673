package authtable_test

// Tests of RateStore and of ratelimit.Limiter on it, on DynamoDB Local
// through infra/testenv. Windows start at the real current second (moved
// by hand from there): DynamoDB Local deletes items whose ttl has passed,
// as AWS does, so a clock in the past would lose the counts mid-test.

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
	"github.com/reqtrace/reqtrace/shared/ratelimit"
)

// clock is a hand-moved clock starting at the current second.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Now().Truncate(time.Second)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestRateStoreTakeNeverGrantsPastTheLimit(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	store := authtable.NewRateStore(env.DynamoDB, env.AuthTable)
	ctx := context.Background()
	w := ratelimit.Window{Tenant: "demo", App: auth.Wiki, Start: time.Now().Truncate(time.Second)}

	// One caller: full grants, then what is left, then nothing.
	for _, c := range []struct{ n, want int }{{4, 4}, {4, 4}, {4, 2}, {4, 0}, {1, 0}} {
		got, err := store.Take(ctx, w, c.n, 10)
		if err != nil || got != c.want {
			t.Fatalf("Take(%d) with limit 10 = %d, %v; want %d", c.n, got, err, c.want)
		}
	}
	// The counter expires an hour after its window.
	out, err := env.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: &env.AuthTable, Key: map[string]types.AttributeValue{
		"pk": &types.AttributeValueMemberS{Value: authtable.RateWindowPK(w)}, "sk": &types.AttributeValueMemberS{Value: "RATE"}}})
	if err != nil {
		t.Fatal(err)
	}
	ttl, _ := out.Item["ttl"].(*types.AttributeValueMemberN)
	if want := strconv.FormatInt(w.Start.Add(time.Second+time.Hour).Unix(), 10); ttl == nil || ttl.Value != want {
		t.Fatalf("window item ttl = %v, want %s", out.Item["ttl"], want)
	}

	// Many callers at once on another window: the grants add up to the
	// limit exactly, one call each.
	w.Start = w.Start.Add(time.Second)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		granted int
	)
	for range 40 {
		wg.Go(func() {
			got, err := store.Take(ctx, w, 3, 100)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			granted += got
			mu.Unlock()
		})
	}
	wg.Wait()
	if granted != 100 {
		t.Fatalf("40 concurrent takes of 3 with limit 100 granted %d, want 100", granted)
	}
	// Other tenants, applications and windows count apart.
	for _, other := range []ratelimit.Window{
		{Tenant: "acme", App: auth.Wiki, Start: w.Start},
		{Tenant: "demo", App: auth.Tracker, Start: w.Start},
		{Tenant: "demo", App: auth.Wiki, Start: w.Start.Add(time.Second)},
	} {
		if got, err := store.Take(ctx, other, 3, 100); err != nil || got != 3 {
			t.Errorf("Take on %+v = %d, %v; want 3", other, got, err)
		}
	}
}

func TestTenantRate(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	tenants := authtable.NewAuthStore(env.DynamoDB, env.AuthTable)
	store := authtable.NewRateStore(env.DynamoDB, env.AuthTable)
	ctx := context.Background()

	if err := store.SetTenantRate(ctx, "globex", 50); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("rate of a tenant never created: %v, want ErrNotFound", err)
	}
	if rps, err := store.TenantRate(ctx, "globex"); err != nil || rps != 0 {
		t.Fatalf("a refused SetTenantRate wrote %d, %v", rps, err)
	}
	if err := tenants.PutTenant(ctx, "globex", "Globex"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tenant string
		rps    int
	}{{"globex", 0}, {"globex", -5}, {"globex", ratelimit.MaxRate + 1}, {"Bad#Id", 10}} {
		if err := store.SetTenantRate(ctx, c.tenant, c.rps); !errors.Is(err, apperr.ErrInvalid) {
			t.Errorf("SetTenantRate(%q, %d) = %v, want ErrInvalid", c.tenant, c.rps, err)
		}
	}
	for _, rps := range []int{50, 7} { // set, then overwrite
		if err := store.SetTenantRate(ctx, "globex", rps); err != nil {
			t.Fatal(err)
		}
		if got, err := store.TenantRate(ctx, "globex"); err != nil || got != rps {
			t.Fatalf("TenantRate = %d, %v; want %d", got, err, rps)
		}
	}
	// Creating the tenant again keeps its rate (a separate item).
	if err := tenants.PutTenant(ctx, "globex", "Globex Corp"); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.TenantRate(ctx, "globex"); got != 7 {
		t.Fatalf("tenant create again changed the rate to %d", got)
	}
	for range 2 { // clearing twice is fine
		if err := store.ClearTenantRate(ctx, "globex"); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := store.TenantRate(ctx, "globex"); err != nil || got != 0 {
		t.Fatalf("TenantRate after clear = %d, %v; want 0", got, err)
	}
}

// TestLimiterInstancesShareTheTable runs two limiters, as two warm
// functions would, on one AuthTable: together they never let through more
// than the limit in a window, whether the tenant is on the default or its
// own rate, and other tenants and the other application are unaffected.
func TestLimiterInstancesShareTheTable(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	ctx := context.Background()
	if err := authtable.NewAuthStore(env.DynamoDB, env.AuthTable).PutTenant(ctx, "big", ""); err != nil {
		t.Fatal(err)
	}
	if err := authtable.NewRateStore(env.DynamoDB, env.AuthTable).SetTenantRate(ctx, "big", 120); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	calls := dynamo.NewCallCounter()
	instance := func() *ratelimit.Limiter {
		db := dynamodb.NewFromConfig(env.Config, calls.Options)
		return ratelimit.New(authtable.NewRateStore(db, env.AuthTable),
			ratelimit.Options{Rate: 40, RateTTL: time.Minute, Timeout: 30 * time.Second, Now: clk.Now})
	}
	a, b := instance(), instance()
	allowed := func(tenant string, app auth.App, requests int) int {
		n := 0
		for i := range requests {
			l := a
			if i%2 == 1 {
				l = b
			}
			wait, ok := l.Allow(ctx, tenant, app)
			switch {
			case ok:
				n++
			case wait != time.Second:
				t.Fatalf("refused with wait %v, want 1s (the next window)", wait)
			}
		}
		return n
	}

	if got := allowed("demo", auth.Wiki, 100); got != 40 {
		t.Fatalf("demo (default 40/s) on two instances: %d of 100 allowed in one window, want 40", got)
	}
	if n := calls.Count("UpdateItem"); n >= 40 {
		t.Fatalf("%d UpdateItem calls for 40 requests: leases do not amortize", n)
	}
	if got := allowed("big", auth.Wiki, 200); got != 120 {
		t.Fatalf("big (own rate 120/s): %d of 200 allowed, want 120", got)
	}
	if got := allowed("acme", auth.Wiki, 50); got != 40 {
		t.Fatalf("acme, while demo is refused: %d of 50 allowed, want 40", got)
	}
	if got := allowed("demo", auth.Tracker, 50); got != 40 {
		t.Fatalf("demo's tracker, while its wiki is refused: %d of 50 allowed, want 40", got)
	}
	clk.add(time.Second)
	if got := allowed("demo", auth.Wiki, 100); got != 40 {
		t.Fatalf("demo in the next window: %d of 100 allowed, want 40", got)
	}
}

// TestLimiterFailsOpen points a limiter at an address where nothing
// listens: every request is let through.
func TestLimiterFailsOpen(t *testing.T) {
	t.Parallel()
	env := testenv.AWS(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	db := dynamodb.NewFromConfig(env.Config, func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(dead)
		o.RetryMaxAttempts = 1
	})
	l := ratelimit.New(authtable.NewRateStore(db, env.AuthTable), ratelimit.Options{Rate: 1, Now: newClock().Now})
	for i := range 5 {
		if wait, ok := l.Allow(context.Background(), "demo", auth.Wiki); !ok {
			t.Fatalf("request %d refused (wait %v) with DynamoDB unreachable; the limiter must fail open", i, wait)
		}
	}
}
