package tracker_test

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// memStore is an in-memory ApplinkStore, LinkStore, PendingStore and
// TokenStore with the semantics the interfaces document. Its optional fail
// hook makes one operation fail.
type memStore struct {
	mu       sync.Mutex
	applinks map[string]tracker.Applink // tenant/id
	links    map[string]map[tracker.Link]bool
	reqs     map[string]map[tracker.ReqRef]tracker.Requirement
	pending  map[string]map[string]tracker.Pending // tenant → applink#fingerprint
	tokens   map[string]auth.Principal
	writes   int
	fail     func(op string) error
}

func newMemStore() *memStore {
	return &memStore{
		applinks: map[string]tracker.Applink{},
		links:    map[string]map[tracker.Link]bool{},
		reqs:     map[string]map[tracker.ReqRef]tracker.Requirement{},
		pending:  map[string]map[string]tracker.Pending{},
		tokens:   map[string]auth.Principal{},
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

func (m *memStore) PutToken(_ context.Context, hash string, p auth.Principal) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens[hash] = p
	return nil
}

func (m *memStore) DeleteToken(_ context.Context, hash string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tokens, hash)
	return nil
}

func (m *memStore) IssueLinks(_ context.Context, tenant, issueKey string) ([]tracker.Link, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("IssueLinks"); err != nil {
		return nil, err
	}
	var out []tracker.Link
	for l := range m.links[tenant] {
		if l.IssueKey == issueKey {
			out = append(out, l)
		}
	}
	return out, nil
}

func (m *memStore) RequirementLinks(_ context.Context, tenant string, ref tracker.ReqRef) ([]tracker.Link, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []tracker.Link
	for l := range m.links[tenant] {
		if l.Req == ref {
			out = append(out, l)
		}
	}
	return out, nil
}

func (m *memStore) PutLinks(_ context.Context, tenant string, links []tracker.Link) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check("PutLinks"); err != nil {
		return err
	}
	if m.links[tenant] == nil {
		m.links[tenant] = map[tracker.Link]bool{}
	}
	for _, l := range links {
		m.writes++
		m.links[tenant][l] = true
	}
	return nil
}

func (m *memStore) DeleteLinks(_ context.Context, tenant string, links []tracker.Link) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range links {
		m.writes++
		delete(m.links[tenant], l)
	}
	return nil
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
		m.reqs[tenant][r.Ref] = r
	}
	return nil
}

func (m *memStore) DeleteRequirement(_ context.Context, tenant string, ref tracker.ReqRef) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes++
	delete(m.reqs[tenant], ref)
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
	m.mu.Lock()
	defer m.mu.Unlock()
	for l := range m.links[tenant] {
		links = append(links, l)
	}
	slices.SortFunc(links, func(a, b tracker.Link) int {
		return cmp.Compare(a.IssueKey+a.Req.String()+a.Relationship, b.IssueKey+b.Req.String()+b.Relationship)
	})
	for _, r := range m.reqs[tenant] {
		r.UpdatedAt = time.Time{}
		reqs = append(reqs, r)
	}
	slices.SortFunc(reqs, func(a, b tracker.Requirement) int { return cmp.Compare(a.Ref.String(), b.Ref.String()) })
	return links, reqs
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
}

func (f *fakeWiki) Requirement(_ context.Context, w tracker.WikiEndpoint, space, key string, baseline int) (tracker.WikiRequirement, error) {
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
		f.t.Fatalf("unexpected wiki call: PutLinks")
	}
	return f.putLinks(w, serviceID, links)
}

// fixture is a Service over a memStore and a fakeWiki, with applink "wiki-1"
// (AUTO, version 4, wiki token "wt") registered in tenant "demo".
type fixture struct {
	svc   *tracker.Service
	store *memStore
	wiki  *fakeWiki
}

const tenant = "demo"

func newFixture(t *testing.T) *fixture {
	t.Helper()
	store := newMemStore()
	wiki := &fakeWiki{t: t}
	svc := tracker.New(tracker.Deps{Applinks: store, Tokens: store, Links: store, Pending: store, Wiki: wiki})
	tok := "wt"
	if _, err := svc.Register(context.Background(), tenant, "wiki-1", tracker.Registration{URL: "http://wiki.test", WikiToken: &tok}); err != nil {
		t.Fatal(err)
	}
	return &fixture{svc: svc, store: store, wiki: wiki}
}

func ptr[T any](v T) *T { return &v }

func ref(space, key string) tracker.ReqRef {
	return tracker.ReqRef{ApplinkID: "wiki-1", SpaceKey: space, Key: key}
}
