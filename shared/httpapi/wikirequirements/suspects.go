package wikirequirements

// Clearing suspect links, POST /rest/reqs/1/suspects/{spaceKey}/clear
// (docs/change-analysis.md, "Suspect links"): the matches
// of a query in the space are read with the Searcher, every one of them
// before anything is cleared (clearing changes what `suspect IS TRUE`
// matches), then their marks are cleared.

import (
	"context"
	"net/http"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
)

// SuspectClearer clears suspect marks (wiki.Service implements it).
type SuspectClearer interface {
	// ClearSuspects clears the marks of rows and answers how many links
	// were suspect.
	ClearSuspects(ctx context.Context, tenant string, rows []*requirement.Requirement) (int, error)
}

type clearDTO struct {
	Q *string `json:"q"`
}

type clearedDTO struct {
	Cleared int `json:"cleared"`
}

// clearSuspects serves POST /rest/reqs/1/suspects/{spaceKey}/clear for a
// wiki user: body {"q": "<query>"} (required; "" clears every requirement
// of the space) → {"cleared": <links>}.
func (h *Handler) clearSuspects(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var in clearDTO
	if err := httpapi.Decode(r, &in); err != nil {
		return err
	}
	if in.Q == nil {
		return apperr.InvalidField("q", "is required: the query of the requirements to clear (\"suspect IS TRUE\" for every suspect one)")
	}
	space := r.PathValue("spaceKey")
	if !requirement.ValidSpaceKey(space) {
		return apperr.InvalidNamed("spaceKey", "invalid space key %q", space)
	}
	e, err := query.Parse(*in.Q)
	if err != nil {
		return err
	}
	// One pass in key order, as an export reads (each row once), not
	// pages by offset (page n would read the n pages before it again).
	var rows []*requirement.Requirement
	err = h.Search.Each(r.Context(), search.Request{Tenant: p.Tenant, PathSpace: space, Space: space, Query: e},
		func(row *requirement.Requirement) error {
			rows = append(rows, row)
			return nil
		})
	if err != nil {
		return err
	}
	n, err := h.Suspects.ClearSuspects(r.Context(), p.Tenant, rows)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, clearedDTO{Cleared: n})
	return nil
}
