package wiki

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/page"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Reindex is the spec's status-only reindex of a stored page: each
// requirement its body defines becomes ACTIVE (with this page as origin) and
// each one it no longer defines becomes DELETED. Excerpts, texts,
// properties, dependencies and issue links are not touched; a requirement
// whose excerpt may differ from the body (it was not ACTIVE on this page,
// or its stored text, excerpt or properties differ from the body's) is
// flagged with HTMLNeedsUpdating, for the next page view to gather.
func (s *Service) Reindex(ctx context.Context, tenant, actor, id string) (*Result, error) {
	if err := CheckContentID("contentId", id); err != nil {
		return nil, err
	}
	pg, err := s.loadPage(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	parsed, err := page.Parse(pg.Body)
	if err != nil {
		return nil, fmt.Errorf("parse stored page %s: %w", id, err)
	}
	// Like a save, the reindex holds the page's lease from before it reads
	// the rows until its last write: it never interleaves with a save.
	lease, err := s.store.LeasePage(ctx, tenant, id, pg.Version)
	if err != nil {
		return nil, err
	}
	ended := false
	defer s.release(ctx, tenant, lease, &ended)
	if lease.Unfinished {
		// Rows an operation that did not finish wrote may hold another
		// version's text: a status-only pass would keep it.
		return s.redo(ctx, tenant, pg, lease, &ended)
	}
	ids := append(pageIDs(pg), lease.Leftover...)
	for _, d := range parsed.Definitions {
		ids = append(ids, requirement.ID{SpaceKey: pg.SpaceKey, Key: d.Key})
	}
	stored, err := s.store.Requirements(ctx, tenant, ids)
	if err != nil {
		return nil, fmt.Errorf("read requirements of page %s: %w", id, err)
	}

	p := newPlan(tenant, actor, s.Now().UTC(), stored)
	p.leftoverEdges = lease.LeftoverEdges
	next := *pg
	next.Keys = nil
	res := &Result{Page: &next, Duplicates: slices.Clone(parsed.Duplicates)}
	for _, d := range parsed.Definitions {
		st := stored[requirement.NewID(pg.SpaceKey, d.Key, 0)]
		if takenBy(st, pg.ID) {
			res.Duplicates = appendKey(res.Duplicates, d.Key)
			continue
		}
		var r *requirement.Requirement
		switch {
		case st == nil || st.Status == "":
			r = &requirement.Requirement{
				SpaceKey: pg.SpaceKey, Key: d.Key, Status: requirement.Active,
				Origin: pg.Ref(), HTMLNeedsUpdating: true,
			}
			if st != nil {
				r.ReverseDependencies = slices.Clone(st.ReverseDependencies)
			}
		case !ownedBy(st, pg.ID):
			r = st.Clone()
			r.Status, r.Origin, r.HTMLNeedsUpdating = requirement.Active, pg.Ref(), true
			r.NewSpaceKey, r.NewKey = "", ""
		default:
			r = st.Clone()
			r.HTMLNeedsUpdating = st.HTMLNeedsUpdating || excerptDiffers(st, &d)
		}
		p.set(r)
		next.Keys = append(next.Keys, d.Key)
		res.Requirements = append(res.Requirements, KeyStatus{SpaceKey: r.SpaceKey, Key: r.Key, Status: r.Status, HTMLNeedsUpdating: r.HTMLNeedsUpdating})
	}
	for _, k := range pg.Keys {
		id := requirement.NewID(pg.SpaceKey, k, 0)
		st := stored[id]
		if p.has(id) || !ownedBy(st, pg.ID) {
			continue
		}
		r := st.Clone()
		r.Status = requirement.Deleted
		p.set(r)
		res.Requirements = append(res.Requirements, KeyStatus{SpaceKey: r.SpaceKey, Key: r.Key, Status: r.Status, HTMLNeedsUpdating: r.HTMLNeedsUpdating})
	}
	res.Requirements = append(res.Requirements, p.deleteLeftover(lease.Leftover, stored, pg.ID)...)

	change, err := p.build(ctx, s.store)
	if err != nil {
		return nil, fmt.Errorf("reindex page %s: %w", id, err)
	}
	listed := map[requirement.ID]bool{}
	for _, id := range pageIDs(pg) {
		listed[id.Fold()] = true
	}
	change.Lease, change.ExpectVersion = lease, pg.Version
	change.Pending, change.Reconciled = unlisted(&next, listed), true
	if !slices.Equal(next.Keys, pg.Keys) {
		change.PutPage = &next
	}
	if err := s.commit(ctx, tenant, change, &ended); err != nil {
		return nil, fmt.Errorf("reindex page %s: %w", id, err)
	}
	return res, nil
}

// excerptDiffers reports whether what a page view would gather for r differs
// from what r holds.
func excerptDiffers(r *requirement.Requirement, d *page.Definition) bool {
	return r.Text != d.Text || r.HTMLExcerpt != d.HTMLExcerpt || !slices.Equal(r.PageProperties(), d.Properties)
}

// ViewPage is the page view: the requirements the page defines, in page
// order. For those flagged HTMLNeedsUpdating it first gathers the text,
// excerpt and properties from the stored body, saves them and clears the
// flag (with an UPDATED message when an excerpt that trackers show changed).
// A page of another space is not found.
func (s *Service) ViewPage(ctx context.Context, tenant, actor, space, id string) ([]*requirement.Requirement, error) {
	if err := CheckSpaceKey(space); err != nil {
		return nil, err
	}
	if err := CheckContentID("pageId", id); err != nil {
		return nil, err
	}
	pg, err := s.loadPage(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	if pg.SpaceKey != space {
		return nil, apperr.NotFoundf("page %s not found in space %s", id, space)
	}
	stored, err := s.store.Requirements(ctx, tenant, pageIDs(pg))
	if err != nil {
		return nil, fmt.Errorf("read requirements of page %s: %w", id, err)
	}
	var rows []*requirement.Requirement
	var flagged []*requirement.Requirement
	for _, k := range pg.Keys {
		st := stored[requirement.NewID(pg.SpaceKey, k, 0)]
		if st == nil || st.Status == "" {
			continue
		}
		rows = append(rows, st)
		if ownedBy(st, pg.ID) && st.HTMLNeedsUpdating {
			flagged = append(flagged, st)
		}
	}
	if len(flagged) == 0 {
		return rows, nil
	}

	parsed, err := page.Parse(pg.Body)
	if err != nil {
		return nil, fmt.Errorf("parse stored page %s: %w", id, err)
	}
	// Gathering writes rows of the page, so it takes the page's lease like
	// a save. When a save, delete or reindex of the page holds it (or has
	// changed the page since it was read), the view answers the rows as
	// read and gathers nothing: the flags stay for the next view (a save
	// clears them anyway).
	lease, err := s.store.LeasePage(ctx, tenant, id, pg.Version)
	if errors.Is(err, apperr.ErrConflict) {
		slog.InfoContext(ctx, "page view gathers nothing: the page is being written by another request",
			"tenant", tenant, "page", id, "flagged", len(flagged))
		return rows, nil
	}
	if err != nil {
		return nil, err
	}
	ended := false
	defer s.release(ctx, tenant, lease, &ended)
	// The flagged rows are read again under the lease: another view may
	// have gathered them since the first read.
	fresh, err := s.store.Requirements(ctx, tenant, idsOf(flagged))
	if err != nil {
		return nil, fmt.Errorf("read requirements of page %s: %w", id, err)
	}
	for i, r := range rows {
		if f, ok := fresh[r.ID()]; ok && f.Status != "" {
			rows[i] = f
		}
	}
	flagged = flagged[:0]
	for _, r := range rows {
		if ownedBy(r, pg.ID) && r.HTMLNeedsUpdating {
			flagged = append(flagged, r)
		}
	}
	if len(flagged) == 0 {
		return rows, nil
	}
	defs := make(map[requirement.ID]*page.Definition, len(parsed.Definitions))
	for i := range parsed.Definitions {
		d := &parsed.Definitions[i]
		defs[requirement.NewID(pg.SpaceKey, d.Key, 0)] = d
	}
	p := newPlan(tenant, actor, s.Now().UTC(), fresh)
	for _, st := range flagged {
		r := st.Clone()
		if d, ok := defs[st.ID()]; ok {
			r.Text, r.HTMLExcerpt = d.Text, d.HTMLExcerpt
			r.SetPageProperties(d.Properties) // the external ones stay
		}
		r.HTMLNeedsUpdating = false
		p.set(r)
	}
	change, err := p.build(ctx, s.store)
	if err != nil {
		return nil, fmt.Errorf("gather excerpts of page %s: %w", id, err)
	}
	change.Lease, change.ExpectVersion = lease, pg.Version
	if err := s.commit(ctx, tenant, change, &ended); err != nil {
		return nil, fmt.Errorf("gather excerpts of page %s: %w", id, err)
	}
	for i, r := range rows {
		if n, ok := p.next[r.ID()]; ok {
			rows[i] = n
		}
	}
	return rows, nil
}

// idsOf returns the ids of rows.
func idsOf(rows []*requirement.Requirement) []requirement.ID {
	ids := make([]requirement.ID, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, requirement.ID{SpaceKey: r.SpaceKey, Key: r.Key})
	}
	return ids
}
