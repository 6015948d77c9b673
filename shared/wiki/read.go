package wiki

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// MaxBaseline is the highest baseline number.
const MaxBaseline = 99999999

// Requirement returns the current row of a requirement (baseline 0), with
// one store read, or its archived copy in a baseline, with a second read
// in parallel: whether the baseline is committed (a copy of a baseline
// still freezing, failed or left over is invisible: "baseline N not
// found").
func (s *Service) Requirement(ctx context.Context, tenant, space, key string, baseline int) (*requirement.Requirement, error) {
	if err := CheckSpaceKey(space); err != nil {
		return nil, err
	}
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	if baseline < 0 || baseline > MaxBaseline {
		return nil, apperr.InvalidNamed("v", "v must be a baseline number between 1 and %d, got %d", MaxBaseline, baseline)
	}
	var (
		exists    = true
		existsErr error
		done      = make(chan struct{})
	)
	if baseline > 0 {
		go func() {
			defer close(done)
			exists, existsErr = s.store.BaselineExists(ctx, tenant, space, baseline)
		}()
	} else {
		close(done)
	}
	r, err := s.store.Requirement(ctx, tenant, requirement.ID{SpaceKey: space, Key: key, Baseline: baseline})
	<-done
	if existsErr != nil {
		return nil, fmt.Errorf("check baseline %d of %s: %w", baseline, space, existsErr)
	}
	if !exists {
		return nil, apperr.NotFoundf("baseline %d not found in space %s", baseline, space)
	}
	if errors.Is(err, apperr.ErrNotFound) {
		if baseline > 0 {
			return nil, apperr.Wrap(apperr.NotFoundf("requirement %s/%s not found in baseline %d", space, key, baseline), err)
		}
		return nil, apperr.Wrap(apperr.NotFoundf("requirement %s/%s not found", space, key), err)
	}
	if err != nil {
		return nil, fmt.Errorf("read requirement %s/%s: %w", space, key, err)
	}
	return r, nil
}

// References returns the pages citing r: the origin pages of the ACTIVE
// requirements that reference it (its reverse dependencies), each once,
// ordered by title then id. It reads the referencing rows, one store call
// per 100 of them.
func (s *Service) References(ctx context.Context, tenant string, r *requirement.Requirement) ([]requirement.PageRef, error) {
	if len(r.ReverseDependencies) == 0 {
		return []requirement.PageRef{}, nil
	}
	ids := make([]requirement.ID, 0, len(r.ReverseDependencies))
	for _, d := range r.ReverseDependencies {
		ids = append(ids, requirement.ID{SpaceKey: d.SpaceKey, Key: d.Key})
	}
	rows, err := s.store.Requirements(ctx, tenant, ids)
	if err != nil {
		return nil, fmt.Errorf("read references of %s/%s: %w", r.SpaceKey, r.Key, err)
	}
	seen := map[string]bool{}
	refs := []requirement.PageRef{}
	for _, id := range ids {
		src := rows[id.Fold()]
		if src == nil || src.Status != requirement.Active || src.Origin.PageID == "" || seen[src.Origin.PageID] {
			continue
		}
		seen[src.Origin.PageID] = true
		refs = append(refs, src.Origin)
	}
	slices.SortFunc(refs, func(a, b requirement.PageRef) int {
		return cmp.Or(cmp.Compare(a.Title, b.Title), cmp.Compare(a.PageID, b.PageID))
	})
	return refs, nil
}

// Linked returns the current rows of the requirements that rows reference
// and of those that reference them (stubs included, with an empty Status),
// keyed by ID.Fold(): what a traceability graph needs to go one level
// further out. Rows themselves are not read again; ids repeated across
// rows are read once (one store call per 100 ids).
func (s *Service) Linked(ctx context.Context, tenant string, rows ...*requirement.Requirement) (map[requirement.ID]*requirement.Requirement, error) {
	seen := map[requirement.ID]bool{}
	for _, r := range rows {
		seen[requirement.NewID(r.SpaceKey, r.Key, 0)] = true
	}
	var ids []requirement.ID
	for _, r := range rows {
		for _, d := range slices.Concat(r.Dependencies, r.ReverseDependencies) {
			id := requirement.NewID(d.SpaceKey, d.Key, 0)
			if !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return map[requirement.ID]*requirement.Requirement{}, nil
	}
	out, err := s.store.Requirements(ctx, tenant, ids)
	if err != nil {
		return nil, fmt.Errorf("read linked requirements: %w", err)
	}
	return out, nil
}

// PageRequirements returns a stored page and the current rows of the
// requirements it defines, in page order, reading only: unlike ViewPage it
// gathers no flagged excerpt (a flagged row is answered as stored, with
// HTMLNeedsUpdating set). Invalid id, not found.
func (s *Service) PageRequirements(ctx context.Context, tenant, id string) (*Page, []*requirement.Requirement, error) {
	pg, err := s.Page(ctx, tenant, id)
	if err != nil {
		return nil, nil, err
	}
	stored, err := s.store.Requirements(ctx, tenant, pageIDs(pg))
	if err != nil {
		return nil, nil, fmt.Errorf("read requirements of page %s: %w", id, err)
	}
	rows := make([]*requirement.Requirement, 0, len(pg.Keys))
	for _, k := range pg.Keys {
		if st := stored[requirement.NewID(pg.SpaceKey, k, 0)]; st != nil && st.Status != "" {
			rows = append(rows, st)
		}
	}
	return pg, rows, nil
}
