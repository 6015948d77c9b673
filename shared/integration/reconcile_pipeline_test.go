package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// pipeStore is a ReconcileStore whose rows are n ACTIVE requirements linked
// to the integration and whose AddMessages takes a while; pipeQueue and
// pipeMarker are the publisher's queue and marker. Together they record
// what was in flight at once.
type pipeStore struct {
	ReconcileStore
	n       int
	failAt  int // the AddMessages call (1-based) that fails; 0: none
	mu      sync.Mutex
	calls   int
	writing int // AddMessages in flight
	maxW    int
	overlap bool // a write ran while a publish did
	pub     *pipeQueue
	log     []string
}

func (s *pipeStore) PageLinked(ctx context.Context, tenant, serviceID string, fn func([]*requirement.Requirement) error) error {
	for start := 0; start < s.n; start += 100 {
		var rows []*requirement.Requirement
		for i := start; i < min(start+100, s.n); i++ {
			rows = append(rows, &requirement.Requirement{SpaceKey: "DEMO", Key: fmt.Sprintf("REQ-%05d", i), Status: requirement.Active,
				Issues: []requirement.IssueLink{{ServiceID: serviceID, IssueKey: "PROJ-1", Relationship: "implements"}}})
		}
		if err := fn(rows); err != nil {
			return err
		}
	}
	return nil
}

func (s *pipeStore) ResetPendingRemovals(context.Context, string, string) error { return nil }

func (s *pipeStore) AddMessages(ctx context.Context, tenant string, msgs []*outbox.Message) error {
	s.mu.Lock()
	s.calls++
	call := s.calls
	s.writing++
	s.maxW = max(s.maxW, s.writing)
	s.log = append(s.log, "write "+msgs[0].ID)
	s.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pub.publishing > 0 {
		s.overlap = true
	}
	s.writing--
	if call == s.failAt {
		return errors.New("write failed")
	}
	return nil
}

type pipeQueue struct {
	store      *pipeStore
	publishing int
	maxP       int
	ids        []string // in the order published
}

func (q *pipeQueue) Publish(_ context.Context, envs []Envelope) ([]Envelope, error) {
	q.store.mu.Lock()
	q.publishing++
	q.maxP = max(q.maxP, q.publishing)
	for _, e := range envs {
		q.ids = append(q.ids, e.IDs...)
	}
	q.store.log = append(q.store.log, "publish "+envs[0].IDs[0])
	q.store.mu.Unlock()
	return envs, nil
}

// MarkEnqueued ends a publish (it is the publisher's last step).
func (q *pipeQueue) MarkEnqueued(context.Context, []Ref) error {
	time.Sleep(20 * time.Millisecond)
	q.store.mu.Lock()
	if q.store.writing > 0 {
		q.store.overlap = true
	}
	q.publishing--
	q.store.mu.Unlock()
	return nil
}

// TestReconcileOverlapsWritesAndPublishes: a reconcile writes the next
// batch of messages while it publishes the one before, never two writes or
// two publishes at once, publishes every message once and in id order, and
// after a failed write publishes nothing more and returns the error with
// nothing in flight.
func TestReconcileOverlapsWritesAndPublishes(t *testing.T) {
	t.Parallel()
	for _, failAt := range []int{0, 3} {
		st := newFakeStore()
		st.items[fk("demo", "jira-1")] = &Descriptor{ServiceID: "jira-1", Version: 5, Status: Active}
		rs := &pipeStore{n: 4500, failAt: failAt}
		q := &pipeQueue{store: rs}
		rs.pub = q
		now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
		r := NewReconciler(Deps{Store: st, Publisher: NewPublisher(q, q), Now: func() time.Time { return now }}, rs)
		n, err := r.Run(context.Background(), "demo", "jira-1", "admin")
		rs.mu.Lock()
		if failAt == 0 {
			// 4,500 messages: batches of 1,000, 1,000, 1,000, 1,000, 500.
			if err != nil || n != 4500 || len(q.ids) != 4500 || !slices.IsSorted(q.ids) {
				t.Fatalf("Run = %d, %v; %d published, sorted %v", n, err, len(q.ids), slices.IsSorted(q.ids))
			}
			if !rs.overlap || rs.maxW != 1 || q.maxP != 1 {
				t.Fatalf("overlap %v, writes at once %d, publishes at once %d; want true, 1, 1\n%v", rs.overlap, rs.maxW, q.maxP, rs.log)
			}
		} else {
			// The third write fails: the first two batches are published,
			// nothing after; the error is returned.
			if err == nil || len(q.ids) != 2000 || !slices.IsSorted(q.ids) || rs.writing != 0 || q.publishing != 0 {
				t.Fatalf("Run with write %d failing = %d, %v; %d published, in flight %d/%d", failAt, n, err, len(q.ids), rs.writing, q.publishing)
			}
		}
		rs.mu.Unlock()
		t.Logf("failAt %d: %v", failAt, rs.log)
	}
}
