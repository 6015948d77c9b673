package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/outbox"
)

// hangingTracker is a tracker that answers nothing until released (then
// 500 at once), counting the requests it holds.
type hangingTracker struct {
	*httptest.Server
	release  chan struct{}
	freeOnce sync.Once
	mu       sync.Mutex
	inflight int
	max      int
}

func newHangingTracker(t *testing.T) *hangingTracker {
	h := &hangingTracker{release: make(chan struct{})}
	h.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.inflight++
		h.max = max(h.max, h.inflight)
		h.mu.Unlock()
		defer func() { h.mu.Lock(); h.inflight--; h.mu.Unlock() }()
		select {
		case <-r.Context().Done():
		case <-h.release:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(h.Close)
	t.Cleanup(h.free) // runs first: frees the handlers
	return h
}

func (h *hangingTracker) free() { h.freeOnce.Do(func() { close(h.release) }) }

func (h *hangingTracker) held() (now, most int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.inflight, h.max
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
// another tenant's messages are all delivered while they hang (a run that
// served the hanging tenant first, or one tracker after another, would
// wait for them: the trackers are released only once the other tenant is
// served), and the hanging tenant holds at most TenantWorkers (4) workers
// at once (docs/integrations.md: trackers are served concurrently, each
// with its own deadline, at most four per tenant). No wall-clock bound:
// the trackers hang until the test releases them.
func TestSyncHangingTrackersCostOnlyTheirTenant(t *testing.T) {
	t.Parallel()
	for _, hanging := range []int{3, 6} {
		t.Run(fmt.Sprintf("%d hanging trackers", hanging), func(t *testing.T) {
			t.Parallel()
			f := newSyncFixture(t)
			var delivered atomic.Int64
			fast := newAnswerServer(t, func(batch []Message) (int, string, string) {
				delivered.Add(int64(len(batch)))
				return okAnswer(batch)
			})
			hang := newHangingTracker(t)
			deps := f.deps()
			deps.Tracker = &HTTPTracker{Client: &http.Client{Timeout: 2 * time.Minute}}
			f.sync = NewSync(deps, SyncOptions{})
			// The slow tenant's envelopes are published first, so that a
			// sequential run would serve them before the fast tenant.
			var stuck [][]*outbox.Message
			for i := range hanging {
				stuck = append(stuck, f.addIntegration(t, "slow", fmt.Sprintf("hang-%d", i), hang.URL, 5))
			}
			msgs := f.addIntegration(t, "fast", "jira-9", fast.URL, 150)

			type result struct {
				rep Report
				err error
			}
			done := make(chan result, 1)
			go func() {
				rep, err := f.sync.Run(context.Background())
				done <- result{rep, err}
			}()
			// Release the hanging trackers once the fast tenant is served and
			// the slow one holds all the workers it may.
			workers := min(hanging, 4)
			served := false
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				now, _ := hang.held()
				if served = delivered.Load() == 150; served && now == workers {
					break
				}
			}
			_, heldAtRelease := hang.held()
			hang.free()
			res := <-done
			if res.err != nil {
				t.Fatalf("Run: %v", res.err)
			}
			if !served {
				t.Fatalf("the fast tenant got %d of its 150 messages while the slow tenant's trackers hung", delivered.Load())
			}
			if _, most := hang.held(); most != workers || heldAtRelease != workers {
				t.Fatalf("the slow tenant held %d requests at once (%d when released), want %d", most, heldAtRelease, workers)
			}
			for _, m := range msgs {
				if got := f.outbox.get("fast", "jira-9", m.ID); got.State != outbox.Done {
					t.Fatalf("fast message %s is %s", m.ID, got.State)
				}
			}
			if rep := res.rep; rep.Failed != hanging || rep.Delivered != 150 || rep.Mails != hanging {
				t.Fatalf("report %+v", rep)
			}
			for i, ms := range stuck {
				got := f.outbox.get("slow", fmt.Sprintf("hang-%d", i), ms[0].ID)
				if got.State != outbox.New || got.LastResponse == "" {
					t.Fatalf("hanging tracker %d: message %s %q", i, got.State, got.LastResponse)
				}
			}
		})
	}
}
