// Package ttlcache is the in-process cache of a warm function: answers
// kept for a fixed TTL from when they were read, the whole cache dropped
// when it reaches its bound. The token cache (auth.Authenticator) and the
// tenant settings cache (search.SettingsCache) share it, so both keep
// answers the same way, for the same AUTH_CACHE_TTL.
package ttlcache

import (
	"sync"
	"time"
)

// Cache maps keys to values for ttl each. It is safe for concurrent use.
type Cache[K comparable, V any] struct {
	ttl time.Duration
	max int
	// Now is the clock (time.Now when nil); tests replace it.
	Now func() time.Time

	mu sync.Mutex
	m  map[K]entry[V]
}

type entry[V any] struct {
	v       V
	expires time.Time
}

// New returns a cache keeping values for ttl (ttl ≤ 0: nothing is kept)
// and at most max keys: past max, it starts over empty.
func New[K comparable, V any](ttl time.Duration, max int) *Cache[K, V] {
	return &Cache[K, V]{ttl: ttl, max: max, m: map[K]entry[V]{}}
}

func (c *Cache[K, V]) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Get returns the value of k while it is fresh.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	now := c.now()
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if !ok || !now.Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Put keeps v for k for the TTL from now.
func (c *Cache[K, V]) Put(k K, v V) {
	if c.ttl <= 0 {
		return
	}
	expires := c.now().Add(c.ttl)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[k] = entry[V]{v: v, expires: expires}
}

// Delete forgets k.
func (c *Cache[K, V]) Delete(k K) {
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}
