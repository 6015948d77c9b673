package wikirequirements

// The diff, GET /rest/reqs/1/diff/{spaceKey}?from=&to=[&q=][&offset=&limit=]
// (docs/change-analysis.md): read and check the
// parameters, run the diff and answer {"from", "to", "summary", "changes",
// "offset", "limit", "count", "hasMore"}, or the whole diff as CSV
// (export.go).

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/diff"
	"github.com/reqtrace/reqtrace/shared/export"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/search"
)

// Differ is what the route group needs of the diff service (diff.Service
// implements it).
type Differ interface {
	// Diff compares two sides: invalid input, an unknown baseline (not
	// found).
	Diff(ctx context.Context, req diff.Request) (*diff.Result, error)
	// Table describes the whole diff as a CSV export.
	Table(req diff.Request) export.Table
}

var _ Differ = (*diff.Service)(nil)

// diffDTO is the JSON of a diff answer (shared/openapi/wiki.yaml).
type diffDTO struct {
	// From and To are the sides: a baseline number or "current".
	From    any         `json:"from"`
	To      any         `json:"to"`
	Summary summaryDTO  `json:"summary"`
	Changes []changeDTO `json:"changes"`
	Offset  int         `json:"offset"`
	Limit   int         `json:"limit"`
	Count   int         `json:"count"`
	HasMore bool        `json:"hasMore"`
}

// summaryDTO counts the requirements of the whole comparison.
type summaryDTO struct {
	Added     int `json:"added"`
	Removed   int `json:"removed"`
	Modified  int `json:"modified"`
	Unchanged int `json:"unchanged"`
}

// changeDTO is one requirement that differs.
type changeDTO struct {
	SpaceKey string     `json:"spaceKey"`
	Key      string     `json:"key"`
	Change   string     `json:"change"`
	Fields   []fieldDTO `json:"fields"`
}

// fieldDTO is the change of one field; From and To are null (absent), a
// string, a list of strings (a property with several values), a page
// (origin) or a list of links (dependencies, issues).
type fieldDTO struct {
	Field string `json:"field"`
	From  any    `json:"from"`
	To    any    `json:"to"`
}

// linkedIssueDTO is an issue link in a diff: who holds it is not compared.
type linkedIssueDTO struct {
	ServiceID    *string `json:"serviceId"`
	IssueKey     string  `json:"issueKey"`
	Relationship string  `json:"relationship"`
}

func sideDTO(side int) any {
	if side == diff.Current {
		return "current"
	}
	return side
}

func toDiffDTO(res *diff.Result) diffDTO {
	out := diffDTO{From: sideDTO(res.From), To: sideDTO(res.To), Offset: res.Offset, Limit: res.Limit, HasMore: res.HasMore,
		Summary: summaryDTO{Added: res.Summary.Added, Removed: res.Summary.Removed, Modified: res.Summary.Modified,
			Unchanged: res.Summary.Unchanged},
		Changes: make([]changeDTO, 0, len(res.Changes))}
	for _, c := range res.Changes {
		out.Changes = append(out.Changes, toChangeDTO(c))
	}
	out.Count = len(out.Changes)
	return out
}

func toChangeDTO(c diff.Change) changeDTO {
	out := changeDTO{SpaceKey: c.SpaceKey, Key: c.Key, Change: string(c.Kind), Fields: make([]fieldDTO, 0, len(c.Fields))}
	for _, f := range c.Fields {
		out.Fields = append(out.Fields, fieldDTO{Field: f.Name, From: toValueDTO(f.Name, f.From), To: toValueDTO(f.Name, f.To)})
	}
	return out
}

// toValueDTO converts one side of a field's change to its JSON value.
func toValueDTO(field string, v diff.Value) any {
	if !v.Set {
		return nil
	}
	switch field {
	case diff.FieldOrigin:
		return toPageRefDTO(v.Page)
	case diff.FieldDependencies:
		out := make([]dependencyDTO, 0, len(v.Dependencies))
		for _, d := range v.Dependencies {
			out = append(out, dependencyDTO{SpaceKey: d.SpaceKey, Key: d.Key, Relationship: d.Relationship})
		}
		return out
	case diff.FieldIssues:
		out := make([]linkedIssueDTO, 0, len(v.Issues))
		for _, l := range v.Issues {
			is := linkedIssueDTO{IssueKey: l.IssueKey, Relationship: l.Relationship}
			if l.ServiceID != "" {
				sid := l.ServiceID
				is.ServiceID = &sid
			}
			out = append(out, is)
		}
		return out
	}
	if v.Values != nil {
		return v.Values
	}
	return v.Text
}

// diff serves GET /rest/reqs/1/diff/{spaceKey} for a wiki user.
func (h *Handler) diff(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	csv, err := wantsCSV(r)
	if err != nil {
		return err
	}
	req, err := parseDiff(r, p.Tenant)
	if err != nil {
		return err
	}
	if csv {
		return h.exportDiff(w, r, p, req)
	}
	res, err := h.Diff.Diff(r.Context(), req)
	if err != nil {
		return err
	}
	httpapi.Logger(r.Context()).LogAttrs(r.Context(), slog.LevelDebug, "diff", slog.String("tenant", p.Tenant),
		slog.Int("readFrom", res.ReadFrom), slog.Int("readTo", res.ReadTo), slog.Int("segments", res.Segments), slog.Int("changes", len(res.Changes)))
	httpapi.WriteJSON(w, http.StatusOK, toDiffDTO(res))
	return nil
}

// parseDiff reads the diff's parameters for tenant (the API's, and the
// diff page's download's). from and to are required; q is parsed (a syntax error is a 400
// with its position); offset and limit as the search's.
func parseDiff(r *http.Request, tenant string) (diff.Request, error) {
	params := r.URL.Query()
	from, err := diff.ParseSide("from", params.Get("from"))
	if err != nil {
		return diff.Request{}, err
	}
	to, err := diff.ParseSide("to", params.Get("to"))
	if err != nil {
		return diff.Request{}, err
	}
	offset, err := httpapi.QueryInt(r, "offset", 0, 0, 0)
	if err != nil {
		return diff.Request{}, err
	}
	limit, err := httpapi.QueryLimit(r, "limit", search.DefaultLimit, search.MaxLimit)
	if err != nil {
		return diff.Request{}, err
	}
	e, err := query.Parse(params.Get("q"))
	if err != nil {
		return diff.Request{}, named("q", err)
	}
	return diff.Request{Tenant: tenant, Space: r.PathValue("spaceKey"), From: from, To: to, Query: e, Offset: offset, Limit: limit}, nil
}
