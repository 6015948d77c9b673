package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// clock is a settable fake time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fakeStore is an in-memory Store.
type fakeStore struct {
	mu    sync.Mutex
	items map[string]*Descriptor // tenant/serviceId
	lease map[string]string      // tenant/serviceId -> owner
	until map[string]time.Time
	// GetErr, when set, fails Get.
	GetErr error
}

func newFakeStore() *fakeStore {
	return &fakeStore{items: map[string]*Descriptor{}, lease: map[string]string{}, until: map[string]time.Time{}}
}

func fk(tenant, id string) string { return tenant + "/" + id }

func (f *fakeStore) List(_ context.Context, tenant string) ([]*Descriptor, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*Descriptor
	for k, d := range f.items {
		if strings.HasPrefix(k, tenant+"/") {
			c := *d
			out = append(out, &c)
		}
	}
	slices.SortFunc(out, func(a, b *Descriptor) int { return strings.Compare(a.ServiceID, b.ServiceID) })
	return out, nil
}

func (f *fakeStore) Get(_ context.Context, tenant, id string) (*Descriptor, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.GetErr != nil {
		return nil, f.GetErr
	}
	d, ok := f.items[fk(tenant, id)]
	if !ok {
		return nil, apperr.ErrNotFound
	}
	c := *d
	return &c, nil
}

func (f *fakeStore) Create(_ context.Context, tenant string, d *Descriptor) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.items[fk(tenant, d.ServiceID)]; ok {
		return apperr.ErrConflict
	}
	d.Rev = 1
	c := *d
	f.items[fk(tenant, d.ServiceID)] = &c
	return nil
}

func (f *fakeStore) Update(_ context.Context, tenant string, d *Descriptor) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, ok := f.items[fk(tenant, d.ServiceID)]
	if !ok {
		return apperr.ErrNotFound
	}
	if old.Rev != d.Rev {
		return apperr.ErrConflict
	}
	c := *d
	c.SweepFrom, c.LastErrorMail = old.SweepFrom, old.LastErrorMail
	c.Rev++
	d.Rev = c.Rev
	f.items[fk(tenant, d.ServiceID)] = &c
	return nil
}

func (f *fakeStore) ClaimErrorMail(_ context.Context, tenant, id string, now time.Time, every time.Duration) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.items[fk(tenant, id)]
	if !d.LastErrorMail.IsZero() && now.Sub(d.LastErrorMail) < every {
		return false, nil
	}
	d.LastErrorMail = now
	return true, nil
}

func (f *fakeStore) AcquireLease(_ context.Context, tenant, id, owner string, now, until time.Time) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := fk(tenant, id)
	if o, ok := f.lease[k]; ok && o != owner && now.Before(f.until[k]) {
		return false, nil
	}
	f.lease[k], f.until[k] = owner, until
	return true, nil
}

func (f *fakeStore) ReleaseLease(_ context.Context, tenant, id, owner string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lease[fk(tenant, id)] == owner {
		delete(f.lease, fk(tenant, id))
	}
	return nil
}

func (f *fakeStore) SetSweepFrom(_ context.Context, tenant, id, from string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.items[fk(tenant, id)].SweepFrom = from
	return nil
}

// fakeOutbox is an in-memory Outbox.
func (f *fakeStore) Delete(_ context.Context, tenant, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.items[fk(tenant, id)]; !ok {
		return apperr.ErrNotFound
	}
	delete(f.items, fk(tenant, id))
	return nil
}

type fakeOutbox struct {
	mu   sync.Mutex
	msgs map[Ref]*outbox.Message
}

func newFakeOutbox() *fakeOutbox { return &fakeOutbox{msgs: map[Ref]*outbox.Message{}} }

func (f *fakeOutbox) put(tenant string, ms ...*outbox.Message) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range ms {
		c := *m
		f.msgs[RefOf(tenant, m)] = &c
	}
}

func (f *fakeOutbox) get(tenant, sid, id string) *outbox.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.msgs[Ref{tenant, sid, id}]
	if m == nil {
		return nil
	}
	c := *m
	return &c
}

func (f *fakeOutbox) sorted(tenant, sid, from string) []*outbox.Message {
	var out []*outbox.Message
	for r, m := range f.msgs {
		if r.Tenant == tenant && r.ServiceID == sid && m.ID >= from {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b *outbox.Message) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (f *fakeOutbox) MarkEnqueued(_ context.Context, refs []Ref) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range refs {
		if m := f.msgs[r]; m != nil {
			m.Enqueued = true
		}
	}
	return nil
}

func (f *fakeOutbox) CountNew(_ context.Context, tenant, sid, from string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, m := range f.sorted(tenant, sid, from) {
		if m.State == outbox.New {
			n++
		}
	}
	return n, nil
}

func (f *fakeOutbox) List(_ context.Context, tenant, sid, from string, limit int, includeDone bool) ([]*outbox.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*outbox.Message
	for _, m := range f.sorted(tenant, sid, from) {
		if (includeDone || m.State == outbox.New) && len(out) < limit {
			c := *m
			out = append(out, &c)
		}
	}
	return out, nil
}

func (f *fakeOutbox) Get(_ context.Context, tenant, sid, id string) (*outbox.Message, error) {
	if m := f.get(tenant, sid, id); m != nil {
		return m, nil
	}
	return nil, apperr.ErrNotFound
}

func (f *fakeOutbox) GetMany(_ context.Context, refs []Ref) (map[Ref]*outbox.Message, error) {
	out := map[Ref]*outbox.Message{}
	for _, r := range refs {
		if m := f.get(r.Tenant, r.ServiceID, r.ID); m != nil {
			out[r] = m
		}
	}
	return out, nil
}

func (f *fakeOutbox) Delete(_ context.Context, tenant, sid, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := Ref{tenant, sid, id}
	if f.msgs[r] == nil {
		return apperr.ErrNotFound
	}
	delete(f.msgs, r)
	return nil
}

func (f *fakeOutbox) Purge(_ context.Context, tenant, sid, before string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for r := range f.msgs {
		if r.Tenant == tenant && r.ServiceID == sid && (before == "" || r.ID < before) {
			delete(f.msgs, r)
			n++
		}
	}
	return n, nil
}

func (f *fakeOutbox) ScanNew(_ context.Context, tenant, sid, from string, fn func([]*outbox.Message) (bool, error)) error {
	f.mu.Lock()
	all := f.sorted(tenant, sid, from)
	var news []*outbox.Message
	for _, m := range all {
		if m.State == outbox.New {
			c := *m
			news = append(news, &c)
		}
	}
	f.mu.Unlock()
	for chunk := range slices.Chunk(news, 37) { // odd page size on purpose
		more, err := fn(chunk)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
	return nil
}

func (f *fakeOutbox) MarkDone(_ context.Context, outcomes []Outcome) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, o := range outcomes {
		if m := f.msgs[o.Ref]; m != nil {
			m.State, m.LastResponse, m.Enqueued = outbox.Done, o.LastResponse, true
		}
	}
	return nil
}

func (f *fakeOutbox) RecordFailure(_ context.Context, refs []Ref, lr string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range refs {
		if m := f.msgs[r]; m != nil && m.State == outbox.New {
			m.LastResponse = lr
		}
	}
	return nil
}

func (f *fakeOutbox) Pending(_ context.Context, before time.Time, fn func([]Pending) (bool, error)) error {
	f.mu.Lock()
	var out []Pending
	for r, m := range f.msgs {
		if m.State == outbox.New && !m.Enqueued && m.ID < idPrefix(before) {
			c := *m
			out = append(out, Pending{Tenant: r.Tenant, Message: &c})
		}
	}
	f.mu.Unlock()
	slices.SortFunc(out, func(a, b Pending) int { return strings.Compare(a.Message.ID, b.Message.ID) })
	if len(out) == 0 {
		return nil
	}
	_, err := fn(out)
	return err
}

// fakeQueue is an in-memory SQS FIFO queue: a group with a message in
// flight hands out no other message, as SQS FIFO does.
type fakeQueue struct {
	mu      sync.Mutex
	clock   *clock
	seq     int
	msgs    []*fakeQM
	dedup   map[string]bool
	Sent    int
	Deleted int
	// FailPublish fails every Publish.
	FailPublish bool
}

type fakeQM struct {
	env      Envelope
	visible  time.Time
	handle   string
	receives int
}

func newFakeQueue(c *clock) *fakeQueue { return &fakeQueue{clock: c, dedup: map[string]bool{}} }

func (q *fakeQueue) Publish(_ context.Context, envs []Envelope) ([]Envelope, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.FailPublish {
		return nil, fmt.Errorf("queue down")
	}
	for _, e := range envs {
		k := strings.Join(e.IDs, ",")
		if q.dedup[k] {
			continue
		}
		q.dedup[k] = true
		q.msgs = append(q.msgs, &fakeQM{env: e})
		q.Sent++
	}
	return envs, nil
}

// inject adds an envelope regardless of deduplication (a duplicate
// delivery by SQS).
func (q *fakeQueue) inject(e Envelope) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = append(q.msgs, &fakeQM{env: e})
}

func (q *fakeQueue) Receive(_ context.Context, max int, _ time.Duration) ([]Received, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	blocked := map[string]bool{}
	for _, m := range q.msgs {
		if m.visible.After(now) {
			blocked[m.env.Tenant+"#"+m.env.ServiceID] = true
		}
	}
	var out []Received
	for _, m := range q.msgs {
		if len(out) == max {
			break
		}
		if m.visible.After(now) || blocked[m.env.Tenant+"#"+m.env.ServiceID] {
			continue
		}
		q.seq++
		m.handle = fmt.Sprintf("h%d", q.seq)
		m.receives++
		m.visible = now.Add(120 * time.Second)
		out = append(out, Received{Envelope: m.env, Handle: m.handle, Receives: m.receives})
	}
	return out, nil
}

func (q *fakeQueue) Delete(_ context.Context, hs []string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.msgs = slices.DeleteFunc(q.msgs, func(m *fakeQM) bool {
		if slices.Contains(hs, m.handle) {
			q.Deleted++
			return true
		}
		return false
	})
	return nil
}

func (q *fakeQueue) ChangeVisibility(_ context.Context, hs []string, d time.Duration) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, m := range q.msgs {
		if slices.Contains(hs, m.handle) {
			m.visible = q.clock.Now().Add(d)
		}
	}
	return nil
}

func (q *fakeQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.msgs)
}

// fakeLinks applies ReplaceLinks on in-memory requirements.
type fakeLinks struct {
	reqs map[string]*requirement.Requirement // SPACE/KEY
}

func (f *fakeLinks) ReplaceIssueLinks(_ context.Context, _ string, sid string, sets []LinkSet) (int, error) {
	for _, s := range sets {
		if f.reqs[s.SpaceKey+"/"+strings.ToUpper(s.Key)] == nil {
			return 0, apperr.NotFoundf("requirement %s/%s not found", s.SpaceKey, s.Key)
		}
	}
	n := 0
	for _, s := range sets {
		if ReplaceLinks(f.reqs[s.SpaceKey+"/"+strings.ToUpper(s.Key)], sid, s.Links, s.Whole) {
			n++
		}
	}
	return n, nil
}

type fakeSettings struct{ m map[string]Settings }

func (f *fakeSettings) Get(_ context.Context, t string) (Settings, error) { return f.m[t], nil }
func (f *fakeSettings) Put(_ context.Context, t string, s Settings) error {
	if f.m == nil {
		f.m = map[string]Settings{}
	}
	f.m[t] = s
	return nil
}

// fakeReconciler records flags and reconcile runs.
type fakeReconciler struct {
	mu      sync.Mutex
	flagged []string // tenant/serviceId, in order
	runs    int
	// FlagErr fails Flag for this tenant/serviceId; RunErr fails RunFlagged.
	FlagErr string
	RunErr  error
	Queued  int
}

func (f *fakeReconciler) Flag(_ context.Context, tenant, serviceID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if fk(tenant, serviceID) == f.FlagErr {
		return errors.New("flag store down")
	}
	f.flagged = append(f.flagged, fk(tenant, serviceID))
	return nil
}

func (f *fakeReconciler) RunFlagged(context.Context) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs++
	return f.Queued, f.RunErr
}
