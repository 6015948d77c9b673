// Package wikitest helps test code that stores pages: builders of
// storage-format bodies and Mem, an in-memory wiki.Store.
package wikitest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/page/pagetest"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// Builders of storage-format bodies, from shared/page/pagetest.
var (
	Def   = pagetest.Def
	Link  = pagetest.Link
	Jira  = pagetest.Jira
	Table = pagetest.Table
	TH    = pagetest.TH
	TR    = pagetest.TR
)

// Mem is an in-memory wiki.Store. Fail, when set, is called before each
// Commit; an error it returns fails the Commit with nothing applied.
type Mem struct {
	suspectFields map[string][]string
	Fail          func(c *wiki.Change) error
	// Now is the clock of page leases (time.Now when nil).
	Now func() time.Time

	leases map[string]*wiki.Lease // tenant + "/" + page id
	// unfinished are the pages listed for recovery (tenant + "/" + page id).
	unfinished map[string]bool
	leaseN     int
	// pending are the rows recorded by commits that failed (Fail), by
	// tenant + "/" + page id, handed to the next lease as Leftover.
	pending      map[string][]requirement.ID
	pendingEdges map[string][]wiki.Edge

	mu       sync.Mutex
	pages    map[string]*wiki.Page // tenant + "/" + id
	rows     map[string]map[requirement.ID]*requirement.Requirement
	archived map[string]*requirement.Requirement // tenant/space/KEY/n
	// baselines are the committed baselines (tenant/space/n): PutRow of
	// an archived copy commits its baseline, DropBaseline uncommits it.
	baselines map[string]bool
	services  map[string][]wiki.Integration
	// Removals are the pending removals added per tenant and serviceId.
	Removals map[string]map[string]int
	spaces   map[string][]string
	// Commits are the changes applied, in order.
	Commits []*wiki.Change
	// Outbox holds every message written, by commit then id.
	Outbox []*outbox.Message
	// Calls counts the store calls by method name.
	Calls map[string]int
}

var _ wiki.Store = (*Mem)(nil)

// NewMem returns an empty store.
func NewMem() *Mem {
	return &Mem{
		pages: map[string]*wiki.Page{}, rows: map[string]map[requirement.ID]*requirement.Requirement{},
		archived: map[string]*requirement.Requirement{}, baselines: map[string]bool{}, services: map[string][]wiki.Integration{}, Removals: map[string]map[string]int{},
		spaces: map[string][]string{}, Calls: map[string]int{}, leases: map[string]*wiki.Lease{}, unfinished: map[string]bool{}, pending: map[string][]requirement.ID{}, pendingEdges: map[string][]wiki.Edge{},
	}
}

// MemLeaseFor is how long a lease of Mem lasts.
const MemLeaseFor = time.Minute

func (m *Mem) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// held reports whether an unexpired lease is held on page tenant/id.
func (m *Mem) held(key string) bool {
	l := m.leases[key]
	return l != nil && !l.Until.Before(m.now())
}

// LeasePage implements wiki.Store as the DynamoDB store does.
func (m *Mem) LeasePage(_ context.Context, tenant, id string, version int) (*wiki.Lease, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["LeasePage"]++
	key := tenant + "/" + id
	if m.held(key) {
		return nil, apperr.Conflictf("page %s is being saved by another request; retry", id)
	}
	p, ok := m.pages[key]
	if (version == 0 && ok) || (version > 0 && (!ok || p.Version != version)) {
		return nil, apperr.Conflictf("page %s was changed by another request meanwhile; send it again", id)
	}
	m.leaseN++
	// A lease that expired without being ended is an operation that did
	// not finish, as the DynamoDB store's recovery entry says.
	l := &wiki.Lease{PageID: id, ID: fmt.Sprint("lease-", m.leaseN), Version: version, Until: m.now().Add(MemLeaseFor),
		Leftover: slices.Clone(m.pending[key]), LeftoverEdges: slices.Clone(m.pendingEdges[key]),
		Unfinished: m.unfinished[key] || m.leases[key] != nil}
	m.leases[key] = l
	c := *l
	return &c, nil
}

// ReleasePage implements wiki.Store.
func (m *Mem) ReleasePage(_ context.Context, tenant string, l *wiki.Lease) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["ReleasePage"]++
	key := tenant + "/" + l.PageID
	if cur := m.leases[key]; cur != nil && cur.ID == l.ID {
		delete(m.leases, key)
		if l.Unfinished || l.Writing {
			m.unfinished[key] = true
		}
	}
	return nil
}

// Unfinished implements wiki.RecoveryStore: the pages listed for recovery,
// and those whose lease expired without being ended, in key order.
func (m *Mem) Unfinished(_ context.Context, now time.Time, limit int) ([]wiki.UnfinishedPage, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []string
	for k := range m.unfinished {
		keys = append(keys, k)
	}
	for k, l := range m.leases {
		if l.Until.Before(now) && !m.unfinished[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []wiki.UnfinishedPage
	for _, k := range keys[:min(limit, len(keys))] {
		tenant, id, _ := strings.Cut(k, "/")
		out = append(out, wiki.UnfinishedPage{Tenant: tenant, PageID: id})
	}
	return out, nil
}

// Leased reports whether an unexpired lease is held on a page.
func (m *Mem) Leased(tenant, id string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held(tenant + "/" + id)
}

// AddIntegration declares an integration of tenant at API version 4.
func (m *Mem) AddIntegration(tenant, serviceID string) { m.AddIntegrationAt(tenant, serviceID, 4) }

// AddIntegrationAt declares an integration of tenant at an API version.
func (m *Mem) AddIntegrationAt(tenant, serviceID string, version int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.services[tenant] = append(m.services[tenant], wiki.Integration{ServiceID: serviceID, Version: version})
}

// PutRow stores a current row (or an archived copy when r.Baseline > 0) as is.
func (m *Mem) PutRow(tenant string, r *requirement.Requirement) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r.Baseline > 0 {
		m.archived[archKey(tenant, r.SpaceKey, r.Key, r.Baseline)] = r.Clone()
		m.baselines[fmt.Sprintf("%s/%s/%d", tenant, r.SpaceKey, r.Baseline)] = true
		return
	}
	m.tenantRows(tenant)[requirement.NewID(r.SpaceKey, r.Key, 0)] = r.Clone()
}

// PutPage stores a page as is.
func (m *Mem) PutPage(tenant string, p *wiki.Page) {
	m.mu.Lock()
	defer m.mu.Unlock()
	c := *p
	c.Keys = slices.Clone(p.Keys)
	m.pages[tenant+"/"+p.ID] = &c
}

// Row returns a current row (stubs included), nil when absent.
func (m *Mem) Row(tenant, space, key string) *requirement.Requirement {
	m.mu.Lock()
	defer m.mu.Unlock()
	if r := m.tenantRows(tenant)[requirement.NewID(space, key, 0)]; r != nil {
		return r.Clone()
	}
	return nil
}

// Spaces returns the registered spaces of tenant.
func (m *Mem) Spaces(tenant string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.spaces[tenant])
}

func archKey(tenant, space, key string, n int) string {
	return fmt.Sprintf("%s/%s/%s/%d", tenant, space, strings.ToUpper(key), n)
}

func (m *Mem) tenantRows(tenant string) map[requirement.ID]*requirement.Requirement {
	rows, ok := m.rows[tenant]
	if !ok {
		rows = map[requirement.ID]*requirement.Requirement{}
		m.rows[tenant] = rows
	}
	return rows
}

// Page implements wiki.Store.
func (m *Mem) Page(_ context.Context, tenant, id string) (*wiki.Page, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["Page"]++
	p, ok := m.pages[tenant+"/"+id]
	if !ok {
		return nil, apperr.ErrNotFound
	}
	c := *p
	c.Keys = slices.Clone(p.Keys)
	return &c, nil
}

// Requirement implements wiki.Store.
func (m *Mem) Requirement(_ context.Context, tenant string, id requirement.ID) (*requirement.Requirement, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["Requirement"]++
	var r *requirement.Requirement
	if id.Baseline > 0 {
		r = m.archived[archKey(tenant, id.SpaceKey, id.Key, id.Baseline)]
	} else {
		r = m.tenantRows(tenant)[id.Fold()]
	}
	if r == nil || r.Status == "" {
		return nil, apperr.ErrNotFound
	}
	return r.Clone(), nil
}

// DropBaseline removes the record of a baseline, not its copies (a
// baseline still freezing, or the leftovers of a failed one).
func (m *Mem) DropBaseline(tenant, space string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.baselines, fmt.Sprintf("%s/%s/%d", tenant, space, n))
}

// BaselineExists implements wiki.Store.
func (m *Mem) BaselineExists(_ context.Context, tenant, space string, n int) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["BaselineExists"]++
	return m.baselines[fmt.Sprintf("%s/%s/%d", tenant, space, n)], nil
}

// Requirements implements wiki.Store.
func (m *Mem) Requirements(_ context.Context, tenant string, ids []requirement.ID) (map[requirement.ID]*requirement.Requirement, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["Requirements"]++
	out := map[requirement.ID]*requirement.Requirement{}
	for _, id := range ids {
		if r := m.tenantRows(tenant)[id.Fold()]; r != nil {
			out[id.Fold()] = r.Clone()
		}
	}
	return out, nil
}

// Integrations implements wiki.Store.
func (m *Mem) Integrations(_ context.Context, tenant string) ([]wiki.Integration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["Integrations"]++
	return slices.Clone(m.services[tenant]), nil
}

// SetSuspectFields sets the tenant's suspectFields setting (nil: the
// default).
func (m *Mem) SetSuspectFields(tenant string, fields []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.suspectFields == nil {
		m.suspectFields = map[string][]string{}
	}
	m.suspectFields[tenant] = fields
}

// SuspectFields implements wiki.Store.
func (m *Mem) SuspectFields(_ context.Context, tenant string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["SuspectFields"]++
	if f, ok := m.suspectFields[tenant]; ok && f != nil {
		return slices.Clone(f), nil
	}
	return slices.Clone(requirement.DefaultSuspectFields), nil
}

// ClearSuspects implements wiki.Store.
// As the DynamoDB store, it leaves the rows whose page is leased and
// answers them in busy.
func (m *Mem) ClearSuspects(_ context.Context, tenant string, rows []*requirement.Requirement) ([]*requirement.Requirement, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["ClearSuspects"]++
	var busy []*requirement.Requirement
	for _, row := range rows {
		if m.held(tenant + "/" + row.Origin.PageID) {
			busy = append(busy, row)
			continue
		}
		if r := m.tenantRows(tenant)[row.ID().Current().Fold()]; r != nil {
			r.Suspects = nil
		}
	}
	return busy, nil
}

// AddPendingRemovals implements wiki.Store.
func (m *Mem) AddPendingRemovals(_ context.Context, tenant string, counts map[string]int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["AddPendingRemovals"]++
	if m.Removals[tenant] == nil {
		m.Removals[tenant] = map[string]int{}
	}
	for s, n := range counts {
		m.Removals[tenant][s] += n
	}
	return nil
}

// Commit implements wiki.Store: it applies the change as DynamoDB would.
func (m *Mem) Commit(_ context.Context, tenant string, c *wiki.Change) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["Commit"]++
	if c.Lease != nil {
		// Recorded before anything can fail, as the DynamoDB store does.
		key := tenant + "/" + c.Lease.PageID
		if cur := m.leases[key]; cur != nil && cur.ID == c.Lease.ID {
			for _, id := range c.Pending {
				if !slices.Contains(m.pending[key], id) {
					m.pending[key] = append(m.pending[key], id)
				}
			}
			for _, e := range c.RDeps {
				for _, d := range slices.Concat(e.Add, e.Remove) {
					if edge := (wiki.Edge{Target: e.Target, Source: d}); !slices.Contains(m.pendingEdges[key], edge) {
						m.pendingEdges[key] = append(m.pendingEdges[key], edge)
					}
				}
			}
		}
	}
	if m.Fail != nil {
		if err := m.Fail(c); err != nil {
			return err
		}
	}
	if c.Lease != nil {
		key := tenant + "/" + c.Lease.PageID
		if cur := m.leases[key]; cur == nil || cur.ID != c.Lease.ID {
			return apperr.Conflictf("page %s: its lease expired and another request took it", c.Lease.PageID)
		}
		delete(m.leases, key)
		m.unfinished[key] = c.Lease.Unfinished && !c.Reconciled
		if !m.unfinished[key] {
			delete(m.unfinished, key)
		}
		if c.Reconciled || c.PutPage != nil || c.DeletePage != "" {
			delete(m.pending, key)
			delete(m.pendingEdges, key)
		}
	} else if c.PutPage != nil || c.DeletePage != "" {
		id := c.DeletePage
		if c.PutPage != nil {
			id = c.PutPage.ID
		}
		old, ok := m.pages[tenant+"/"+id]
		if (c.ExpectVersion == 0 && ok) || (c.ExpectVersion > 0 && (!ok || old.Version != c.ExpectVersion)) || m.held(tenant+"/"+id) {
			return apperr.Conflictf("page %s changed concurrently", id)
		}
	}
	m.Commits = append(m.Commits, c)
	rows := m.tenantRows(tenant)
	first := len(m.Outbox)
	defer func() {
		// Listings show messages by id, which is their creation order.
		slices.SortFunc(m.Outbox[first:], func(a, b *outbox.Message) int { return strings.Compare(a.ID, b.ID) })
	}()
	for _, e := range c.RDeps {
		r, ok := rows[e.Target]
		if !ok {
			r = &requirement.Requirement{SpaceKey: e.Target.SpaceKey, Key: e.Target.Key}
			rows[e.Target] = r
		}
		r.ReverseDependencies = e.Apply(r.ReverseDependencies)
	}
	for _, w := range c.Writes {
		rows[requirement.NewID(w.New.SpaceKey, w.New.Key, 0)] = w.New.Clone()
		for _, e := range w.Suspects {
			id := e.Row.Fold()
			r, ok := rows[id]
			if !ok {
				r = &requirement.Requirement{SpaceKey: e.Row.SpaceKey, Key: e.Row.Key}
				rows[id] = r
			}
			r.Suspects = requirement.MergeSuspects(r.Suspects, e.Marks)
		}
		for _, msg := range w.Messages {
			cp := *msg
			m.Outbox = append(m.Outbox, &cp)
		}
	}
	if d := c.DropSuspects; d != nil {
		for _, id := range d.Rows {
			if r := rows[id.Fold()]; r != nil {
				r.Suspects = slices.DeleteFunc(r.Suspects, func(s requirement.Suspect) bool { return s.MadeAfter(d.Page, d.After) })
			}
		}
	}
	if c.RegisterSpace != "" && !slices.Contains(m.spaces[tenant], c.RegisterSpace) {
		m.spaces[tenant] = append(m.spaces[tenant], c.RegisterSpace)
	}
	if c.DeletePage != "" {
		delete(m.pages, tenant+"/"+c.DeletePage)
	}
	if c.PutPage != nil {
		p := *c.PutPage
		p.Keys = slices.Clone(c.PutPage.Keys)
		m.pages[tenant+"/"+p.ID] = &p
	}
	return nil
}

// SetExternal implements wiki.Store as the DynamoDB store does: the
// external properties of next replace the stored row's, on condition that
// no unexpired lease is held on old's page and that the row is still
// ACTIVE on that page with old's external properties.
func (m *Mem) SetExternal(_ context.Context, tenant string, old, next *requirement.Requirement) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.Calls["SetExternal"]++
	if m.held(tenant + "/" + old.Origin.PageID) {
		return apperr.Conflictf("page %s is being saved by another request", old.Origin.PageID)
	}
	cur := m.tenantRows(tenant)[old.ID()]
	if cur == nil || cur.Status != requirement.Active || cur.Origin.PageID != old.Origin.PageID ||
		!slices.Equal(cur.ExternalProperties(), old.ExternalProperties()) {
		return apperr.Conflictf("requirement %s changed concurrently", old.ID())
	}
	cur.SetExternalProperties(next.ExternalProperties())
	return nil
}
