package search_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
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

// gatedSettings answers IsolateSpaces only once ready returns true (or
// fails after a while), as a settings read slower than the search's own.
type gatedSettings struct {
	isolate bool
	err     error
	ready   func() bool
}

func (g *gatedSettings) IsolateSpaces(ctx context.Context, _ string) (bool, error) {
	for deadline := time.Now().Add(20 * time.Second); !g.ready(); {
		if time.Now().After(deadline) {
			return false, errors.New("the search never read while the settings were being read")
		}
		time.Sleep(time.Millisecond)
	}
	return g.isolate, g.err
}

// TestSettingsReadAlongsideTheSearch: a search without spaceKey whose
// tenant's setting is not cached reads the setting while it runs
// tenant-wide (its Query starts before the setting is known); when the
// setting turns out on, the tenant-wide run is dropped and the answer is
// the path's space's; a failed settings read fails the search.
func TestSettingsReadAlongsideTheSearch(t *testing.T) {
	t.Parallel()
	s := smallStack(t)
	searched := func() bool { return s.calls.Count("Query") > 0 }
	ask := func(settings search.Settings, path string) (*search.Result, error) {
		s.reset()
		svc := search.New(search.Deps{Store: s.store, Settings: settings})
		return svc.Search(context.Background(), search.Request{Tenant: "demo", PathSpace: path, Query: mustParse(t, "key ~ 'REQ-%'")})
	}
	res, err := ask(&gatedSettings{ready: searched}, "B")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(names(res.Requirements)); got != "[A/REQ-1@0 B/REQ-1@0 A/REQ-2@0]" {
		t.Fatalf("setting off: %s", got)
	}
	// On: whatever the tenant-wide run read (it may have ended), the
	// answer is B's, read again in B.
	res, err = ask(&gatedSettings{isolate: true, ready: searched}, "B")
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(names(res.Requirements)); got != "[B/REQ-1@0]" {
		t.Fatalf("setting on: %s", got)
	}
	if _, err := ask(&gatedSettings{isolate: true, ready: searched}, "A/B"); !errors.Is(err, apperr.ErrInvalid) {
		t.Fatalf("setting on, invalid path space: %v", err)
	}
	boom := errors.New("settings unavailable")
	if _, err := ask(&gatedSettings{err: boom, ready: searched}, "B"); !errors.Is(err, boom) {
		t.Fatalf("failed settings read: %v", err)
	}
	// A cached setting is not read again, and nothing runs ahead of it.
	cache := search.NewSettingsCache(&gatedSettings{isolate: true, ready: func() bool { return true }}, time.Minute)
	if _, err := cache.IsolateSpaces(context.Background(), "demo"); err != nil {
		t.Fatal(err)
	}
	res, err = ask(cache, "B")
	if err != nil || fmt.Sprint(names(res.Requirements)) != "[B/REQ-1@0]" || s.calls.Count("Query") != 1 {
		t.Fatalf("cached on: %v %v, calls %v", res, err, s.calls.Counts())
	}
}
