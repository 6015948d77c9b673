package wikiweb

// The diff page, GET /diff/{spaceKey}?from=&to=[&q=][&offset=][&format=csv]:
// what changed in a space between two baselines, or a baseline and the
// current state (over the diff API, docs/change-analysis.md), field by field,
// with the old value struck through and the new one highlighted, and a
// link to the whole diff as a CSV download, which WikiRequirements serves
// (GET /diff/{spaceKey}/csv); format=csv answers 303 to it.

import (
	"context"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/diff"
	"github.com/reqtrace/reqtrace/shared/httpapi/websession"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// Differ compares two sides of a space (diff.Service implements it).
type Differ interface {
	// Diff answers the summary of a whole comparison and one page of its
	// changes: invalid input, an unknown baseline (not found).
	Diff(ctx context.Context, req diff.Request) (*diff.Result, error)
}

var _ Differ = (*diff.Service)(nil)

// diffPageSize is how many changed requirements one diff page lists.
const diffPageSize = 100

type diffPage struct {
	layoutData
	Space, From, To, Q string
	// Result is nil until the form names both sides.
	Result          *diff.Result
	Changes         []diffChange
	Prev, Next, CSV string
	First, Last     int
}

type diffChange struct {
	Key, URL, Kind string
	Fields         []diffField
}

type diffField struct {
	Name, From, To string
}

// diffSpace serves the diff page of a space: the form, and once it names
// both sides, the summary and one page of changes.
func (h *Handler) diffSpace(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	space := r.PathValue("spaceKey")
	if err := wiki.CheckSpaceKey(space); err != nil {
		return err
	}
	params := r.URL.Query()
	data := &diffPage{
		layoutData: layoutData{Title: "Diff of " + space, User: &p, Nav: spaceNav(space, "Diff")},
		Space:      space, From: strings.TrimSpace(params.Get("from")), To: strings.TrimSpace(params.Get("to")), Q: params.Get("q"),
	}
	if data.From == "" || data.To == "" {
		return render(w, r, http.StatusOK, "diff", data)
	}
	req, err := diffRequest(p.Tenant, space, data.From, data.To, data.Q, params.Get("offset"))
	if err != nil {
		return err
	}
	path, base := "/diff/"+url.PathEscape(space), url.Values{"from": {data.From}, "to": {data.To}}
	if done, err := formerDownload(w, r, params.Get("format"), downloadLink(path, base, data.Q)); done || err != nil {
		return err
	}
	res, err := h.Diff.Diff(r.Context(), req)
	if err != nil {
		return err
	}
	data.Result = res
	for _, c := range res.Changes {
		dc := diffChange{Key: c.Key, URL: reqURL(c.SpaceKey, c.Key, 0), Kind: string(c.Kind)}
		for _, f := range c.Fields {
			dc.Fields = append(dc.Fields, diffField{Name: f.Name, From: diff.ValueText(f.Name, f.From), To: diff.ValueText(f.Name, f.To)})
		}
		data.Changes = append(data.Changes, dc)
	}
	data.First, data.Last = req.Offset+1, req.Offset+len(res.Changes)
	data.Prev, data.Next, data.CSV = pageLinks(path, base, data.Q, req.Offset, diffPageSize, res.HasMore)
	return render(w, r, http.StatusOK, "diff", data)
}

// diffRequest parses the page's parameters as the diff API does.
func diffRequest(tenant, space, from, to, q, offset string) (diff.Request, error) {
	req := diff.Request{Tenant: tenant, Space: space, Limit: diffPageSize}
	var err error
	if req.From, err = diff.ParseSide("from", from); err != nil {
		return req, err
	}
	if req.To, err = diff.ParseSide("to", to); err != nil {
		return req, err
	}
	req.Offset, req.Query, err = pageParams(offset, q)
	return req, err
}

// pageParams reads the offset and the query of a paged page over a space
// (diff, coverage): offset from 0 to 1,000,000 ("" is 0), q parsed (blank:
// no query).
func pageParams(offset, q string) (int, query.Expr, error) {
	n := 0
	if offset != "" {
		var err error
		if n, err = strconv.Atoi(offset); err != nil || n < 0 || n > 1_000_000 {
			return 0, nil, apperr.InvalidNamed("offset", "offset must be a number from 0 to 1000000, got %q", offset)
		}
	}
	if strings.TrimSpace(q) == "" {
		return n, nil, nil
	}
	e, err := query.Parse(q)
	return n, e, err
}

// pageLinks are the links of a paged page over a space (diff, coverage):
// the previous and the next page ("" when there is none) and the CSV
// download of the whole result, each with base's parameters and q.
func pageLinks(path string, base url.Values, q string, offset, size int, hasMore bool) (prev, next, csv string) {
	at := func(offset int) string {
		vals := withQuery(base, q)
		vals.Set("offset", strconv.Itoa(offset))
		return path + "?" + vals.Encode()
	}
	if offset > 0 {
		prev = at(max(offset-size, 0))
	}
	if hasMore {
		next = at(offset + size)
	}
	return prev, next, downloadLink(path, base, q)
}

// downloadLink is the CSV download of the whole result of the page at
// path: the page's address with websession.DownloadSuffix, base's
// parameters and q. WikiRequirements serves it.
func downloadLink(path string, base url.Values, q string) string {
	return path + websession.DownloadSuffix + "?" + withQuery(base, q).Encode()
}

// withQuery is a copy of base with q, when there is one.
func withQuery(base url.Values, q string) url.Values {
	vals := maps.Clone(base)
	if q != "" {
		vals.Set("q", q)
	}
	return vals
}
