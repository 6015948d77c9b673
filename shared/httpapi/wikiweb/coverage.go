package wikiweb

// The coverage page, GET /coverage/{spaceKey}?q=&columns=[&offset=]
// [&format=csv]: the traceability matrix of a space (over the coverage
// service, docs/change-analysis.md "Coverage") as a table of 100 rows a
// page, each column's covered/total above it, gaps and suspect items
// marked, and a link to the whole matrix as a CSV download, which
// WikiRequirements serves (GET /coverage/{spaceKey}/csv); format=csv
// answers 303 to it.

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/coverage"
	"github.com/reqtrace/reqtrace/shared/httpapi/websession"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// Coverer builds traceability matrices (coverage.Service implements it).
type Coverer interface {
	// Coverage builds a matrix and returns one page of its rows: invalid
	// input, internal.
	Coverage(ctx context.Context, req coverage.Request) (*coverage.Result, error)
}

var _ Coverer = (*coverage.Service)(nil)

// coveragePageSize is how many requirements one coverage page lists.
const coveragePageSize = 100

// defaultColumns are the columns of the page when the address names none
// (the navigation bar's link).
const defaultColumns = "jira,to,from"

type coveragePage struct {
	layoutData
	Space, Q, Columns string
	Counts            []coverageCount
	Rows              []coverageRow
	Total             int
	First, Last       int
	Prev, Next, CSV   string
}

type coverageCount struct {
	Name             string
	Covered, Percent int
}

type coverageRow struct {
	Key, URL, Text string
	Cells          [][]coverageItem
}

// coverageItem is one item of a cell: URL is set for a requirement.
type coverageItem struct {
	Text, URL string
	Suspect   bool
}

// coverageSpace serves the coverage page of a space.
func (h *Handler) coverageSpace(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	space := r.PathValue("spaceKey")
	if err := wiki.CheckSpaceKey(space); err != nil {
		return err
	}
	params := r.URL.Query()
	data := &coveragePage{
		layoutData: layoutData{Title: "Coverage of " + space, User: &p, Nav: spaceNav(space, "Coverage")},
		Space:      space, Q: params.Get("q"), Columns: strings.TrimSpace(params.Get("columns")),
	}
	if data.Columns == "" {
		data.Columns = defaultColumns
	}
	req, err := coverageRequest(p.Tenant, space, data.Columns, data.Q, params.Get("offset"))
	if err != nil {
		return err
	}
	path, base := "/coverage/"+url.PathEscape(space), url.Values{"columns": {data.Columns}}
	if done, err := formerDownload(w, r, params.Get("format"), downloadLink(path, base, data.Q)); done || err != nil {
		return err
	}
	res, err := h.Coverage.Coverage(r.Context(), req)
	if err != nil {
		return err
	}
	data.Total = res.Total
	for _, c := range res.Columns {
		cc := coverageCount{Name: c.Name(), Covered: c.Covered}
		if res.Total > 0 {
			cc.Percent = c.Covered * 100 / res.Total
		}
		data.Counts = append(data.Counts, cc)
	}
	for _, row := range res.Rows {
		cr := coverageRow{Key: row.Key, URL: reqURL(row.SpaceKey, row.Key, 0), Text: row.Text}
		for i, items := range row.Cells {
			cell := make([]coverageItem, 0, len(items))
			for _, it := range items {
				text, suspect := strings.CutSuffix(it, coverage.SuspectMark)
				item := coverageItem{Text: text, Suspect: suspect}
				if res.Columns[i].Kind != coverage.Jira {
					if s, k, ok := strings.Cut(text, "/"); ok {
						item.URL = reqURL(s, k, 0)
					}
				}
				cell = append(cell, item)
			}
			cr.Cells = append(cr.Cells, cell)
		}
		data.Rows = append(data.Rows, cr)
	}
	data.First, data.Last = req.Offset+1, req.Offset+len(res.Rows)
	data.Prev, data.Next, data.CSV = pageLinks(path, base, data.Q, req.Offset, coveragePageSize, res.HasMore)
	return render(w, r, http.StatusOK, "coverage", data)
}

// coverageRequest parses the page's parameters as the coverage API does.
func coverageRequest(tenant, space, columns, q, offset string) (coverage.Request, error) {
	req := coverage.Request{Tenant: tenant, Space: space, Limit: coveragePageSize}
	var err error
	if req.Columns, err = coverage.ParseColumns(columns); err != nil {
		return req, err
	}
	req.Offset, req.Query, err = pageParams(offset, q)
	return req, err
}

// formerDownload answers format=csv, the address of a page's CSV
// download before the downloads moved to WikiRequirements (which renders
// no templates, so its bootstrap links the S3 client without keeping all
// of it): 303 to link, the download, so that saved addresses keep
// working. done says the answer is written; another format is refused.
func formerDownload(w http.ResponseWriter, r *http.Request, format, link string) (done bool, err error) {
	switch format {
	case "":
		return false, nil
	case "csv":
		websession.SecurityHeaders(w.Header())
		http.Redirect(w, r, link, http.StatusSeeOther)
		return true, nil
	default:
		return true, apperr.InvalidNamed("format", "format must be csv, got %q", format)
	}
}
