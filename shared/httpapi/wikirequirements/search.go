package wikirequirements

// The requirement search, GET /rest/reqs/1/requirement2/{spaceKey} (spec
// §4.1; docs/search.md and shared/openapi/wiki.yaml): read and check the
// query parameters, run the search with the Searcher and answer {"results",
// "offset", "limit", "count", "hasMore"} with the requirement JSON of this
// group.

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
)

// Searcher is what the route group needs of the search service
// (search.Service implements it).
type Searcher interface {
	// Search runs one search: invalid input (bad offset, invalid space
	// key, closures too broad).
	Search(ctx context.Context, req search.Request) (*search.Result, error)
	// Each emits every match of a search in key order (its export):
	// invalid input as Search, and an order that does not start with
	// REQKEY.
	Each(ctx context.Context, req search.Request, emit func(*requirement.Requirement) error) error
}

var _ Searcher = (*search.Service)(nil)

// searchDTO is the JSON of a search answer (shared/openapi/wiki.yaml).
type searchDTO struct {
	Results []requirementDTO `json:"results"`
	// Offset and Limit are the ones applied (Limit after clamping).
	Offset int `json:"offset"`
	Limit  int `json:"limit"`
	// Count is the number of results on this page.
	Count int `json:"count"`
	// HasMore says whether the next page (offset+limit) has results.
	HasMore bool `json:"hasMore"`
}

// toSearchDTO converts a search result to its JSON answer; Results is never
// null.
func toSearchDTO(res *search.Result) searchDTO {
	out := searchDTO{Results: toRequirementDTOs(res.Requirements), Offset: res.Offset, Limit: res.Limit, HasMore: res.HasMore}
	out.Count = len(out.Results)
	return out
}

// search serves GET /rest/reqs/1/requirement2/{spaceKey} for any Reader (a
// wiki user, or an integration's incomingToken).
func (h *Handler) search(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	csv, err := wantsCSV(r)
	if err != nil {
		return err
	}
	req, err := parseSearch(r)
	if err != nil {
		return err
	}
	req.Tenant = p.Tenant
	if csv {
		return h.exportSearch(w, r, p, req)
	}
	res, err := h.Search.Search(r.Context(), req)
	if err != nil {
		return err
	}
	httpapi.Logger(r.Context()).LogAttrs(r.Context(), slog.LevelDebug, "search",
		slog.String("tenant", p.Tenant), slog.String("plan", res.Plan), slog.Int("results", len(res.Requirements)))
	httpapi.WriteJSON(w, http.StatusOK, toSearchDTO(res))
	return nil
}

// parseSearch reads the search parameters of spec §4.1; the Tenant is
// left for the caller. q and order are parsed (never passed anywhere as
// text); offset defaults to 0 and must be a non-negative integer; limit
// defaults to search.DefaultLimit, must be a positive integer and is
// clamped to search.MaxLimit; includeArchived is true or false;
// baselineCondition and suggest must not be used. Every problem is a 400
// naming the parameter, with the position of a syntax error in q or order.
func parseSearch(r *http.Request) (search.Request, error) {
	params := r.URL.Query()
	for _, name := range []string{"baselineCondition", "suggest"} {
		if params.Has(name) {
			return search.Request{}, apperr.InvalidNamed(name, "%s must not be used (spec §4.1): express the condition in q", name)
		}
	}
	offset, err := httpapi.QueryInt(r, "offset", 0, 0, 0)
	if err != nil {
		return search.Request{}, err
	}
	limit, err := httpapi.QueryLimit(r, "limit", search.DefaultLimit, search.MaxLimit)
	if err != nil {
		return search.Request{}, err
	}
	archived, err := httpapi.QueryBool(r, "includeArchived")
	if err != nil {
		return search.Request{}, err
	}
	order, err := query.ParseOrder(params.Get("order"))
	if err != nil {
		return search.Request{}, named("order", err)
	}
	e, err := query.Parse(params.Get("q"))
	if err != nil {
		return search.Request{}, named("q", err)
	}
	return search.Request{
		PathSpace: r.PathValue("spaceKey"), Space: params.Get("spaceKey"), Query: e, Order: order,
		Offset: offset, Limit: limit, IncludeArchived: archived,
	}, nil
}

// named prefixes a parse error's message with the parameter it is about;
// the position stays that of the parameter's text.
func named(param string, err error) error {
	e := apperr.As(err)
	if e == nil {
		return err
	}
	c := *e
	c.Message = "invalid " + param + ": " + e.Message
	return &c
}
