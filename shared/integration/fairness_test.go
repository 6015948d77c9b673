package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/outbox"
)

// newHangingTracker is a tracker that never answers (until the client
// gives up or the test ends).
func newHangingTracker(t *testing.T) *httptest.Server {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		case <-time.After(30 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first: frees the handlers
	return srv
}

// addIntegration creates tenant/serviceID at url with n published NEW
// messages.
func (f *syncFixture) addIntegration(t *testing.T, tenant, serviceID, url string, n int) []*outbox.Message {
	t.Helper()
	ctx := context.Background()
	d := &Descriptor{ServiceID: serviceID, RPCURL: url, Version: 4, Token: "tok", SendErrorsToEmail: "ops@example.com", SendErrorsToEmailThrottle: 60}
	d.Normalize()
	if err := f.store.Create(ctx, tenant, d); err != nil {
		t.Fatal(err)
	}
	msgs := make([]*outbox.Message, n)
	now := f.clock.Now()
	for i := range msgs {
		msgs[i] = &outbox.Message{ID: outbox.NewID(now.Add(time.Duration(i))), ServiceID: serviceID, State: outbox.New, CreatedAt: now,
			Type: outbox.Updated, SpaceKey: "DEMO", Key: fmt.Sprintf("REQ-%d", i)}
	}
	f.outbox.put(tenant, msgs...)
	if err := f.pub.Publish(ctx, tenant, msgs); err != nil {
		t.Fatal(err)
	}
	return msgs
}

// TestSyncHangingTrackersCostOnlyTheirTenant: one tenant's trackers hang;
// another tenant's messages are delivered at once, and the run takes about
// one tracker timeout, not one per hanging tracker (docs/integrations.md: trackers
// are served concurrently, each with its own deadline). With more hanging
// trackers than a tenant may hold workers, the other tenant is still
// served at once.
func TestSyncHangingTrackersCostOnlyTheirTenant(t *testing.T) {
	t.Parallel()
	const timeout = 500 * time.Millisecond
	for _, hanging := range []int{3, 6} {
		t.Run(fmt.Sprintf("%d hanging trackers", hanging), func(t *testing.T) {
			t.Parallel()
			f := newSyncFixture(t)
			var mu sync.Mutex
			var deliveredAt time.Time
			fast := newAnswerServer(t, func(batch []Message) (int, string, string) {
				mu.Lock()
				if deliveredAt.IsZero() {
					deliveredAt = time.Now()
				}
				mu.Unlock()
				return okAnswer(batch)
			})
			hang := newHangingTracker(t)
			deps := f.deps()
			deps.Tracker = &HTTPTracker{Client: &http.Client{Timeout: timeout}}
			f.sync = NewSync(deps, SyncOptions{})
			// The slow tenant's envelopes are published first, so that a
			// sequential run would serve them before the fast tenant.
			var stuck [][]*outbox.Message
			for i := range hanging {
				stuck = append(stuck, f.addIntegration(t, "slow", fmt.Sprintf("hang-%d", i), hang.URL, 5))
			}
			msgs := f.addIntegration(t, "fast", "jira-9", fast.URL, 150)

			start := time.Now()
			rep, err := f.sync.Run(context.Background())
			took := time.Since(start)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			mu.Lock()
			fastAfter := deliveredAt.Sub(start)
			mu.Unlock()
			if deliveredAt.IsZero() || fastAfter > timeout {
				t.Fatalf("the fast tenant was served %v after the start (timeout %v)", fastAfter, timeout)
			}
			for _, m := range msgs {
				if got := f.outbox.get("fast", "jira-9", m.ID); got.State != outbox.Done {
					t.Fatalf("fast message %s is %s", m.ID, got.State)
				}
			}
			// Each tenant may use at most TenantWorkers (4) workers: 3 hanging
			// trackers take one timeout, 6 take two; served one after
			// another they would take 3 and 6.
			rounds := (hanging + 3) / 4
			if limit := time.Duration(rounds)*timeout + timeout/2; took > limit {
				t.Fatalf("the run took %v, want at most %v (%d hanging trackers, timeout %v)", took, limit, hanging, timeout)
			}
			if rep.Failed != hanging || rep.Delivered != 150 || rep.Mails != hanging {
				t.Fatalf("report %+v", rep)
			}
			for i, ms := range stuck {
				got := f.outbox.get("slow", fmt.Sprintf("hang-%d", i), ms[0].ID)
				if got.State != outbox.New || got.LastResponse == "" {
					t.Fatalf("hanging tracker %d: message %s %q", i, got.State, got.LastResponse)
				}
			}
			t.Logf("%d hanging trackers: run %v, fast tenant served after %v", hanging, took.Round(time.Millisecond), fastAfter.Round(time.Millisecond))
		})
	}
}
