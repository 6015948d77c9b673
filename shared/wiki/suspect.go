package wiki

import (
	"context"
	"fmt"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// clearAttempts bounds the rounds of ClearSuspects over rows whose page is
// being saved (pause spans a save of a few seconds).
const clearAttempts = 8

// ClearSuspects clears the suspect marks of rows (the matches of a clear
// request, as a search read them): their dependencies' and their issue
// links' marks on the wiki (a tracker keeps its own until cleared there).
// It answers how many links were suspect. Rows without a mark are not
// written. A row whose page is being saved is cleared once the save is
// over (the save may be writing back the marks it read): the clear waits
// for it, and answers conflict when the page stays leased for all of
// clearAttempts rounds (the rows cleared stay cleared; clearing again
// clears the rest).
func (s *Service) ClearSuspects(ctx context.Context, tenant string, rows []*requirement.Requirement) (int, error) {
	var marked []*requirement.Requirement
	cleared := 0
	for _, r := range rows {
		if r.Baseline != 0 || len(r.Suspects) == 0 {
			continue
		}
		marked = append(marked, r)
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
	for attempt := 1; len(marked) > 0; attempt++ {
		busy, err := s.store.ClearSuspects(ctx, tenant, marked)
		if err != nil {
			return 0, fmt.Errorf("clear suspect links: %w", err)
		}
		if len(busy) == 0 {
			break
		}
		if attempt == clearAttempts {
			return 0, apperr.Conflictf("page %s of requirement %s/%s was being saved during %d attempts; "+
				"clear again (what was cleared stays cleared)", busy[0].Origin.PageID, busy[0].SpaceKey, busy[0].Key, attempt)
		}
		if err := pause(ctx, attempt); err != nil {
			return 0, err
		}
		marked = busy
	}
	return cleared, nil
}
