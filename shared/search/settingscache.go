package search

import (
	"context"
	"sync"
	"time"
)

// SettingsCache is a Settings that remembers each tenant's answer for a
// TTL, with the semantics of the token cache of auth.Authenticator (the
// function's AUTH_CACHE_TTL): a warm function reads a tenant's settings
// once per TTL instead of once per tenant-wide search, and a change an
// admin makes (in another function) is seen by every search within the
// TTL. Errors are not cached. It is safe for concurrent use.
type SettingsCache struct {
	settings Settings
	ttl      time.Duration
	// Now is the clock (time.Now when nil); tests replace it.
	Now func() time.Time

	mu    sync.Mutex
	cache map[string]cachedSettings
}

type cachedSettings struct {
	isolate bool
	expires time.Time
}

// maxCachedTenants bounds the cache: past it, the cache starts over, as
// the token cache does.
const maxCachedTenants = 10000

var _ Settings = (*SettingsCache)(nil)

// NewSettingsCache returns a SettingsCache on settings keeping answers for
// ttl; a ttl ≤ 0 caches nothing.
func NewSettingsCache(settings Settings, ttl time.Duration) *SettingsCache {
	return &SettingsCache{settings: settings, ttl: ttl, cache: map[string]cachedSettings{}}
}

func (c *SettingsCache) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// IsolateSpaces implements Settings: the cached answer while it is fresh,
// else the wrapped Settings' answer. Errors: those of the wrapped Settings.
func (c *SettingsCache) IsolateSpaces(ctx context.Context, tenant string) (bool, error) {
	now := c.now()
	c.mu.Lock()
	got, ok := c.cache[tenant]
	c.mu.Unlock()
	if ok && now.Before(got.expires) {
		return got.isolate, nil
	}
	isolate, err := c.settings.IsolateSpaces(ctx, tenant)
	if err != nil || c.ttl <= 0 {
		return isolate, err
	}
	c.mu.Lock()
	if len(c.cache) >= maxCachedTenants {
		clear(c.cache)
	}
	c.cache[tenant] = cachedSettings{isolate: isolate, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return isolate, nil
}
