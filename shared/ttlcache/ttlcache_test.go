package ttlcache_test

import (
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/ttlcache"
)

func TestCache(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	c := ttlcache.New[string, int](10*time.Second, 2)
	c.Now = func() time.Time { return now }
	if _, ok := c.Get("a"); ok {
		t.Fatal("empty cache answered")
	}
	c.Put("a", 1)
	now = now.Add(9 * time.Second)
	if v, ok := c.Get("a"); !ok || v != 1 {
		t.Errorf("within the TTL: %v %v, want 1", v, ok)
	}
	now = now.Add(time.Second)
	if _, ok := c.Get("a"); ok {
		t.Error("answered at the end of the TTL")
	}
	c.Put("a", 2)
	c.Put("b", 3)
	c.Put("c", 4) // past the bound: starts over
	if _, ok := c.Get("a"); ok {
		t.Error("kept more than its bound")
	}
	if v, ok := c.Get("c"); !ok || v != 4 {
		t.Errorf("c = %v %v", v, ok)
	}
	c.Delete("c")
	if _, ok := c.Get("c"); ok {
		t.Error("kept a deleted key")
	}
	off := ttlcache.New[string, int](0, 10)
	off.Put("a", 1)
	if _, ok := off.Get("a"); ok {
		t.Error("TTL 0 kept a value")
	}
}
