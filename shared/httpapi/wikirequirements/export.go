package wikirequirements

// Exports (docs/change-analysis.md, "Export"): with
// format=csv, or Accept: text/csv and no format, the search, the diff and
// the coverage (coverage.go) answer their whole result as one CSV download. The CSV is written while
// the result is read, into the export Store (S3), and the answer is 303
// See Other to a presigned URL of it: a Lambda answer through API Gateway
// cannot exceed 6 MB, a download has no such limit. The columns of each
// result are here, beside its JSON shape.

import (
	"context"
	"mime"
	"net/http"
	"strconv"
	"strings"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/diff"
	"github.com/reqtrace/reqtrace/shared/export"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
)

// Exporter is what the route group needs to export a result
// (export.Service implements it).
type Exporter interface {
	// CSV writes t as CSV into the export store and returns its download
	// URL: t.Rows' errors as they are, internal.
	CSV(ctx context.Context, tenant string, t export.Table) (string, error)
}

var _ Exporter = (*export.Service)(nil)

// wantsCSV reads format (csv or json) and, when it is absent, Accept: CSV
// when text/csv comes before application/json in it.
func wantsCSV(r *http.Request) (bool, error) {
	switch f := r.URL.Query().Get("format"); strings.ToLower(f) {
	case "csv":
		return true, nil
	case "json":
		return false, nil
	case "":
	default:
		return false, apperr.InvalidNamed("format", "format must be csv or json, got %q", f)
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || params["q"] == "0" {
			continue
		}
		switch mt {
		case "text/csv":
			return true, nil
		case "application/json":
			return false, nil
		}
	}
	return false, nil
}

// download exports t and answers 303 See Other to it. A client that
// follows redirects (curl -L, Python requests) gets the file; the answer's
// body says where it is for one that does not.
func (h *Handler) download(w http.ResponseWriter, r *http.Request, p auth.Principal, t export.Table) error {
	if h.Export == nil {
		return apperr.Invalidf("exports are not configured on this stack (EXPORT_BUCKET)")
	}
	url, err := h.Export.CSV(r.Context(), p.Tenant, t)
	if err != nil {
		return err
	}
	w.Header().Set("Location", url)
	httpapi.WriteJSON(w, http.StatusSeeOther, downloadDTO{URL: url})
	return nil
}

// downloadDTO is the body of an export's redirect.
type downloadDTO struct {
	URL string `json:"url"`
}

// diffColumns are the columns of a diff's CSV: one row per changed field.
var diffColumns = []string{"spaceKey", "key", "change", "field", "from", "to"}

// exportDiff answers the whole diff as CSV.
func (h *Handler) exportDiff(w http.ResponseWriter, r *http.Request, p auth.Principal, req diff.Request) error {
	return h.download(w, r, p, export.Table{Name: diffFileName(req), Columns: diffColumns,
		Rows: func(ctx context.Context, emit func([]string) error) error {
			_, err := h.Diff.Each(ctx, req, func(c diff.Change) error {
				for _, row := range diffRows(c) {
					if err := emit(row); err != nil {
						return err
					}
				}
				return nil
			})
			return err
		}})
}

// diffRows are the CSV rows of one change: one per field (one with empty
// field, from and to when it has none).
func diffRows(c diff.Change) [][]string {
	if len(c.Fields) == 0 {
		return [][]string{{c.SpaceKey, c.Key, string(c.Kind), "", "", ""}}
	}
	rows := make([][]string, 0, len(c.Fields))
	for _, f := range c.Fields {
		rows = append(rows, []string{c.SpaceKey, c.Key, string(c.Kind), f.Name, diff.ValueText(f.Name, f.From), diff.ValueText(f.Name, f.To)})
	}
	return rows
}

// searchColumns are the columns of a search's CSV: one row per
// requirement, as its JSON shows it.
var searchColumns = []string{"spaceKey", "key", "baseline", "status", "text", "pageId", "pageTitle", "properties",
	"externalProperties", "dependencies", "issues", "newSpaceKey", "newKey"}

// exportSearch answers every match of the search as CSV, in key order.
func (h *Handler) exportSearch(w http.ResponseWriter, r *http.Request, p auth.Principal, req search.Request) error {
	name := "search-" + req.PathSpace
	if req.Space != "" {
		name = "search-" + req.Space
	}
	return h.download(w, r, p, export.Table{Name: name, Columns: searchColumns,
		Rows: func(ctx context.Context, emit func([]string) error) error {
			return h.Search.Each(ctx, req, func(r *requirement.Requirement) error { return emit(searchRow(r)) })
		}})
}

// searchRow is the CSV row of a requirement; properties are one
// "Name: value" per line (page properties in page order, external ones by
// name), dependencies name their space (the row's when they name none).
func searchRow(r *requirement.Requirement) []string {
	baseline := ""
	if r.Baseline > 0 {
		baseline = strconv.Itoa(r.Baseline)
	}
	props := func(ps []requirement.Property) string {
		lines := make([]string, 0, len(ps))
		for _, p := range ps {
			lines = append(lines, p.Key+": "+p.Value)
		}
		return strings.Join(lines, "\n")
	}
	deps := make([]requirement.Dependency, 0, len(r.Dependencies))
	for _, d := range r.Dependencies {
		if d.SpaceKey == "" {
			d.SpaceKey = r.SpaceKey
		}
		deps = append(deps, d)
	}
	return []string{r.SpaceKey, r.Key, baseline, string(r.Status), r.Text, r.Origin.PageID, r.Origin.Title,
		props(r.PageProperties()), props(r.ExternalProperties()), requirement.DependenciesText(deps), requirement.IssuesText(r.Issues),
		r.NewSpaceKey, r.NewKey}
}
