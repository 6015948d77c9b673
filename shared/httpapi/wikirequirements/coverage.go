package wikirequirements

// The coverage (traceability matrix), GET
// /rest/reqs/1/coverage/{spaceKey}?q=&columns=[&offset=&limit=]
// (docs/change-analysis.md, "Coverage"): read and check the parameters,
// build the matrix and answer {"columns", "results", "offset", "limit",
// "count", "hasMore"}, or the whole matrix as CSV (format=csv, export.go).

import (
	"context"
	"net/http"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/coverage"
	"github.com/reqtrace/reqtrace/shared/export"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/search"
)

// Coverer is what the route group needs of the coverage service
// (coverage.Service implements it).
type Coverer interface {
	// Coverage builds a matrix and returns one page of its rows: invalid
	// input, internal.
	Coverage(ctx context.Context, req coverage.Request) (*coverage.Result, error)
	// Table describes the whole matrix as an export; its rows' errors are
	// Coverage's.
	Table(req coverage.Request) export.Table
}

var _ Coverer = (*coverage.Service)(nil)

// coverageDTO is the JSON of a coverage answer (shared/openapi/wiki.yaml).
type coverageDTO struct {
	Columns []columnDTO      `json:"columns"`
	Results []coverageRowDTO `json:"results"`
	Offset  int              `json:"offset"`
	Limit   int              `json:"limit"`
	Count   int              `json:"count"`
	HasMore bool             `json:"hasMore"`
}

// columnDTO counts one column over the whole query.
type columnDTO struct {
	Name    string `json:"name"`
	Covered int    `json:"covered"`
	Total   int    `json:"total"`
}

// coverageRowDTO is one requirement of the matrix; Cells has every
// column's name, an empty list for a gap.
type coverageRowDTO struct {
	SpaceKey string              `json:"spaceKey"`
	Key      string              `json:"key"`
	Text     string              `json:"text"`
	Cells    map[string][]string `json:"cells"`
}

func toCoverageDTO(res *coverage.Result) coverageDTO {
	out := coverageDTO{Columns: make([]columnDTO, 0, len(res.Columns)), Results: make([]coverageRowDTO, 0, len(res.Rows)),
		Offset: res.Offset, Limit: res.Limit, Count: len(res.Rows), HasMore: res.HasMore}
	for _, c := range res.Columns {
		out.Columns = append(out.Columns, columnDTO{Name: c.Name(), Covered: c.Covered, Total: res.Total})
	}
	for _, row := range res.Rows {
		dto := coverageRowDTO{SpaceKey: row.SpaceKey, Key: row.Key, Text: row.Text, Cells: make(map[string][]string, len(res.Columns))}
		for i, c := range res.Columns {
			dto.Cells[c.Name()] = row.Cells[i]
		}
		out.Results = append(out.Results, dto)
	}
	return out
}

// coverage serves GET /rest/reqs/1/coverage/{spaceKey} for a wiki user.
func (h *Handler) coverage(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	csv, err := wantsCSV(r)
	if err != nil {
		return err
	}
	req, err := parseCoverage(r, p.Tenant)
	if err != nil {
		return err
	}
	if csv {
		return h.exportCoverage(w, r, p, req)
	}
	res, err := h.Coverage.Coverage(r.Context(), req)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toCoverageDTO(res))
	return nil
}

// parseCoverage reads the coverage's parameters for tenant (the API's, and
// the coverage page's download's). columns is required; q is parsed (a
// syntax error is a 400 with its position); offset and limit as the
// search's.
func parseCoverage(r *http.Request, tenant string) (coverage.Request, error) {
	params := r.URL.Query()
	cols, err := coverage.ParseColumns(params.Get("columns"))
	if err != nil {
		return coverage.Request{}, err
	}
	offset, err := httpapi.QueryInt(r, "offset", 0, 0, 0)
	if err != nil {
		return coverage.Request{}, err
	}
	limit, err := httpapi.QueryLimit(r, "limit", search.DefaultLimit, search.MaxLimit)
	if err != nil {
		return coverage.Request{}, err
	}
	e, err := query.Parse(params.Get("q"))
	if err != nil {
		return coverage.Request{}, named("q", err)
	}
	return coverage.Request{Tenant: tenant, Space: r.PathValue("spaceKey"), Query: e, Columns: cols, Offset: offset, Limit: limit}, nil
}

// exportCoverage answers the whole matrix as CSV (coverage.Service.Table).
func (h *Handler) exportCoverage(w http.ResponseWriter, r *http.Request, p auth.Principal, req coverage.Request) error {
	return h.download(w, r, p, h.Coverage.Table(req))
}
