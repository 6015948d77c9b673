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
	"strings"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/diff"
	"github.com/reqtrace/reqtrace/shared/export"
	"github.com/reqtrace/reqtrace/shared/httpapi"
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

// exportDiff answers the whole diff as CSV.
func (h *Handler) exportDiff(w http.ResponseWriter, r *http.Request, p auth.Principal, req diff.Request) error {
	return h.download(w, r, p, h.Diff.Table(req))
}

// exportSearch answers every match of the search as CSV, in key order
// (the columns of search.Table).
func (h *Handler) exportSearch(w http.ResponseWriter, r *http.Request, p auth.Principal, req search.Request) error {
	return h.download(w, r, p, search.Table(h.Search, req))
}
