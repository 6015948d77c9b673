package wiki

import (
	"context"
	"fmt"

	"github.com/reqtrace/reqtrace/shared/requirement"
)

// ClearSuspects clears the suspect marks of rows (the matches of a clear
// request, as a search read them): their dependencies' and their issue
// links' marks on the wiki (a tracker keeps its own until cleared there).
// It answers how many links were suspect. Rows without a mark are not
// written. A save of a row's page that read the row before the clear may
// write its marks back (it carries the marks it read): clearing again
// clears them.
func (s *Service) ClearSuspects(ctx context.Context, tenant string, rows []*requirement.Requirement) (int, error) {
	var ids []requirement.ID
	cleared := 0
	for _, r := range rows {
		if r.Baseline != 0 || len(r.Suspects) == 0 {
			continue
		}
		ids = append(ids, requirement.ID{SpaceKey: r.SpaceKey, Key: r.Key})
		for _, d := range r.Dependencies {
			if r.DependencySuspect(d) != nil {
				cleared++
			}
		}
		for _, l := range r.Issues {
			if r.IssueSuspect(l) != nil {
				cleared++
			}
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	if err := s.store.ClearSuspects(ctx, tenant, ids); err != nil {
		return 0, fmt.Errorf("clear suspect links: %w", err)
	}
	return cleared, nil
}
