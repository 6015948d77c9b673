package wiki

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// plan collects the rows one page operation owns, in their state before
// (stored) and after (next), and turns them into a Change: reverse
// dependency edits, the rows that really changed, and their messages.
type plan struct {
	tenant string
	actor  string
	now    time.Time

	// stored are the rows read, by normalized id (stubs included).
	stored map[requirement.ID]*requirement.Requirement
	// next are the rows the operation owns, in their new state.
	next  map[requirement.ID]*requirement.Requirement
	order []requirement.ID // ids of next, in the order they were set
	// prior is, when it differs from stored, the previous incarnation of a
	// row: the old space's row of a moved requirement. Issue links already
	// on it are not new.
	prior map[requirement.ID]*requirement.Requirement
	// leftoverEdges are the reverse dependencies a failed operation on the
	// page may have left (Lease.LeftoverEdges): build sets each one as the
	// rows of this operation say.
	leftoverEdges []Edge
	// services are the tenant's integrations, once listed.
	services []Integration
	// suspectFields are the fields whose change makes links suspect; nil
	// for operations that mark nothing (reindex, page view, recovery).
	suspectFields func(context.Context) ([]string, error)
	// markBy names the operation's marks: its page and the version it
	// writes.
	markBy struct {
		page    string
		version int
	}
	// dropAfter, for the redo of a page's stored version, names that
	// version: the marks a failed operation on the page made after it go
	// (from the operation's rows, and through Change.DropSuspects from
	// the rows of other pages that reference them).
	dropAfter *int
	// causes are the suspectFields each changed row changed in (rows
	// whose change made links suspect).
	causes map[requirement.ID][]string
}

func newPlan(tenant, actor string, now time.Time, stored map[requirement.ID]*requirement.Requirement) *plan {
	return &plan{
		tenant: tenant, actor: actor, now: now, stored: stored,
		next: map[requirement.ID]*requirement.Requirement{}, prior: map[requirement.ID]*requirement.Requirement{},
	}
}

// set records the new state of a row. A row that is not ACTIVE has no
// external properties: they go when the requirement is DELETED, and move
// with it to its new row when it is MOVED.
func (p *plan) set(r *requirement.Requirement) {
	if r.Status != requirement.Active {
		r.DropExternalProperties()
	}
	id := r.ID()
	if _, ok := p.next[id]; !ok {
		p.order = append(p.order, id)
	}
	p.next[id] = r
}

// has reports whether the operation owns the row id.
func (p *plan) has(id requirement.ID) bool { _, ok := p.next[id]; return ok }

// before returns the row a message compares with.
func (p *plan) before(id requirement.ID) *requirement.Requirement {
	if r, ok := p.prior[id]; ok {
		return r
	}
	return p.stored[id]
}

// edge is one dependency of an ACTIVE requirement, seen from its target.
type edge struct {
	target requirement.ID
	source requirement.Dependency // the referencing requirement and the relationship
}

// edges returns the dependency edges of r: only an ACTIVE row references
// anything (a DELETED or MOVED row keeps its dependencies for history but
// they no longer count as references).
func edges(r *requirement.Requirement) map[edge]bool {
	if r == nil || r.Status != requirement.Active || len(r.Dependencies) == 0 {
		return nil
	}
	out := make(map[edge]bool, len(r.Dependencies))
	for _, d := range r.Dependencies {
		out[edge{
			target: requirement.NewID(d.SpaceKey, d.Key, 0),
			source: requirement.Dependency{SpaceKey: r.SpaceKey, Key: r.Key, Relationship: d.Relationship},
		}] = true
	}
	return out
}

// rdepEdit accumulates the changes to one target's reverse dependencies.
type rdepEdit struct {
	add, remove map[requirement.Dependency]bool
}

// build computes the change. It lists the tenant's integrations only when a
// message may be needed (a written row has issue links before or after).
func (p *plan) build(ctx context.Context, store Store) (*Change, error) {
	c := &Change{}
	// Reverse dependencies: diff the edges of every owned row.
	edits := map[requirement.ID]*rdepEdit{}
	for _, id := range p.order {
		before, after := edges(p.stored[id]), edges(p.next[id])
		for e := range before {
			if !after[e] {
				editOf(edits, e.target).remove[e.source] = true
			}
		}
		for e := range after {
			if !before[e] {
				editOf(edits, e.target).add[e.source] = true
			}
		}
	}
	// Edges a failed operation may have left: set each as the rows say.
	// Their sources are rows of the page, which the operation read (its
	// key list and leftover rows): a source it does not write keeps its
	// stored edges, and one that does not exist has none.
	for _, le := range p.leftoverEdges {
		src := requirement.NewID(le.Source.SpaceKey, le.Source.Key, 0)
		n, ok := p.next[src]
		if !ok {
			n = p.stored[src]
		}
		e := edge{target: le.Target.Fold(), source: le.Source}
		if edges(n)[e] {
			editOf(edits, e.target).add[e.source] = true // idempotent
		} else {
			editOf(edits, e.target).remove[e.source] = true
		}
	}
	targets := make([]requirement.ID, 0, len(edits))
	for id := range edits {
		targets = append(targets, id)
	}
	slices.SortFunc(targets, compareIDs)
	for _, id := range targets {
		e := edits[id]
		if r, ok := p.next[id]; ok {
			// A row this operation writes anyway carries its new set.
			r.ReverseDependencies = applyRDeps(r.ReverseDependencies, e)
			continue
		}
		c.RDeps = append(c.RDeps, RDepEdit{Target: id, Add: deps(e.add), Remove: deps(e.remove)})
	}
	p.rebuildInPageRDeps()
	outside, err := p.markSuspects(ctx)
	if err != nil {
		return nil, err
	}
	c.DropSuspects = p.dropOutside()

	// Rows: only the changed ones are written.
	for _, id := range p.order {
		p.setLinksVersion(id)
	}
	type written struct {
		write            int
		prior, old, next *requirement.Requirement
	}
	var ws []written
	needServices := false
	for _, id := range p.order {
		old, n := p.stored[id], p.next[id]
		if sameRow(old, n) {
			continue
		}
		c.Writes = append(c.Writes, Write{Old: old, New: n, Suspects: outside[id]})
		w := written{write: len(c.Writes) - 1, prior: p.before(id), old: old, next: n}
		ws = append(ws, w)
		needServices = needServices || hasLinks(w.prior) || hasLinks(old) || hasLinks(n)
	}
	if !needServices {
		return c, nil
	}
	services, err := p.integrations(ctx, store)
	if err != nil {
		return nil, err
	}
	var pending []pendingMessage
	for _, w := range ws {
		pending = append(pending, p.messages(w.write, w.prior, w.old, w.next, services, c)...)
	}
	// Trackers hear about rows leaving (MOVED, DELETED) before they hear
	// about the rows that replace them.
	slices.SortStableFunc(pending, func(a, b pendingMessage) int {
		return cmp.Compare(leaving(a.msg.Type), leaving(b.msg.Type))
	})
	p.route(c, pending)
	return c, nil
}

// markSuspects carries the stored suspect marks of the operation's rows
// over (those of links still there) and, when the operation marks, adds
// the marks its changes cause (docs/change-analysis.md, "Suspect links"):
// a row that was ACTIVE and changes in one of the suspectFields marks its
// own issue links, and the dependencies on it of every requirement that
// references it. Marks on rows of the operation go into their writes; the
// others are returned by the id of the changed row whose write carries
// them, each row once (its first cause in the operation's order), so that
// no transaction updates a row twice. Everything derives from the rows'
// stored and new states: redoing the operation marks the same links.
func (p *plan) markSuspects(ctx context.Context) (map[requirement.ID][]SuspectEdit, error) {
	for _, id := range p.order {
		n := p.next[id]
		if st := p.stored[id]; st != nil && st != n {
			n.Suspects = requirement.MergeSuspects(st.Suspects, n.Suspects)
		}
		n.Suspects = n.KeepLiveSuspects()
		if p.dropAfter != nil {
			n.Suspects = slices.DeleteFunc(n.Suspects, func(m requirement.Suspect) bool { return m.MadeAfter(p.markBy.page, *p.dropAfter) })
		}
	}
	if p.suspectFields == nil {
		return nil, nil
	}
	var fields []string
	out := map[requirement.ID][]SuspectEdit{}
	edited := map[requirement.ID]requirement.ID{} // row outside → the write carrying its marks
	for _, id := range p.order {
		before, n := p.before(id), p.next[id]
		if before == nil || before.Status != requirement.Active || sameRow(before, n) ||
			len(n.Issues) == 0 && len(n.ReverseDependencies) == 0 {
			continue // nothing changed, or nothing to mark: no settings read
		}
		if fields == nil {
			var err error
			if fields, err = p.suspectFields(ctx); err != nil {
				return nil, fmt.Errorf("read suspect fields: %w", err)
			}
			if fields == nil {
				fields = []string{}
			}
		}
		cause := requirement.SuspectCause(before, n, fields)
		if len(cause) == 0 {
			continue
		}
		var own []requirement.Suspect
		for _, l := range n.Issues {
			own = append(own, requirement.Suspect{IssueKey: strings.ToUpper(l.IssueKey), Since: p.now, Fields: cause,
				Page: p.markBy.page, Version: p.markBy.version})
		}
		n.Suspects = requirement.MergeSuspects(n.Suspects, own)
		if p.causes == nil {
			p.causes = map[requirement.ID][]string{}
		}
		p.causes[id] = cause
		for _, d := range n.ReverseDependencies {
			src := requirement.NewID(d.SpaceKey, d.Key, 0)
			mark := requirement.Suspect{Target: id.Current(), Since: p.now, Fields: cause, Page: p.markBy.page, Version: p.markBy.version}
			if r, ok := p.next[src]; ok {
				if r.Status == requirement.Active && slices.ContainsFunc(r.Dependencies, func(x requirement.Dependency) bool { return x.Target() == id.Current() }) {
					r.Suspects = requirement.MergeSuspects(r.Suspects, []requirement.Suspect{mark})
				}
				continue
			}
			carrier, ok := edited[src]
			if !ok {
				carrier, edited[src] = id, id
				out[carrier] = append(out[carrier], SuspectEdit{Row: requirement.ID{SpaceKey: d.SpaceKey, Key: d.Key}})
			}
			for i := range out[carrier] {
				if out[carrier][i].Row.Fold() == src && !slices.ContainsFunc(out[carrier][i].Marks, func(m requirement.Suspect) bool { return m.Target == mark.Target }) {
					out[carrier][i].Marks = append(out[carrier][i].Marks, mark)
				}
			}
		}
	}
	return out, nil
}

// dropOutside returns, for a redo, the rows of other pages that reference
// the operation's rows: a failed operation may have marked them.
func (p *plan) dropOutside() *DropSuspects {
	if p.dropAfter == nil {
		return nil
	}
	d := &DropSuspects{Page: p.markBy.page, After: *p.dropAfter}
	seen := map[requirement.ID]bool{}
	for _, id := range p.order {
		for _, src := range p.next[id].ReverseDependencies {
			sid := requirement.NewID(src.SpaceKey, src.Key, 0)
			if !p.has(sid) && !seen[sid] {
				seen[sid] = true
				d.Rows = append(d.Rows, requirement.ID{SpaceKey: src.SpaceKey, Key: src.Key})
			}
		}
	}
	if len(d.Rows) == 0 {
		return nil
	}
	return d
}

// integrations lists the tenant's integrations once per operation.
func (p *plan) integrations(ctx context.Context, store Store) ([]Integration, error) {
	if p.services == nil {
		list, err := store.Integrations(ctx, p.tenant)
		if err != nil {
			return nil, fmt.Errorf("list integrations: %w", err)
		}
		p.services = append([]Integration{}, list...)
	}
	return p.services, nil
}

func hasLinks(r *requirement.Requirement) bool { return r != nil && len(r.Issues) > 0 }

// setLinksVersion sets the links version of an ACTIVE row of the
// operation: the highest of its stored row and previous incarnation, plus
// one when the links the page holds changed.
func (p *plan) setLinksVersion(id requirement.ID) {
	n := p.next[id]
	if n.Status != requirement.Active {
		return
	}
	var v int64
	before := p.before(id)
	for _, r := range []*requirement.Requirement{p.stored[id], before} {
		if r != nil {
			v = max(v, r.LinksVersion)
		}
	}
	if !samePageLinks(before, n) || !samePageLinks(p.stored[id], n) {
		v++
	}
	n.LinksVersion = v
}

// samePageLinks reports whether a and b hold the same page links (nil and
// a row that is not ACTIVE hold none).
func samePageLinks(a, b *requirement.Requirement) bool {
	return sameLinks(pageHeld(a), pageHeld(b), linkID)
}

func pageHeld(r *requirement.Requirement) []requirement.IssueLink {
	if r == nil || r.Status != requirement.Active {
		return nil
	}
	var out []requirement.IssueLink
	for _, l := range r.Issues {
		if l.Page {
			out = append(out, l)
		}
	}
	return out
}

// sameLinks reports whether a and b hold the same links, each named by id
// (duplicates and order aside).
func sameLinks(a, b []requirement.IssueLink, id func(requirement.IssueLink) linkKey) bool {
	x, y := map[linkKey]bool{}, map[linkKey]bool{}
	for _, l := range a {
		x[id(l)] = true
	}
	for _, l := range b {
		y[id(l)] = true
	}
	return maps.Equal(x, y)
}

func leaving(t outbox.Type) int {
	if t == outbox.Moved || t == outbox.Deleted {
		return 0
	}
	return 1
}

func editOf(edits map[requirement.ID]*rdepEdit, id requirement.ID) *rdepEdit {
	e, ok := edits[id]
	if !ok {
		e = &rdepEdit{add: map[requirement.Dependency]bool{}, remove: map[requirement.Dependency]bool{}}
		edits[id] = e
	}
	return e
}

// deps returns the members of set in order (space, key, relationship).
func deps(set map[requirement.Dependency]bool) []requirement.Dependency {
	out := make([]requirement.Dependency, 0, len(set))
	for d := range set {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b requirement.Dependency) int {
		return cmp.Or(strings.Compare(a.SpaceKey, b.SpaceKey), strings.Compare(a.Key, b.Key), strings.Compare(a.Relationship, b.Relationship))
	})
	return out
}

// applyRDeps returns the set rdeps with e applied, sorted.
// rebuildInPageRDeps sets, in every row of the operation, the reverse
// dependencies whose source is also a row of the operation to exactly the
// edges of those rows, whatever was stored: a failed save may have written
// a target row without the row that references it (both of the page), and
// the diff of the next save, blind to it, would leave an entry extra or
// missing for good. Entries from other pages' rows are kept as they are.
func (p *plan) rebuildInPageRDeps() {
	in := map[requirement.ID]map[requirement.Dependency]bool{} // target → sources among rows of p
	for _, id := range p.order {
		for e := range edges(p.next[id]) {
			if _, ok := p.next[e.target]; ok {
				if in[e.target] == nil {
					in[e.target] = map[requirement.Dependency]bool{}
				}
				in[e.target][e.source] = true
			}
		}
	}
	for _, id := range p.order {
		r := p.next[id]
		set := in[id]
		if set == nil {
			set = map[requirement.Dependency]bool{}
		}
		for _, d := range r.ReverseDependencies {
			if _, ours := p.next[requirement.NewID(d.SpaceKey, d.Key, 0)]; !ours {
				set[d] = true
			}
		}
		if len(set) == 0 {
			r.ReverseDependencies = nil
		} else {
			r.ReverseDependencies = deps(set)
		}
	}
}

// Apply returns rdeps with e's additions and removals applied, sorted (nil
// when none is left): what a store makes of a row's reverse dependencies.
func (e RDepEdit) Apply(rdeps []requirement.Dependency) []requirement.Dependency {
	edit := &rdepEdit{add: map[requirement.Dependency]bool{}, remove: map[requirement.Dependency]bool{}}
	for _, d := range e.Add {
		edit.add[d] = true
	}
	for _, d := range e.Remove {
		edit.remove[d] = true
	}
	return applyRDeps(rdeps, edit)
}

func applyRDeps(rdeps []requirement.Dependency, e *rdepEdit) []requirement.Dependency {
	set := map[requirement.Dependency]bool{}
	for _, d := range rdeps {
		set[d] = true
	}
	for m := range e.remove {
		delete(set, m)
	}
	for m := range e.add {
		set[m] = true
	}
	if len(set) == 0 {
		return nil
	}
	return deps(set)
}

func compareIDs(a, b requirement.ID) int {
	return cmp.Or(cmp.Compare(a.SpaceKey, b.SpaceKey), cmp.Compare(a.Key, b.Key))
}

// pendingMessage is a message for one integration before it gets its id.
type pendingMessage struct {
	write int
	msg   outbox.Message
}

// messages returns what the integrations must hear about the write of n
// over old (prior is the previous incarnation: old, or the old space's row
// of a moved requirement), and adds to c the page link removals that
// integrations below version 5 cannot hear about:
//   - DELETED or MOVED when an ACTIVE row stops being active, to the
//     integrations of its issue links;
//   - UPDATED when an ACTIVE row changed, to the integrations of its issue
//     links before and after: below version 5 when its excerpt changed (as
//     spec 2.5 has it), from version 5 when its text, properties,
//     dependencies or status changed, naming them in changedFields;
//   - below version 5, LINK for every issue link that prior did not have;
//   - from version 5, LINKS with the whole set of page links to the
//     integration whenever that set changed.
func (p *plan) messages(write int, prior, old, n *requirement.Requirement, services []Integration, c *Change) []pendingMessage {
	var out []pendingMessage
	base := outbox.Message{
		State: outbox.New, AuthorKey: p.actor, AuthorName: p.actor,
		SpaceKey: n.SpaceKey, Key: n.Key,
	}
	emit := func(s Integration, m outbox.Message) {
		m.ServiceID = s.ServiceID
		out = append(out, pendingMessage{write: write, msg: m})
	}
	wasActive := old != nil && old.Status == requirement.Active
	switch {
	case n.Status == requirement.Deleted && wasActive:
		for _, s := range targets(services, old.Issues) {
			m := base
			m.Type = outbox.Deleted
			emit(s, m)
		}
	case n.Status == requirement.Moved && wasActive:
		moved := requirement.Requirement{SpaceKey: n.NewSpaceKey, Key: n.NewKey}
		for _, s := range targets(services, old.Issues) {
			m := base
			m.Type = outbox.Moved
			m.NewSpaceKey, m.NewKey = n.NewSpaceKey, n.NewKey
			m.NewURL = moved.GenericURL()
			emit(s, m)
		}
	case n.Status == requirement.Active:
		existed := prior != nil && prior.Status != ""
		if existed {
			links := append(slices.Clone(prior.Issues), n.Issues...)
			changed := changedFields(prior, n)
			for _, s := range targets(services, links) {
				m := base
				m.Type = outbox.Updated
				m.NewHTMLExcerpt = n.HTMLExcerpt
				m.NewURL = n.GenericURL()
				switch {
				case s.Version >= LinksVersion && len(changed) > 0:
					m.ChangedFields = changed
					m.SuspectFields = p.causes[n.ID()]
					emit(s, m)
				case s.Version < LinksVersion && (prior.HTMLExcerpt != n.HTMLExcerpt || prior.Status != n.Status):
					// A requirement defined again after it was DELETED is
					// told even when its excerpt is the same: the UPDATED
					// message clears the tracker's deleted flag.
					emit(s, m)
				}
			}
		}
		for _, s := range services {
			// What the tracker may hold: the page links of the previous
			// incarnation, also when it is DELETED (trackers keep the
			// links of deleted requirements).
			var before []requirement.IssueLink
			if existed {
				before = prior.PageLinksFor(s.ServiceID)
			}
			// A move onto a key the tracker still holds links of (a
			// deleted row's) merges both there: compare with both.
			if old != nil && old != prior && old.Status != "" {
				before = append(before, old.PageLinksFor(s.ServiceID)...)
			}
			after := n.PageLinksFor(s.ServiceID)
			if s.Version >= LinksVersion {
				if !sameLinks(before, after, issueID) {
					emit(s, outbox.LinksOf(p.actor, n, s.ServiceID))
				}
				continue
			}
			c.addRemovals(s.ServiceID, before, after)
			known := map[linkKey]bool{}
			if existed {
				for _, l := range prior.Issues {
					known[issueID(l)] = true
				}
			}
			for _, l := range n.Issues {
				if l.ServiceID != "" && l.ServiceID != s.ServiceID || known[issueID(l)] {
					continue
				}
				known[issueID(l)] = true
				emit(s, outbox.LinkOf(p.actor, n, s.ServiceID, l))
			}
		}
	}
	return out
}

// LinksVersion is the API version from which integrations get LINKS
// messages (and UPDATED messages with changedFields).
const LinksVersion = 5

// changedFields names what a version-5 UPDATED message reports: the
// fields of prior that n changes.
func changedFields(prior, n *requirement.Requirement) []string {
	var out []string
	if prior.Text != n.Text || prior.HTMLExcerpt != n.HTMLExcerpt {
		out = append(out, "text")
	}
	if !slices.Equal(prior.Properties, n.Properties) {
		out = append(out, "properties")
	}
	if !slices.Equal(prior.Dependencies, n.Dependencies) {
		out = append(out, "dependencies")
	}
	if prior.Status != n.Status {
		out = append(out, "status")
	}
	return out
}

// addRemovals counts the page links of before that after no longer has,
// for an integration that cannot be told (below version 5).
func (c *Change) addRemovals(serviceID string, before, after []requirement.IssueLink) {
	now := map[linkKey]bool{}
	for _, l := range after {
		now[issueID(l)] = true
	}
	for _, l := range before {
		if !now[issueID(l)] {
			if c.PendingRemovals == nil {
				c.PendingRemovals = map[string]int{}
			}
			c.PendingRemovals[serviceID]++
		}
	}
}

// linkKey names an issue link in a set: integration, issue key folded
// (issue keys are unique ignoring case), relationship.
type linkKey struct{ serviceID, issueKey, relationship string }

// linkID identifies a link (integration, issue key, relationship).
func linkID(l requirement.IssueLink) linkKey {
	return linkKey{l.ServiceID, strings.ToUpper(l.IssueKey), l.Relationship}
}

// issueID identifies a link to a tracker whatever the integration its
// macro named (issue key, relationship): what the tracker sees.
func issueID(l requirement.IssueLink) linkKey {
	return linkKey{"", strings.ToUpper(l.IssueKey), l.Relationship}
}

// targets returns the existing integrations that links name: all of them
// when one link names none (a jira macro without serverId goes to every
// integration).
func targets(services []Integration, links []requirement.IssueLink) []Integration {
	named := map[string]bool{}
	for _, l := range links {
		if l.ServiceID == "" {
			return services
		}
		named[l.ServiceID] = true
	}
	var out []Integration
	for _, s := range services {
		if named[s.ServiceID] {
			out = append(out, s)
		}
	}
	return out
}

// route gives the messages their ids and attaches them to their writes.
func (p *plan) route(c *Change, pending []pendingMessage) {
	for seq, pm := range pending {
		m := pm.msg
		// Ids sort by time: spread them by a nanosecond each so that the
		// order of the messages of one operation is kept.
		m.CreatedAt = p.now
		m.ID = outbox.NewID(p.now.Add(time.Duration(seq)))
		c.Writes[pm.write].Messages = append(c.Writes[pm.write].Messages, &m)
	}
}

// sameRow reports whether writing n over old would change nothing.
func sameRow(old, n *requirement.Requirement) bool {
	if old == nil || n == nil {
		return old == n
	}
	a, b := *old, *n
	if a.SpaceKey != b.SpaceKey || a.Key != b.Key || a.Baseline != b.Baseline || a.Status != b.Status ||
		a.Text != b.Text || a.HTMLExcerpt != b.HTMLExcerpt || a.HTMLNeedsUpdating != b.HTMLNeedsUpdating ||
		a.Origin != b.Origin || a.NewSpaceKey != b.NewSpaceKey || a.NewKey != b.NewKey {
		return false
	}
	if !slices.Equal(a.Properties, b.Properties) || !slices.Equal(a.Dependencies, b.Dependencies) ||
		!slices.Equal(a.Issues, b.Issues) || !requirement.SameSuspects(a.Suspects, b.Suspects) {
		return false
	}
	return sameSet(a.ReverseDependencies, b.ReverseDependencies)
}

func sameSet(a, b []requirement.Dependency) bool {
	x, y := map[requirement.Dependency]bool{}, map[requirement.Dependency]bool{}
	for _, d := range a {
		x[d] = true
	}
	for _, d := range b {
		y[d] = true
	}
	if len(x) != len(y) {
		return false
	}
	for m := range x {
		if !y[m] {
			return false
		}
	}
	return true
}
