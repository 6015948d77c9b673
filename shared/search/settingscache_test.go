package search_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/search"
)

// countingSettings answers IsolateSpaces from a map and counts the reads.
type countingSettings struct {
	isolate map[string]bool
	err     error
	reads   int
}

func (s *countingSettings) IsolateSpaces(_ context.Context, tenant string) (bool, error) {
	s.reads++
	return s.isolate[tenant], s.err
}

func TestSettingsCache(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := &countingSettings{isolate: map[string]bool{"demo": true}}
	now := time.Unix(1_700_000_000, 0)
	c := search.NewSettingsCache(src, 30*time.Second)
	c.Cache.Now = func() time.Time { return now }
	ask := func(tenant string, want bool) {
		t.Helper()
		got, err := c.IsolateSpaces(ctx, tenant)
		if err != nil || got != want {
			t.Fatalf("IsolateSpaces(%s) = %v, %v; want %v", tenant, got, err, want)
		}
	}
	for range 5 {
		ask("demo", true)
	}
	if src.reads != 1 {
		t.Errorf("5 searches of one tenant within the TTL read the settings %d times, want 1", src.reads)
	}
	ask("acme", false)
	if src.reads != 2 {
		t.Errorf("another tenant: %d reads, want 2", src.reads)
	}
	// An admin turns isolation off: seen within the TTL, not before it ends.
	src.isolate["demo"] = false
	now = now.Add(29 * time.Second)
	ask("demo", true)
	now = now.Add(2 * time.Second)
	ask("demo", false)
	if src.reads != 3 {
		t.Errorf("after the TTL: %d reads, want 3", src.reads)
	}
}

func TestSettingsCacheKeepsNoErrorsAndNoZeroTTL(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := &countingSettings{err: errors.New("throttled")}
	c := search.NewSettingsCache(src, time.Minute)
	for range 2 {
		if _, err := c.IsolateSpaces(ctx, "demo"); !errors.Is(err, src.err) {
			t.Fatalf("err = %v, want the store's", err)
		}
	}
	if src.reads != 2 {
		t.Errorf("errors cached: %d reads, want 2", src.reads)
	}
	src.err = nil
	off := search.NewSettingsCache(src, 0)
	for range 2 {
		if _, err := off.IsolateSpaces(ctx, "demo"); err != nil {
			t.Fatal(err)
		}
	}
	if src.reads != 4 {
		t.Errorf("TTL 0 cached: %d reads, want 4", src.reads)
	}
}

// Tenant-wide searches through the cache read the tenant's settings item
// once per TTL, not once a search (GetItem counted on DynamoDB Local).
func TestSettingsCacheSavesTheSettingsRead(t *testing.T) {
	t.Parallel()
	s := smallStack(t)
	s.isolate(t, "demo", false)
	cached := search.New(search.Deps{Store: s.store, Settings: search.NewSettingsCache(s.store, time.Minute)})
	for _, tt := range []struct {
		name string
		svc  *search.Service
		want int
	}{{"uncached", s.svc, 3}, {"cached", cached, 1}} {
		s.reset()
		for range 3 {
			if _, err := tt.svc.Search(context.Background(), search.Request{Tenant: "demo", PathSpace: "A",
				Query: mustParse(t, "key ~ 'REQ-%'")}); err != nil {
				t.Fatal(err)
			}
		}
		if got := s.calls.Count("GetItem"); got != tt.want {
			t.Errorf("%s: 3 tenant-wide searches made %d GetItem (settings reads), want %d", tt.name, got, tt.want)
		}
	}
}
