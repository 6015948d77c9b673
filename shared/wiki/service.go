package wiki

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/page"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Service stores pages, indexes the requirements they define and reads them.
// It is safe for concurrent use.
type Service struct {
	store Store
	// Now is the clock (time.Now by default); tests replace it.
	Now func() time.Time
	// Publisher, when set, is handed the outbound messages of each committed
	// change (integration.Publisher sends them to the outbound queue). Its
	// failure is logged, not returned: the messages are committed, and the
	// sync function enqueues those still pending.
	Publisher Publisher
}

// Publisher hands committed outbound messages onward.
type Publisher interface {
	// Publish sends references to msgs to the outbound queue.
	Publish(ctx context.Context, tenant string, msgs []*outbox.Message) error
}

// Deps are what a Service is built from.
type Deps struct {
	Store Store
	// Publisher is optional (see Service.Publisher).
	Publisher Publisher
}

// New returns a Service on d.Store.
func New(d Deps) *Service {
	return &Service{store: d.Store, Publisher: d.Publisher, Now: time.Now}
}

// loadPage reads a page, answering a not-found error that names it.
func (s *Service) loadPage(ctx context.Context, tenant, id string) (*Page, error) {
	pg, err := s.store.Page(ctx, tenant, id)
	if errors.Is(err, apperr.ErrNotFound) {
		// The store's not-found says no more than this: not wrapped, so
		// that the message (and the log line) says it once.
		return nil, apperr.NotFoundf("page %s not found", id)
	}
	if err != nil {
		return nil, fmt.Errorf("read page %s: %w", id, err)
	}
	return pg, nil
}

// Page returns a stored page with its body.
func (s *Service) Page(ctx context.Context, tenant, id string) (*Page, error) {
	if err := CheckContentID("contentId", id); err != nil {
		return nil, err
	}
	return s.loadPage(ctx, tenant, id)
}

// release gives a lease back unless the operation's commit ended it
// (*ended): after a refusal or a failure, so that the next operation need
// not wait for it to expire. A failure to release is logged: the lease
// expires.
func (s *Service) release(ctx context.Context, tenant string, l *Lease, ended *bool) {
	if *ended {
		return
	}
	if err := s.store.ReleasePage(context.WithoutCancel(ctx), tenant, l); err != nil {
		slog.WarnContext(ctx, "page lease not released; it expires", "tenant", tenant, "page", l.PageID,
			"until", l.Until, "error", err.Error())
	}
}

// commit applies a change written under a lease, then publishes its
// messages. It sets *ended once the commit has ended the lease.
func (s *Service) commit(ctx context.Context, tenant string, c *Change, ended *bool) error {
	if c.Lease != nil {
		c.Lease.Writing = true
	}
	if err := s.store.Commit(ctx, tenant, c); err != nil {
		return err
	}
	*ended = true
	if len(c.PendingRemovals) > 0 {
		if err := s.store.AddPendingRemovals(ctx, tenant, c.PendingRemovals); err != nil {
			slog.WarnContext(ctx, "pending removals not counted", "tenant", tenant, "error", err.Error())
		}
	}
	if s.Publisher == nil {
		return nil
	}
	var msgs []*outbox.Message
	for _, w := range c.Writes {
		msgs = append(msgs, w.Messages...)
	}
	if len(msgs) == 0 {
		return nil
	}
	if err := s.Publisher.Publish(ctx, tenant, msgs); err != nil {
		slog.WarnContext(ctx, "outbound messages committed but not enqueued; the sync function will enqueue them",
			"tenant", tenant, "messages", len(msgs), "error", err.Error())
	}
	return nil
}

// takenBy reports whether r is defined by a page other than pageID: then a
// definition of the same key is a duplicate.
func takenBy(r *requirement.Requirement, pageID string) bool {
	return r != nil && r.Status == requirement.Active && r.Origin.PageID != pageID
}

// ownedBy reports whether r is the ACTIVE row of a requirement pageID defines.
func ownedBy(r *requirement.Requirement, pageID string) bool {
	return r != nil && r.Status == requirement.Active && r.Origin.PageID == pageID
}

// SavePage stores a page (a new version of it, or moved to another space)
// and indexes it fully: each requirement it defines becomes ACTIVE with its
// text, excerpt, properties, dependencies and issue links; requirements it
// no longer defines become DELETED, or MOVED when the page went to another
// space and still defines them. Only rows that change are written; the
// outbound messages of the changes are written in the same commit, after
// their rows. When an earlier operation on the page did not finish, its
// stored version is redone first (finish).
// A body that does not parse is an invalid error, and nothing is stored.
func (s *Service) SavePage(ctx context.Context, tenant, actor string, in PageInput) (*Result, error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	parsed, err := page.Parse(in.Body)
	if err != nil {
		return nil, fmt.Errorf("parse page %s: %w", in.ID, err)
	}
	old, err := s.store.Page(ctx, tenant, in.ID)
	if errors.Is(err, apperr.ErrNotFound) {
		old, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read page %s: %w", in.ID, err)
	}
	version := 0
	if old != nil {
		version = old.Version
	}
	// The lease comes before anything else is read or written: a
	// concurrent operation on the page holds it (or has changed the page
	// since it was read), and this save is refused having written nothing.
	lease, err := s.store.LeasePage(ctx, tenant, in.ID, version)
	if err != nil {
		return nil, err
	}
	if lease.Unfinished {
		// An operation that did not finish may have written rows without
		// the outbound messages that report them (a commit writes messages
		// after their rows): a save compared with those rows would find
		// nothing to report. The stored version is redone first, as a
		// recovery would, so this save's messages are computed against
		// rows the trackers heard of.
		if lease, err = s.finish(ctx, tenant, old, lease); err != nil {
			return nil, err
		}
	}
	ended := false
	defer s.release(ctx, tenant, lease, &ended)
	pg := &Page{
		ID: in.ID, SpaceKey: in.SpaceKey, Title: in.Title, ParentID: in.ParentID,
		Version: version + 1, Body: in.Body, UpdatedAt: s.Now().UTC(), UpdatedBy: actor,
	}
	return s.index(ctx, tenant, actor, pg, parsed, old, lease, &ended)
}

// hasIssueMacros reports whether a parsed page defines a requirement with
// an issue macro.
func hasIssueMacros(parsed *page.Result) bool {
	return slices.ContainsFunc(parsed.Definitions, func(d page.Definition) bool { return len(d.Issues) > 0 })
}

// finish reconciles what an operation that did not finish left on a page
// (lease.Unfinished) before a save or a delete: the stored version old is
// redone (a page never committed, old nil, has the rows its first save
// wrote made DELETED), which ends the lease; then the page is leased again
// and the new lease returned.
func (s *Service) finish(ctx context.Context, tenant string, old *Page, lease *Lease) (*Lease, error) {
	if old == nil && len(lease.Leftover) == 0 {
		// A first save records its rows before writing any: nothing was
		// written.
		return lease, nil
	}
	ended := false
	var err error
	if old != nil {
		_, err = s.redo(ctx, tenant, old, lease, &ended)
	} else {
		err = s.deleteLeftovers(ctx, tenant, RecoveryActor, lease, &ended)
	}
	s.release(ctx, tenant, lease, &ended)
	if err != nil {
		return nil, err
	}
	version := 0
	if old != nil {
		version = old.Version
	}
	return s.store.LeasePage(ctx, tenant, lease.PageID, version)
}

// redo re-applies the stored version of a page, under lease: every row
// becomes what that version defines, as its save made it, whatever an
// operation that did not finish wrote (Lease.Unfinished). The page item
// keeps its version, author and time.
func (s *Service) redo(ctx context.Context, tenant string, old *Page, lease *Lease, ended *bool) (*Result, error) {
	parsed, err := page.Parse(old.Body)
	if err != nil {
		return nil, fmt.Errorf("parse stored page %s: %w", old.ID, err)
	}
	pg := *old
	pg.Keys = nil
	return s.index(ctx, tenant, old.UpdatedBy, &pg, parsed, old, lease, ended)
}

// index indexes pg, the page's next version (or, when it has the stored
// version old's number, old itself again: redo) from its parsed body, under
// lease, and commits it.
func (s *Service) index(ctx context.Context, tenant, actor string, pg *Page, parsed *page.Result, old *Page, lease *Lease, ended *bool) (*Result, error) {
	redo := old != nil && pg.Version == old.Version
	now := s.Now().UTC()
	var ids []requirement.ID
	listed := map[requirement.ID]bool{} // the stored key list
	if old != nil {
		for _, k := range old.Keys {
			id := requirement.ID{SpaceKey: old.SpaceKey, Key: k}
			ids = append(ids, id)
			listed[id.Fold()] = true
		}
	}
	ids = append(ids, lease.Leftover...)
	for _, d := range parsed.Definitions {
		ids = append(ids, requirement.ID{SpaceKey: pg.SpaceKey, Key: d.Key})
	}
	// A page with issue macros needs the integrations (for its messages
	// and warnings): they are listed while the rows are read.
	var services []Integration
	var servicesErr error
	var listing sync.WaitGroup
	if hasIssueMacros(parsed) {
		listing.Go(func() { services, servicesErr = s.store.Integrations(ctx, tenant) })
	}
	stored, err := s.store.Requirements(ctx, tenant, ids)
	listing.Wait()
	if err != nil {
		return nil, fmt.Errorf("read requirements of page %s: %w", pg.ID, err)
	}
	if servicesErr != nil {
		return nil, fmt.Errorf("list integrations: %w", servicesErr)
	}

	p := newPlan(tenant, actor, now, stored)
	if hasIssueMacros(parsed) {
		p.services = append([]Integration{}, services...)
	}
	p.markBy.page, p.markBy.version = pg.ID, pg.Version
	if redo {
		// The stored version again: what a failed operation marked goes,
		// and the redo marks nothing itself.
		p.dropAfter = &old.Version
	} else {
		p.suspectFields = s.suspectFieldsOf(tenant)
	}
	p.leftoverEdges = lease.LeftoverEdges
	res := &Result{Page: pg, Duplicates: slices.Clone(parsed.Duplicates)}
	for _, d := range parsed.Definitions {
		st := stored[requirement.NewID(pg.SpaceKey, d.Key, 0)]
		if takenBy(st, pg.ID) {
			res.Duplicates = appendKey(res.Duplicates, d.Key)
			continue
		}
		r := &requirement.Requirement{
			SpaceKey: pg.SpaceKey, Key: d.Key, Status: requirement.Active,
			Text: d.Text, HTMLExcerpt: d.HTMLExcerpt, Properties: slices.Clone(d.Properties),
			Origin: pg.Ref(), Dependencies: resolve(d.Dependencies, pg.SpaceKey), Issues: pageLinks(d.Issues),
		}
		if st != nil {
			r.ReverseDependencies = slices.Clone(st.ReverseDependencies)
		}
		p.set(r)
		pg.Keys = append(pg.Keys, d.Key)
		res.Requirements = append(res.Requirements, KeyStatus{SpaceKey: r.SpaceKey, Key: r.Key, Status: r.Status})
	}
	moved := old != nil && old.SpaceKey != pg.SpaceKey
	if old != nil {
		for _, k := range old.Keys {
			id := requirement.NewID(old.SpaceKey, k, 0)
			st := stored[id]
			if p.has(id) || !ownedBy(st, pg.ID) {
				continue
			}
			r := st.Clone()
			r.Status = requirement.Deleted
			if to := requirement.NewID(pg.SpaceKey, k, 0); moved && p.has(to) {
				r.Status, r.NewSpaceKey, r.NewKey = requirement.Moved, pg.SpaceKey, p.next[to].Key
				// The issue links of the old space's row are not new to
				// the trackers: the MOVED message carries them over.
				p.prior[to] = st
			}
			p.set(r)
			res.Requirements = append(res.Requirements, KeyStatus{SpaceKey: r.SpaceKey, Key: r.Key, Status: r.Status})
		}
	}
	// Rows a failed save of this page wrote in another space (a move that
	// did not finish) move on like the old space's rows: MOVED when the
	// page still defines their key, DELETED below otherwise.
	for _, id := range lease.Leftover {
		id = id.Fold()
		st := stored[id]
		to := requirement.NewID(pg.SpaceKey, id.Key, 0)
		if id.SpaceKey == pg.SpaceKey || p.has(id) || !ownedBy(st, pg.ID) || !p.has(to) {
			continue
		}
		r := st.Clone()
		r.Status, r.NewSpaceKey, r.NewKey = requirement.Moved, pg.SpaceKey, p.next[to].Key
		if _, ok := p.prior[to]; !ok {
			p.prior[to] = st
		}
		p.set(r)
		res.Requirements = append(res.Requirements, KeyStatus{SpaceKey: r.SpaceKey, Key: r.Key, Status: r.Status})
	}
	res.Requirements = append(res.Requirements, p.deleteLeftover(lease.Leftover, stored, pg.ID)...)

	// Each side is the master of its own holds: the page's links are
	// exactly its macros; the links the tracker holds (reported through
	// its links callback) stay whatever the page says, until the tracker
	// reports otherwise.
	for _, id := range p.order {
		if r := p.next[id]; r.Status == requirement.Active {
			// The holds of the row as stored and of the row it replaces (the
			// old space's row of a moved requirement): a tracker that re-keys
			// a moved requirement's links merges them into the new key's.
			if st := p.stored[id]; st != nil {
				r.Issues = withTrackerHolds(r.Issues, st.Issues)
			}
			if before := p.before(id); before != nil && before != p.stored[id] {
				r.Issues = withTrackerHolds(r.Issues, before.Issues)
			}
			// External properties are the requirement's, not the page's:
			// those of its ACTIVE row, as stored or (moved) in the old space.
			r.SetExternalProperties(carriedExternal(p.stored[id], p.prior[id]))
		}
	}
	if err := p.warn(ctx, s.store, res); err != nil {
		return nil, fmt.Errorf("index page %s: %w", pg.ID, err)
	}

	change, err := p.build(ctx, s.store)
	if err != nil {
		return nil, fmt.Errorf("index page %s: %w", pg.ID, err)
	}
	change.Lease, change.ExpectVersion = lease, lease.Version
	change.Pending, change.Reconciled = unlisted(pg, listed), true
	// A redo leaves the page item as stored, unless a key it listed is now
	// another page's.
	if !redo || !slices.Equal(pg.Keys, old.Keys) {
		change.PutPage = pg
	}
	if old == nil || moved {
		change.RegisterSpace = pg.SpaceKey
	}
	if err := s.commit(ctx, tenant, change, ended); err != nil {
		return nil, fmt.Errorf("save page %s: %w", pg.ID, err)
	}
	return res, nil
}

// DeletePage deletes a page; the requirements it defined become DELETED.
func (s *Service) DeletePage(ctx context.Context, tenant, actor, id string) error {
	if err := CheckContentID("contentId", id); err != nil {
		return err
	}
	old, err := s.loadPage(ctx, tenant, id)
	if errors.Is(err, apperr.ErrNotFound) {
		return s.deleteUnsaved(ctx, tenant, actor, id, err)
	}
	if err != nil {
		return err
	}
	lease, err := s.store.LeasePage(ctx, tenant, id, old.Version)
	if err != nil {
		return err
	}
	if lease.Unfinished {
		// As for a save (SavePage): the DELETED rows keep the page links
		// their rows hold, which trackers must have heard of.
		if lease, err = s.finish(ctx, tenant, old, lease); err != nil {
			return err
		}
	}
	ended := false
	defer s.release(ctx, tenant, lease, &ended)
	stored, err := s.store.Requirements(ctx, tenant, append(pageIDs(old), lease.Leftover...))
	if err != nil {
		return fmt.Errorf("read requirements of page %s: %w", id, err)
	}
	p := newPlan(tenant, actor, s.Now().UTC(), stored)
	p.suspectFields = s.suspectFieldsOf(tenant)
	p.markBy.page, p.markBy.version = id, old.Version+1
	p.leftoverEdges = lease.LeftoverEdges
	for _, k := range old.Keys {
		if st := stored[requirement.NewID(old.SpaceKey, k, 0)]; ownedBy(st, id) {
			r := st.Clone()
			r.Status = requirement.Deleted
			p.set(r)
		}
	}
	p.deleteLeftover(lease.Leftover, stored, id)
	change, err := p.build(ctx, s.store)
	if err != nil {
		return fmt.Errorf("unindex page %s: %w", id, err)
	}
	change.DeletePage, change.ExpectVersion, change.Lease, change.Reconciled = id, old.Version, lease, true
	if err := s.commit(ctx, tenant, change, &ended); err != nil {
		return fmt.Errorf("delete page %s: %w", id, err)
	}
	return nil
}

// deleteUnsaved deletes a page that has never been saved, whose first save
// may have failed half way: its rows are only known from the record that
// save left (Lease.Leftover), and become DELETED. A page without such a
// record is not found (notFound).
func (s *Service) deleteUnsaved(ctx context.Context, tenant, actor, id string, notFound error) error {
	lease, err := s.store.LeasePage(ctx, tenant, id, 0)
	if err != nil {
		return err
	}
	ended := false
	defer s.release(ctx, tenant, lease, &ended)
	if len(lease.Leftover) == 0 {
		// Nothing was recorded, so nothing was written: the placeholder
		// goes, however its operation ended.
		lease.Unfinished = false
		return notFound
	}
	return s.deleteLeftovers(ctx, tenant, actor, lease, &ended)
}

// deleteLeftovers makes DELETED, under lease, the rows a page that was
// never committed owns among the lease's leftovers (what its failed first
// save wrote), and deletes the page's placeholder.
func (s *Service) deleteLeftovers(ctx context.Context, tenant, actor string, lease *Lease, ended *bool) error {
	id := lease.PageID
	stored, err := s.store.Requirements(ctx, tenant, lease.Leftover)
	if err != nil {
		return fmt.Errorf("read requirements of page %s: %w", id, err)
	}
	p := newPlan(tenant, actor, s.Now().UTC(), stored)
	p.leftoverEdges = lease.LeftoverEdges
	p.deleteLeftover(lease.Leftover, stored, id)
	change, err := p.build(ctx, s.store)
	if err != nil {
		return fmt.Errorf("unindex page %s: %w", id, err)
	}
	change.DeletePage, change.Lease, change.Reconciled = id, lease, true
	if err := s.commit(ctx, tenant, change, ended); err != nil {
		return fmt.Errorf("delete page %s: %w", id, err)
	}
	return nil
}

// deleteLeftover makes DELETED the rows among a lease's leftovers (rows a
// failed operation on page pageID may have written) that this page still
// owns and the plan does not define, and returns their statuses.
func (p *plan) deleteLeftover(leftover []requirement.ID, stored map[requirement.ID]*requirement.Requirement, pageID string) []KeyStatus {
	var out []KeyStatus
	for _, id := range leftover {
		id = id.Fold()
		st := stored[id]
		if p.has(id) || !ownedBy(st, pageID) || st.Status != requirement.Active {
			continue
		}
		r := st.Clone()
		r.Status = requirement.Deleted
		// Trackers keep the links of a deleted requirement, and a save
		// that defines it again tells them only of links its row did not
		// have. This row was written by an operation that did not finish,
		// perhaps without the messages of its links: it keeps none of its
		// page links, so that a later save tells every one again (a link a
		// tracker did hear of is then told twice, which it ignores).
		r.Issues = slices.DeleteFunc(r.Issues, func(l requirement.IssueLink) bool { return l.Page })
		p.set(r)
		out = append(out, KeyStatus{SpaceKey: r.SpaceKey, Key: r.Key, Status: r.Status})
	}
	return out
}

// unlisted returns the ids of the requirements pg defines that the stored
// key list (listed, normalised ids) does not name: what a commit records as
// pending before writing rows.
func unlisted(pg *Page, listed map[requirement.ID]bool) []requirement.ID {
	var out []requirement.ID
	for _, k := range pg.Keys {
		if id := (requirement.ID{SpaceKey: pg.SpaceKey, Key: k}); !listed[id.Fold()] {
			out = append(out, id)
		}
	}
	return out
}

// pageIDs returns the ids of the requirements a page owns.
func pageIDs(pg *Page) []requirement.ID {
	ids := make([]requirement.ID, 0, len(pg.Keys))
	for _, k := range pg.Keys {
		ids = append(ids, requirement.ID{SpaceKey: pg.SpaceKey, Key: k})
	}
	return ids
}

// resolve gives every dependency its space (a link without spaceKey is to
// the page's space) and drops the duplicates that this reveals.
func resolve(deps []requirement.Dependency, space string) []requirement.Dependency {
	var out []requirement.Dependency
	type depKey struct {
		target       requirement.ID
		relationship string
	}
	seen := map[depKey]bool{}
	for _, d := range deps {
		if d.SpaceKey == "" {
			d.SpaceKey = space
		}
		k := depKey{d.Target(), d.Relationship}
		if !seen[k] {
			seen[k] = true
			out = append(out, d)
		}
	}
	return out
}

// pageLinks returns the links of a definition's issue macros as links the
// page holds, each link once.
func pageLinks(macros []requirement.IssueLink) []requirement.IssueLink {
	var out []requirement.IssueLink
	for _, l := range macros {
		l.Page, l.Tracker = true, false
		if !slices.ContainsFunc(out, func(o requirement.IssueLink) bool { return requirement.SameIssueLink(o, l) }) {
			out = append(out, l)
		}
	}
	return out
}

// withTrackerHolds returns the page's links (holds: the page), each also
// held by the tracker when stored says so, followed by the stored links
// the tracker holds that the page does not have.
func withTrackerHolds(page, stored []requirement.IssueLink) []requirement.IssueLink {
	out := page
	for _, l := range stored {
		if !l.Tracker {
			continue
		}
		i := slices.IndexFunc(out, func(o requirement.IssueLink) bool { return requirement.SameIssueLink(o, l) })
		if i >= 0 {
			out[i].Tracker = true
			continue
		}
		l.Page = false
		out = append(out, l)
	}
	return out
}

// warn lists, in res, the issue macros of ACTIVE rows whose serverId names
// no integration (or that name none while the wiki has no integration).
func (p *plan) warn(ctx context.Context, store Store, res *Result) error {
	var services map[string]bool
	for _, id := range p.order {
		r := p.next[id]
		if r.Status != requirement.Active {
			continue
		}
		for _, l := range r.Issues {
			if !l.Page {
				continue
			}
			if services == nil {
				list, err := p.integrations(ctx, store)
				if err != nil {
					return err
				}
				services = map[string]bool{}
				for _, s := range list {
					services[s.ServiceID] = true
				}
			}
			switch {
			case l.ServiceID == "" && len(services) == 0:
				res.Warnings = append(res.Warnings, Warning{Key: r.Key,
					Message: fmt.Sprintf("no integration for issue %s: the wiki has none yet", l.IssueKey)})
			case l.ServiceID != "" && !services[l.ServiceID]:
				res.Warnings = append(res.Warnings, Warning{Key: r.Key,
					Message: fmt.Sprintf("no integration '%s' for issue %s", l.ServiceID, l.IssueKey)})
			}
		}
	}
	return nil
}

// carriedExternal returns the external properties a requirement keeps when
// its page is saved: those of the first ACTIVE row among rows (its stored
// row, then the row it replaces, the old space's of a moved requirement).
// Rows that are not ACTIVE hold none.
func carriedExternal(rows ...*requirement.Requirement) []requirement.Property {
	for _, r := range rows {
		if r != nil && r.Status == requirement.Active {
			return r.ExternalProperties()
		}
	}
	return nil
}

// appendKey appends k unless it is already listed.
func appendKey(keys []string, k string) []string {
	if slices.Contains(keys, k) {
		return keys
	}
	return append(keys, k)
}

// suspectFieldsOf reads the tenant's suspectFields when an operation first
// needs them (a row changed that was ACTIVE): saves that only add
// requirements read nothing more.
func (s *Service) suspectFieldsOf(tenant string) func(context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) { return s.store.SuspectFields(ctx, tenant) }
}
