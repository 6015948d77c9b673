package search

import (
	"context"
	"strconv"
	"strings"

	"github.com/reqtrace/reqtrace/shared/export"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Walker walks every match of a search in key order (Service implements
// it): the exports and the coverage matrix read through it.
type Walker interface {
	// Each calls emit with every match of req. Errors: invalid (bad
	// space key, closures too broad, an order not starting with REQKEY),
	// internal, emit's.
	Each(ctx context.Context, req Request, emit func(*requirement.Requirement) error) error
}

var _ Walker = (*Service)(nil)

// TableColumns are the columns of a search's CSV export: one row per
// requirement, as its JSON shows it.
var TableColumns = []string{"spaceKey", "key", "baseline", "status", "text", "pageId", "pageTitle", "properties",
	"externalProperties", "dependencies", "issues", "newSpaceKey", "newKey"}

// Table describes every match of req, read through w in key order, as an
// export (shared/export); its rows are built while they are written.
func Table(w Walker, req Request) export.Table {
	name := "search-" + req.PathSpace
	if req.Space != "" {
		name = "search-" + req.Space
	}
	return export.Table{Name: name, Columns: TableColumns,
		Rows: func(ctx context.Context, emit func([]string) error) error {
			return w.Each(ctx, req, func(r *requirement.Requirement) error { return emit(tableRow(r)) })
		}}
}

// tableRow is the CSV row of a requirement; properties are one
// "Name: value" per line (page properties in page order, external ones by
// name), dependencies name their space (the row's when they name none).
func tableRow(r *requirement.Requirement) []string {
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
