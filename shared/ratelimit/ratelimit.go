// Package ratelimit limits how many requests a tenant makes to one
// application (the wiki API or the tracker API) per second, across every
// instance of every function that serves that application.
//
// The count lives in a shared Store (the AuthTable): one counter per
// tenant, application and one-second window. An instance does not ask the
// store on every request: it leases a slice of the window's budget with
// one call and answers requests from that slice until it is used up; when
// the store has nothing left to lease, the tenant's requests to that
// application are refused until the next window. The store never grants
// more than the limit in a window, however many instances ask, so the
// limit holds for the service as a whole, not per instance.
//
// The limiter fails open: when the store cannot be reached, requests are
// let through and a warning is logged. A throttle must not take the
// service down.
package ratelimit

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/reqtrace/reqtrace/shared/auth"
)

// WindowLength is the length of a counting window. A tenant's limit is
// its rate times WindowLength requests per window.
const WindowLength = time.Second

// MaxRate is the highest rate a tenant may be given, in requests per
// second: a bound against typing mistakes, not a capacity figure.
const MaxRate = 100_000

// leaseShare is the most an instance leases at once: a twentieth of the
// window's budget (at least one request). Bigger slices mean fewer store
// calls but more of the budget held by instances that may not use it.
const leaseShare = 20

// DefaultTimeout bounds each store call when Options.Timeout is zero.
const DefaultTimeout = 500 * time.Millisecond

// maxKeys bounds the tenants (and tenant-application pairs) an instance
// remembers; past it, forgotten entries are only read again.
const maxKeys = 10000

// Window names one counter: the requests of Tenant to App in the window
// that starts at Start (a multiple of WindowLength since the Unix epoch).
type Window struct {
	Tenant string
	App    auth.App
	Start  time.Time
}

// Store keeps the shared counts and the tenants' own rates.
type Store interface {
	// Take counts n more requests in w and answers how many of them fit
	// under limit: n while the count stays within it, what was left
	// (possibly 0) once it passes it. Over every caller together it never
	// grants more than limit for one window.
	Take(ctx context.Context, w Window, n, limit int) (granted int, err error)
	// TenantRate returns the tenant's own rate in requests per second, or
	// 0 when it has none and the default applies.
	TenantRate(ctx context.Context, tenant string) (int, error)
}

// ValidRate reports whether rps (requests per second) may be a tenant's
// rate: 1 to MaxRate.
func ValidRate(rps int) bool { return rps >= 1 && rps <= MaxRate }

// Options configure a Limiter.
type Options struct {
	// Rate is the default requests per second of a tenant to one
	// application (TENANT_RATE). It must be at least 1.
	Rate int
	// RateTTL is how long an instance keeps a tenant's rate before reading
	// it from the store again (AUTH_CACHE_TTL): how long a changed rate
	// takes to apply everywhere.
	RateTTL time.Duration
	// Timeout bounds each store call (DefaultTimeout when zero); a call
	// that takes longer fails open.
	Timeout time.Duration
	// Now is the clock (time.Now when nil); tests move it by hand.
	Now func() time.Time
}

// Limiter decides, per request, whether a tenant is within its rate. It
// is safe for concurrent use; one Limiter serves a whole instance.
type Limiter struct {
	store   Store
	rate    int
	rateTTL time.Duration
	timeout time.Duration
	now     func() time.Time

	mu      sync.Mutex
	budgets map[budgetKey]*budget
	rates   map[string]rateEntry
}

type budgetKey struct {
	tenant string
	app    auth.App
}

// budget is what one instance knows of one tenant-application counter in
// the current window.
type budget struct {
	mu    sync.Mutex
	start time.Time // the window the fields below describe
	left  int       // leased from the store, not used yet
	used  int       // requests this instance let through in the window
	lease int       // size of the last lease asked for in the window; 0: none yet
	spent bool      // the store has no more to lease: refuse until the next window
	open  bool      // the store failed in this window: let requests through until the next
	prev  int       // requests this instance let through in the window before
}

type rateEntry struct {
	rps     int
	known   bool // false: the store failed; fail open until expires
	expires time.Time
}

// New returns a Limiter on store.
func New(store Store, o Options) *Limiter {
	l := &Limiter{store: store, rate: max(o.Rate, 1), rateTTL: o.RateTTL, timeout: o.Timeout, now: o.Now,
		budgets: map[budgetKey]*budget{}, rates: map[string]rateEntry{}}
	if l.timeout <= 0 {
		l.timeout = DefaultTimeout
	}
	if l.now == nil {
		l.now = time.Now
	}
	return l
}

// Allow counts one request of tenant to app. It answers false, with how
// long to wait (the time to the next window, at least a second), when the
// tenant has used up its rate for the current window.
func (l *Limiter) Allow(ctx context.Context, tenant string, app auth.App) (wait time.Duration, ok bool) {
	limit, known := l.limit(ctx, tenant)
	if !known {
		return 0, true
	}
	b := l.budget(budgetKey{tenant, app})
	b.mu.Lock()
	defer b.mu.Unlock()
	// The clock is read under the lock: a request that waited for another
	// one's lease must not roll the budget back to an older window.
	now := l.now()
	start := now.Truncate(WindowLength)
	b.roll(start)
	switch {
	case b.left > 0:
		b.left--
		b.used++
		return 0, true
	case b.open:
		b.used++
		return 0, true
	case b.spent:
		return retryAfter(now, start), false
	}
	n := b.nextLease(limit)
	got, err := l.take(ctx, Window{Tenant: tenant, App: app, Start: start}, n, limit)
	if err != nil {
		slog.WarnContext(ctx, "rate limit: the shared count failed; letting this tenant's requests through until the next window",
			"app", string(app), "error", err.Error())
		b.open = true
		b.used++
		return 0, true
	}
	b.lease = n
	if got < n {
		b.spent = true // the store gave what was left
	}
	if got <= 0 {
		return retryAfter(now, start), false
	}
	b.left = got - 1
	b.used++
	return 0, true
}

// take asks the store for a lease. A client that goes away must not leave
// the instance failing open, so the call keeps its own deadline only.
func (l *Limiter) take(ctx context.Context, w Window, n, limit int) (int, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
	defer cancel()
	return l.store.Take(ctx, w, n, limit)
}

// limit returns the tenant's requests per window, from the cache when it
// is fresh; known is false when the store failed (fail open for a second,
// then ask again).
func (l *Limiter) limit(ctx context.Context, tenant string) (limit int, known bool) {
	now := l.now()
	l.mu.Lock()
	e, ok := l.rates[tenant]
	l.mu.Unlock()
	if ok && now.Before(e.expires) {
		return perWindow(e.rps), e.known
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.timeout)
	rps, err := l.store.TenantRate(sctx, tenant)
	cancel()
	e = rateEntry{rps: l.rate, known: true, expires: now.Add(l.rateTTL)}
	switch {
	case err != nil:
		slog.WarnContext(ctx, "rate limit: the tenant's rate could not be read; letting its requests through for a second", "error", err.Error())
		e = rateEntry{expires: now.Add(WindowLength)}
	case rps > 0:
		e.rps = rps
	}
	l.mu.Lock()
	if len(l.rates) >= maxKeys {
		clear(l.rates)
	}
	l.rates[tenant] = e
	l.mu.Unlock()
	return perWindow(e.rps), e.known
}

func perWindow(rps int) int { return max(1, rps*int(WindowLength/time.Second)) }

// budget returns the instance's budget for k, creating it.
func (l *Limiter) budget(k budgetKey) *budget {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.budgets[k]
	if !ok {
		if len(l.budgets) >= maxKeys {
			// Forget the budgets of earlier windows: their leases are
			// worthless now.
			current := l.now().Truncate(WindowLength)
			for k, old := range l.budgets {
				if old.mu.TryLock() {
					if old.start.Before(current) {
						delete(l.budgets, k)
					}
					old.mu.Unlock()
				}
			}
		}
		b = &budget{}
		l.budgets[k] = b
	}
	return b
}

// roll starts a new window: the lease left from the previous one is
// worthless (its window's count is closed).
func (b *budget) roll(start time.Time) {
	if b.start.Equal(start) {
		return
	}
	b.prev = 0
	if b.start.Add(WindowLength).Equal(start) {
		b.prev = b.used
	}
	b.start, b.left, b.used, b.lease, b.spent, b.open = start, 0, 0, 0, false, false
}

// nextLease sizes the next lease: the first of a window asks for what this
// instance used in the previous window, later ones double the last; never
// more than a twentieth of the limit, never less than one. An instance
// that serves few requests thus holds little of the budget, and one that
// serves many asks rarely.
func (b *budget) nextLease(limit int) int {
	n := 2 * b.lease
	if b.lease == 0 {
		n = b.prev
	}
	return min(max(n, 1), max(1, limit/leaseShare))
}

// retryAfter is the time to the next window, at least a second (the unit
// of Retry-After).
func retryAfter(now, start time.Time) time.Duration {
	return max(start.Add(WindowLength).Sub(now), time.Second)
}
