package ratelimit_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/ratelimit"
)

// fakeStore counts like the AuthTable does (every Take adds n; the grant
// is what was left before it, at most n) and records the calls. The
// DynamoDB store is tested against the same properties in
// shared/dynamo/authtable.
type fakeStore struct {
	mu      sync.Mutex
	counts  map[ratelimit.Window]int
	rates   map[string]int
	leases  []int // n of every Take, in order
	reads   int   // TenantRate calls
	takeErr error
	rateErr error
}

func newFakeStore() *fakeStore {
	return &fakeStore{counts: map[ratelimit.Window]int{}, rates: map[string]int{}}
}

func (f *fakeStore) Take(_ context.Context, w ratelimit.Window, n, limit int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leases = append(f.leases, n)
	if f.takeErr != nil {
		return 0, f.takeErr
	}
	w.Start = w.Start.UTC()
	before := f.counts[w]
	f.counts[w] += n
	return min(n, max(0, limit-before)), nil
}

func (f *fakeStore) TenantRate(_ context.Context, tenant string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.rateErr != nil {
		return 0, f.rateErr
	}
	return f.rates[tenant], nil
}

func (f *fakeStore) takes() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.leases)
}

// clock is a hand-moved clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Unix(1_700_000_000, 0)} }

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

// allowN sends n requests and returns how many were let through.
func allowN(t *testing.T, l *ratelimit.Limiter, n int, tenant string, app auth.App) int {
	t.Helper()
	ok := 0
	for range n {
		if _, allowed := l.Allow(context.Background(), tenant, app); allowed {
			ok++
		}
	}
	return ok
}

func TestLeasesAmortizeStoreCalls(t *testing.T) {
	t.Parallel()
	store, clk := newFakeStore(), newClock()
	l := ratelimit.New(store, ratelimit.Options{Rate: 200, RateTTL: time.Minute, Now: clk.Now})

	if got := allowN(t, l, 200, "demo", auth.Wiki); got != 200 {
		t.Fatalf("%d of 200 requests allowed within the rate", got)
	}
	// Leases start at 1 and double up to a twentieth of the limit (10):
	// 1+2+4+8 = 15, then 18 leases of 10 (195), then one of 10 that the
	// store grants only 5 of: the window is spent.
	want := []int{1, 2, 4, 8}
	for range 19 {
		want = append(want, 10)
	}
	if !slices.Equal(store.leases, want) {
		t.Fatalf("leases %v, want %v", store.leases, want)
	}
	wait, ok := l.Allow(context.Background(), "demo", auth.Wiki)
	if ok || wait != time.Second {
		t.Fatalf("request 201 allowed=%v wait=%v, want refused for 1s", ok, wait)
	}
	if n := store.takes(); n != len(want) {
		t.Fatalf("a refusal in a spent window asked the store again (%d calls)", n)
	}

	// The next window starts with a lease as large as the last window's
	// use allows.
	clk.add(time.Second)
	if _, ok := l.Allow(context.Background(), "demo", auth.Wiki); !ok {
		t.Fatal("refused in a fresh window")
	}
	if last := store.leases[len(store.leases)-1]; last != 10 {
		t.Fatalf("first lease after a busy window = %d, want 10", last)
	}
	// After an idle window, it starts small again.
	clk.add(2 * time.Second)
	l.Allow(context.Background(), "demo", auth.Wiki)
	if last := store.leases[len(store.leases)-1]; last != 1 {
		t.Fatalf("first lease after an idle window = %d, want 1", last)
	}
	if store.reads != 1 {
		t.Fatalf("the tenant's rate was read %d times within its cache time, want 1", store.reads)
	}
}

func TestRetryAfterIsTheNextWindow(t *testing.T) {
	t.Parallel()
	store, clk := newFakeStore(), newClock()
	l := ratelimit.New(store, ratelimit.Options{Rate: 1, Now: clk.Now})
	if _, ok := l.Allow(context.Background(), "demo", auth.Wiki); !ok {
		t.Fatal("first request refused")
	}
	for _, into := range []time.Duration{0, 10 * time.Millisecond, 999 * time.Millisecond} {
		c := &clock{now: clk.Now().Add(into)}
		l2 := ratelimit.New(store, ratelimit.Options{Rate: 1, Now: c.Now})
		wait, ok := l2.Allow(context.Background(), "demo", auth.Wiki)
		if ok || wait != time.Second {
			t.Errorf("%v into the window: allowed=%v wait=%v, want refused for 1s", into, ok, wait)
		}
	}
}

func TestInstancesShareTheLimit(t *testing.T) {
	t.Parallel()
	store, clk := newFakeStore(), newClock()
	a := ratelimit.New(store, ratelimit.Options{Rate: 100, Now: clk.Now})
	b := ratelimit.New(store, ratelimit.Options{Rate: 100, Now: clk.Now})
	total := 0
	for range 150 {
		total += allowN(t, a, 1, "demo", auth.Wiki) + allowN(t, b, 1, "demo", auth.Wiki)
	}
	if total != 100 {
		t.Fatalf("two instances let %d requests through in one window, want exactly the limit 100", total)
	}
	if n := store.takes(); n >= 100 {
		t.Fatalf("%d store calls for 100 requests: leases do not amortize", n)
	}
}

func TestTenantsAndApplicationsAreSeparate(t *testing.T) {
	t.Parallel()
	store, clk := newFakeStore(), newClock()
	l := ratelimit.New(store, ratelimit.Options{Rate: 3, Now: clk.Now})
	if got := allowN(t, l, 5, "demo", auth.Wiki); got != 3 {
		t.Fatalf("demo wiki: %d allowed, want 3", got)
	}
	if got := allowN(t, l, 5, "acme", auth.Wiki); got != 3 {
		t.Fatalf("acme wiki, after demo was refused: %d allowed, want 3", got)
	}
	if got := allowN(t, l, 5, "demo", auth.Tracker); got != 3 {
		t.Fatalf("demo tracker, after demo wiki was refused: %d allowed, want 3", got)
	}
}

func TestTenantRateOverrideIsCached(t *testing.T) {
	t.Parallel()
	store, clk := newFakeStore(), newClock()
	store.rates["big"] = 40
	l := ratelimit.New(store, ratelimit.Options{Rate: 4, RateTTL: 30 * time.Second, Now: clk.Now})
	if got := allowN(t, l, 50, "big", auth.Wiki); got != 40 {
		t.Fatalf("tenant with rate 40: %d allowed, want 40", got)
	}
	if got := allowN(t, l, 50, "small", auth.Wiki); got != 4 {
		t.Fatalf("tenant on the default: %d allowed, want 4", got)
	}
	// Cleared in the store: the instance keeps the cached rate for
	// RateTTL, then reads the default.
	store.mu.Lock()
	delete(store.rates, "big")
	store.mu.Unlock()
	clk.add(29 * time.Second)
	if got := allowN(t, l, 50, "big", auth.Wiki); got != 40 {
		t.Fatalf("within the cache time: %d allowed, want the cached 40", got)
	}
	clk.add(time.Second)
	if got := allowN(t, l, 50, "big", auth.Wiki); got != 4 {
		t.Fatalf("after the cache time: %d allowed, want the default 4", got)
	}
}

func TestFailsOpen(t *testing.T) {
	t.Parallel()
	store, clk := newFakeStore(), newClock()
	store.takeErr = errors.New("dynamodb: connection refused")
	l := ratelimit.New(store, ratelimit.Options{Rate: 2, Now: clk.Now})
	if got := allowN(t, l, 10, "demo", auth.Wiki); got != 10 {
		t.Fatalf("store failing: %d of 10 allowed, want all", got)
	}
	if n := store.takes(); n != 1 {
		t.Fatalf("%d store calls in one failing window, want 1 (then open until the next window)", n)
	}
	// The next window asks again; the store is back and the limit holds.
	store.mu.Lock()
	store.takeErr = nil
	store.mu.Unlock()
	clk.add(time.Second)
	if got := allowN(t, l, 10, "demo", auth.Wiki); got != 2 {
		t.Fatalf("store back: %d of 10 allowed, want 2", got)
	}

	// A rate that cannot be read fails open too, and is read again a
	// second later.
	store2, clk2 := newFakeStore(), newClock()
	store2.rateErr = errors.New("dynamodb: timeout")
	l2 := ratelimit.New(store2, ratelimit.Options{Rate: 2, RateTTL: time.Hour, Now: clk2.Now})
	if got := allowN(t, l2, 10, "demo", auth.Wiki); got != 10 {
		t.Fatalf("rate unreadable: %d of 10 allowed, want all", got)
	}
	if store2.reads != 1 || store2.takes() != 0 {
		t.Fatalf("rate unreadable: %d reads, %d takes in one second, want 1 and 0", store2.reads, store2.takes())
	}
	store2.mu.Lock()
	store2.rateErr = nil
	store2.mu.Unlock()
	clk2.add(time.Second)
	if got := allowN(t, l2, 10, "demo", auth.Wiki); got != 2 {
		t.Fatalf("rate readable again: %d of 10 allowed, want 2", got)
	}
}

// slowStore blocks Take until its context ends.
type slowStore struct{ *fakeStore }

func (s slowStore) Take(ctx context.Context, _ ratelimit.Window, _, _ int) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func TestSlowStoreFailsOpenAfterTimeout(t *testing.T) {
	t.Parallel()
	l := ratelimit.New(slowStore{newFakeStore()}, ratelimit.Options{Rate: 1, Timeout: time.Millisecond})
	if _, ok := l.Allow(context.Background(), "demo", auth.Wiki); !ok {
		t.Fatal("a store call past its timeout refused the request")
	}
}

func TestConcurrentRequestsNeverExceed(t *testing.T) {
	t.Parallel()
	store, clk := newFakeStore(), newClock()
	limiters := []*ratelimit.Limiter{
		ratelimit.New(store, ratelimit.Options{Rate: 60, Now: clk.Now}),
		ratelimit.New(store, ratelimit.Options{Rate: 60, Now: clk.Now}),
		ratelimit.New(store, ratelimit.Options{Rate: 60, Now: clk.Now}),
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		allowed int
	)
	for i := range 30 {
		wg.Go(func() {
			n := allowN(t, limiters[i%len(limiters)], 10, "demo", auth.Wiki)
			mu.Lock()
			allowed += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if allowed != 60 {
		t.Fatalf("300 concurrent requests on three instances: %d allowed, want exactly 60", allowed)
	}
}

func TestValidRate(t *testing.T) {
	t.Parallel()
	for rps, want := range map[int]bool{-1: false, 0: false, 1: true, 200: true, ratelimit.MaxRate: true, ratelimit.MaxRate + 1: false} {
		if got := ratelimit.ValidRate(rps); got != want {
			t.Errorf("ValidRate(%d) = %v, want %v", rps, got, want)
		}
	}
}
