package search

import (
	"context"
	"time"

	"github.com/reqtrace/reqtrace/shared/ttlcache"
)

// SettingsCache is a Settings that remembers each tenant's answer for a
// TTL in the cache the token cache of auth.Authenticator uses (the
// function's AUTH_CACHE_TTL): a warm function reads a tenant's settings
// once per TTL instead of once per tenant-wide search, and a change an
// admin makes (in another function) is seen by every search within the
// TTL. Errors are not cached. It is safe for concurrent use.
type SettingsCache struct {
	settings Settings
	// Cache holds the answers; tests set its clock (Cache.Now).
	Cache *ttlcache.Cache[string, bool]
}

// maxCachedTenants bounds the cache: past it, the cache starts over, as
// the token cache does.
const maxCachedTenants = 10000

var _ Settings = (*SettingsCache)(nil)

// NewSettingsCache returns a SettingsCache on settings keeping answers for
// ttl; a ttl ≤ 0 caches nothing.
func NewSettingsCache(settings Settings, ttl time.Duration) *SettingsCache {
	return &SettingsCache{settings: settings, Cache: ttlcache.New[string, bool](ttl, maxCachedTenants)}
}

// IsolateSpaces implements Settings: the cached answer while it is fresh,
// else the wrapped Settings' answer. Errors: those of the wrapped Settings.
func (c *SettingsCache) IsolateSpaces(ctx context.Context, tenant string) (bool, error) {
	if isolate, ok := c.Cache.Get(tenant); ok {
		return isolate, nil
	}
	isolate, err := c.settings.IsolateSpaces(ctx, tenant)
	if err != nil {
		return isolate, err
	}
	c.Cache.Put(tenant, isolate)
	return isolate, nil
}
