package tracker_test

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth/authtest"
	"github.com/reqtrace/reqtrace/shared/dynamo/trackertable"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// memStore is an in-memory ApplinkStore, LinkStore, IssueLockStore,
// OutboxStore and PendingStore with the semantics the interfaces document. Its optional fail
// hook makes one operation fail.
type memStore struct {
	mu         sync.Mutex
	applinks   map[string]tracker.Applink // tenant/id
	states     map[string]map[tracker.ReqRef]tracker.LinkState
	locks      map[string]memLock // tenant/issue
	marks      map[string]map[tracker.ReqRef]tracker.Mark
	markLeases map[string]memLock // tenant/ref
	reqs       map[string]map[tracker.ReqRef]tracker.Requirement
	pending    map[string]map[string]tracker.Pending // tenant → applink#fingerprint
	writes     int
	fail       func(op string) error
}

type memLock struct {
	owner string
	until time.Time
}

func newMemStore() *memStore {
	return &memStore{
		applinks:   map[string]tracker.Applink{},
		states:     map[string]map[tracker.ReqRef]tracker.LinkState{},
		locks:      map[string]memLock{},
		marks:      map[string]map[tracker.ReqRef]tracker.Mark{},
		markLeases: map[string]memLock{},
		reqs:       map[string]map[tracker.ReqRef]tracker.Requirement{},
		pending:    map[string]map[string]tracker.Pending{},
	}
}

func (m *memStore) check(op string) error {
	if m.fail != nil {
		return m.fail(op)
	}
	return nil
}

func (m *memStore) GetApplink(_ context.Context, tenant, id string) (tracker.Applink, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("GetApplink"); err != nil {
		return tracker.Applink{}, err
	}
	a, ok := m.applinks[tenant+"/"+id]
	if !ok {
		return tracker.Applink{}, apperr.ErrNotFound
	}
	return a, nil
}

func (m *memStore) ListApplinks(_ context.Context, tenant string) ([]tracker.Applink, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []tracker.Applink
	for k, a := range m.applinks {
		if len(k) > len(tenant) && k[:len(tenant)+1] == tenant+"/" {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b tracker.Applink) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}

func (m *memStore) PutApplink(_ context.Context, tenant string, a tracker.Applink, prev *tracker.Applink) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("PutApplink"); err != nil {
		return err
	}
	cur, ok := m.applinks[tenant+"/"+a.ID]
	if prev == nil && ok || prev != nil && (!ok || !cur.UpdatedAt.Equal(prev.UpdatedAt)) {
		return apperr.Conflictf("applink changed")
	}
	m.writes++
	m.applinks[tenant+"/"+a.ID] = a
	return nil
}

func (m *memStore) DeleteApplink(_ context.Context, tenant, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("DeleteApplink"); err != nil {
		return err
	}
	if _, ok := m.applinks[tenant+"/"+id]; !ok {
		return apperr.ErrNotFound
	}
	delete(m.applinks, tenant+"/"+id)
	return nil
}

func (m *memStore) PurgeApplink(_ context.Context, tenant, id string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("PurgeApplink"); err != nil {
		return 0, err
	}
	n := 0
	for r, st := range m.states[tenant] {
		if r.ApplinkID == id {
			n += 1 + len(st.Links())
			delete(m.states[tenant], r)
		}
	}
	for r := range m.reqs[tenant] {
		if r.ApplinkID == id {
			delete(m.reqs[tenant], r)
		}
	}
	for r := range m.marks[tenant] {
		if r.ApplinkID == id {
			delete(m.marks[tenant], r)
			n++
		}
	}
	for k, p := range m.pending[tenant] {
		if p.ApplinkID == id {
			delete(m.pending[tenant], k)
			n++
		}
	}
	return n, nil
}

func (m *memStore) IssueLinks(_ context.Context, tenant, issueKey string) ([]tracker.HeldLink, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("IssueLinks"); err != nil {
		return nil, err
	}
	var out []tracker.HeldLink
	for _, st := range m.states[tenant] {
		for _, l := range st.Links() {
			if l.IssueKey == issueKey {
				out = append(out, l)
			}
		}
	}
	return out, nil
}

func (m *memStore) LinkStates(_ context.Context, tenant string, refs []tracker.ReqRef) (map[tracker.ReqRef]tracker.LinkState, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("LinkStates"); err != nil {
		return nil, err
	}
	out := map[tracker.ReqRef]tracker.LinkState{}
	for _, r := range refs {
		if st, ok := m.states[tenant][r]; ok {
			out[r] = st.Clone()
		}
	}
	return out, nil
}

func (m *memStore) WriteLinks(_ context.Context, tenant string, writes []tracker.LinkWrite) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("WriteLinks"); err != nil {
		return err
	}
	if m.states[tenant] == nil {
		m.states[tenant] = map[tracker.ReqRef]tracker.LinkState{}
	}
	for _, w := range writes {
		if m.states[tenant][w.New.Ref].Rev != w.Old.Rev {
			return apperr.Conflictf("link state changed")
		}
	}
	for _, w := range writes {
		m.writes++
		st := w.New.Clone()
		st.Rev = w.Old.Rev + 1
		m.states[tenant][w.New.Ref] = st
		if w.Mark {
			if m.marks[tenant] == nil {
				m.marks[tenant] = map[tracker.ReqRef]tracker.Mark{}
			}
			mk := m.marks[tenant][w.New.Ref]
			mk.Tenant, mk.Ref = tenant, w.New.Ref
			mk.Seq++
			m.marks[tenant][w.New.Ref] = mk
		}
	}
	return nil
}

// put writes links with holds directly (test setup).
func (m *memStore) put(tenant string, h tracker.Holds, links ...tracker.Link) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.states[tenant] == nil {
		m.states[tenant] = map[tracker.ReqRef]tracker.LinkState{}
	}
	for _, l := range links {
		st, ok := m.states[tenant][l.Req]
		if !ok {
			st = tracker.EmptyLinkState(l.Req)
		}
		st = st.Clone()
		rel := tracker.IssueRelationship{IssueKey: l.IssueKey, Relationship: l.Relationship}
		st.Set(rel, st.Holds(rel)|h)
		st.Rev++
		m.states[tenant][l.Req] = st
	}
}

func (m *memStore) LockIssue(_ context.Context, tenant, issueKey, owner string, now, until time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := tenant + "/" + issueKey
	if l, ok := m.locks[k]; ok && l.owner != owner && !l.until.Before(now) {
		return apperr.Conflictf("locked")
	}
	m.locks[k] = memLock{owner, until}
	return nil
}

func (m *memStore) UnlockIssue(_ context.Context, tenant, issueKey, owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := tenant + "/" + issueKey
	if m.locks[k].owner == owner {
		delete(m.locks, k)
	}
	return nil
}

func (m *memStore) PendingMarks(_ context.Context, limit int) ([]tracker.Mark, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []tracker.Mark
	for _, byRef := range m.marks {
		for _, mk := range byRef {
			out = append(out, mk)
		}
	}
	slices.SortFunc(out, func(a, b tracker.Mark) int { return cmp.Compare(a.Tenant+a.Ref.String(), b.Tenant+b.Ref.String()) })
	return out[:min(limit, len(out))], nil
}

func (m *memStore) TakeMark(_ context.Context, tenant string, ref tracker.ReqRef, owner string, now, until time.Time) (tracker.Mark, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mk, ok := m.marks[tenant][ref]
	k := tenant + "/" + ref.String()
	if l, leased := m.markLeases[k]; !ok || leased && l.owner != owner && !l.until.Before(now) {
		return tracker.Mark{}, apperr.Conflictf("no mark or leased")
	}
	m.markLeases[k] = memLock{owner, until}
	return mk, nil
}

func (m *memStore) ClearMark(_ context.Context, tenant string, mk tracker.Mark, owner string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := tenant + "/" + mk.Ref.String()
	cur, ok := m.marks[tenant][mk.Ref]
	if m.markLeases[k].owner != owner {
		return false, nil
	}
	delete(m.markLeases, k)
	if !ok || cur.Seq != mk.Seq {
		return false, nil
	}
	delete(m.marks[tenant], mk.Ref)
	return true, nil
}

func (m *memStore) ReleaseMark(_ context.Context, tenant string, mk tracker.Mark, owner, reason string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := tenant + "/" + mk.Ref.String()
	if m.markLeases[k].owner != owner {
		return nil
	}
	delete(m.markLeases, k)
	if cur, ok := m.marks[tenant][mk.Ref]; ok && reason != "" {
		cur.Attempts++
		cur.LastError = reason
		m.marks[tenant][mk.Ref] = cur
	}
	return nil
}

// pendingMarks returns the refs marked in tenant, sorted.
func (m *memStore) pendingMarks(tenant string) []tracker.ReqRef {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []tracker.ReqRef
	for r := range m.marks[tenant] {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b tracker.ReqRef) int { return cmp.Compare(a.String(), b.String()) })
	return out
}

func (m *memStore) GetRequirements(_ context.Context, tenant string, refs []tracker.ReqRef) (map[tracker.ReqRef]tracker.Requirement, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[tracker.ReqRef]tracker.Requirement{}
	for _, r := range refs {
		if q, ok := m.reqs[tenant][r]; ok {
			out[r] = q
		}
	}
	return out, nil
}

func (m *memStore) PutRequirements(_ context.Context, tenant string, reqs []tracker.Requirement) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("PutRequirements"); err != nil {
		return err
	}
	if m.reqs[tenant] == nil {
		m.reqs[tenant] = map[tracker.ReqRef]tracker.Requirement{}
	}
	for _, r := range reqs {
		m.writes++
		if len(r.Suspects) == 0 {
			r.Suspects = m.reqs[tenant][r.Ref].Suspects // as the DynamoDB store: none keeps the stored ones
		}
		m.reqs[tenant][r.Ref] = r
	}
	return nil
}

func (m *memStore) SetSuspects(_ context.Context, tenant string, ref tracker.ReqRef, marks []tracker.SuspectMark) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("SetSuspects"); err != nil {
		return err
	}
	if m.reqs[tenant] == nil {
		m.reqs[tenant] = map[tracker.ReqRef]tracker.Requirement{}
	}
	m.writes++
	r := m.reqs[tenant][ref]
	r.Ref, r.Suspects = ref, slices.Clone(marks)
	m.reqs[tenant][ref] = r
	return nil
}

func (m *memStore) AddPending(_ context.Context, tenant string, ps []tracker.Pending) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pending[tenant] == nil {
		m.pending[tenant] = map[string]tracker.Pending{}
	}
	for _, p := range ps {
		m.writes++
		m.pending[tenant][p.ApplinkID+"#"+p.Message.Fingerprint()] = p
	}
	return nil
}

func (m *memStore) ListPending(_ context.Context, tenant string) ([]tracker.Pending, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []tracker.Pending
	for _, p := range m.pending[tenant] {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b tracker.Pending) int {
		return cmp.Or(a.ReceivedAt.Compare(b.ReceivedAt), cmp.Compare(a.Index, b.Index))
	})
	return out, nil
}

func (m *memStore) DeletePending(_ context.Context, tenant string, ps []tracker.Pending) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, p := range ps {
		m.writes++
		delete(m.pending[tenant], p.ApplinkID+"#"+p.Message.Fingerprint())
	}
	return nil
}

// state is a comparable snapshot of a tenant's links and requirements
// (without times).
func (m *memStore) state(tenant string) (links []tracker.Link, reqs []tracker.Requirement) {
	for _, l := range m.held(tenant) {
		links = append(links, l.Link)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, r := range m.reqs[tenant] {
		r.UpdatedAt = time.Time{}
		reqs = append(reqs, r)
	}
	slices.SortFunc(reqs, func(a, b tracker.Requirement) int { return cmp.Compare(a.Ref.String(), b.Ref.String()) })
	return links, reqs
}

// held returns a tenant's links with their holds, sorted.
func (m *memStore) held(tenant string) []tracker.HeldLink {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []tracker.HeldLink
	for _, st := range m.states[tenant] {
		out = append(out, st.Links()...)
	}
	slices.SortFunc(out, func(a, b tracker.HeldLink) int {
		return cmp.Compare(a.IssueKey+a.Req.String()+a.Relationship, b.IssueKey+b.Req.String()+b.Relationship)
	})
	return out
}

// fakeWiki is a WikiClient whose methods are function fields; a nil field
// fails the test when called.
type fakeWiki struct {
	t            *testing.T
	requirement  func(w tracker.WikiEndpoint, space, key string, baseline int) (tracker.WikiRequirement, error)
	search       func(w tracker.WikiEndpoint, s tracker.WikiSearch) (json.RawMessage, error)
	version      func(w tracker.WikiEndpoint, serviceID string) (tracker.WikiVersion, error)
	setVersion   func(w tracker.WikiEndpoint, serviceID string, v int) (int, error)
	putLinks     func(w tracker.WikiEndpoint, serviceID string, links []tracker.RequirementLinks) error
	mu           sync.Mutex
	requirements int
	// anyRequirement answers every Requirement call ACTIVE (uncounted)
	// while requirement is nil.
	anyRequirement bool
}

func (f *fakeWiki) Requirement(_ context.Context, w tracker.WikiEndpoint, space, key string, baseline int) (tracker.WikiRequirement, error) {
	if f.requirement == nil && f.anyRequirement {
		// The check of links being made: every requirement exists.
		return tracker.WikiRequirement{SpaceKey: space, Key: key, Baseline: baseline, Status: "ACTIVE"}, nil
	}
	if f.requirement == nil {
		f.t.Fatalf("unexpected wiki call: Requirement %s/%s", space, key)
	}
	f.mu.Lock()
	f.requirements++
	f.mu.Unlock()
	return f.requirement(w, space, key, baseline)
}

func (f *fakeWiki) Search(_ context.Context, w tracker.WikiEndpoint, s tracker.WikiSearch) (json.RawMessage, error) {
	if f.search == nil {
		f.t.Fatalf("unexpected wiki call: Search")
	}
	return f.search(w, s)
}

func (f *fakeWiki) Version(_ context.Context, w tracker.WikiEndpoint, serviceID string) (tracker.WikiVersion, error) {
	if f.version == nil {
		f.t.Fatalf("unexpected wiki call: Version")
	}
	return f.version(w, serviceID)
}

func (f *fakeWiki) SetVersion(_ context.Context, w tracker.WikiEndpoint, serviceID string, v int) (int, error) {
	if f.setVersion == nil {
		f.t.Fatalf("unexpected wiki call: SetVersion %d", v)
	}
	return f.setVersion(w, serviceID, v)
}

func (f *fakeWiki) PutLinks(_ context.Context, w tracker.WikiEndpoint, serviceID string, links []tracker.RequirementLinks) error {
	if f.putLinks == nil {
		// The tracker-side outbox sends a requirement's set after every
		// edit: accepted, unless a test says otherwise.
		return nil
	}
	return f.putLinks(w, serviceID, links)
}

// fixture is a Service over a memStore (or another store: newFixtureOn),
// authtest.Tokens and a fakeWiki, with applink "wiki-1" (AUTO, version 4,
// wiki token "wt") registered in tenant "demo".
type fixture struct {
	svc    *tracker.Service
	store  *memStore
	tokens *authtest.Tokens
	wiki   *fakeWiki
}

const tenant = "demo"

// TestMain starts DynamoDB Local when a test asks for it (testenv.AWS).
func TestMain(m *testing.M) { testenv.Main(m) }

// store is what the tracker service keeps its applinks, links, pending
// messages, issue locks and outbox marks in.
type store interface {
	tracker.ApplinkStore
	tracker.LinkStore
	tracker.PendingStore
	tracker.IssueLockStore
	tracker.OutboxStore
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	m := newMemStore()
	f := newFixtureOn(t, m)
	f.store = m
	return f
}

// newFixtureOn is newFixture over s; its store field is nil.
func newFixtureOn(t *testing.T, s store) *fixture {
	t.Helper()
	tokens := &authtest.Tokens{}
	wiki := &fakeWiki{t: t, anyRequirement: true}
	svc := tracker.New(tracker.Deps{Applinks: s, Tokens: tokens, Links: s, Pending: s, Locks: s, Outbox: s, Wiki: wiki})
	tok := "wt"
	if _, err := svc.Register(context.Background(), tenant, "wiki-1", tracker.Registration{URL: "http://wiki.test", WikiToken: &tok}); err != nil {
		t.Fatal(err)
	}
	return &fixture{svc: svc, tokens: tokens, wiki: wiki}
}

// racingStore is the real tracker store whose first WriteLinks meets a
// concurrent writer: just before it, another writer stores each of its
// requirements' link states again (or first), so that its revision
// condition fails.
type racingStore struct {
	*trackertable.TrackerStore
	once sync.Once
}

func (r *racingStore) WriteLinks(ctx context.Context, tenant string, writes []tracker.LinkWrite) error {
	var err error
	r.once.Do(func() {
		var refs []tracker.ReqRef
		for _, w := range writes {
			refs = append(refs, w.New.Ref)
		}
		var cur map[tracker.ReqRef]tracker.LinkState
		if cur, err = r.LinkStates(ctx, tenant, refs); err != nil {
			return
		}
		var other []tracker.LinkWrite
		for _, ref := range refs {
			st, ok := cur[ref]
			if !ok {
				st = tracker.EmptyLinkState(ref)
			}
			other = append(other, tracker.LinkWrite{Old: st, New: st})
		}
		err = r.TrackerStore.WriteLinks(ctx, tenant, other)
	})
	if err != nil {
		return err
	}
	return r.TrackerStore.WriteLinks(ctx, tenant, writes)
}

// newRacingStore returns a racingStore on DynamoDB Local.
func newRacingStore(t *testing.T) *racingStore {
	t.Helper()
	env := testenv.AWS(t)
	return &racingStore{TrackerStore: trackertable.NewTrackerStore(env.DynamoDB, env.TrackerTable)}
}

func ptr[T any](v T) *T { return &v }

func ref(space, key string) tracker.ReqRef {
	return tracker.ReqRef{ApplinkID: "wiki-1", SpaceKey: space, Key: key}
}
