package wikiweb

// The requirement page, GET /requirements/{spaceKey}/{key}[?v=N]: the
// genericUrl of every requirement, and the home page with a
// form that opens one by key.

import (
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/websession"
	"github.com/reqtrace/reqtrace/shared/page"
	"github.com/reqtrace/reqtrace/shared/query"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// maxBaselinesShown bounds the baselines listed on a requirement's page.
const maxBaselinesShown = 100

type requirementPage struct {
	layoutData
	R *requirement.Requirement
	// Excerpt is the requirement's HTML excerpt, sanitized again here
	// (page.Sanitize) whatever the store holds.
	Excerpt template.HTML
	// URL is the page's own address (with ?v= for a baseline copy).
	URL                string
	Dependencies       []linkRow
	ReverseDeps        []linkRow
	Issues             []issueRow
	Baselines          []int
	MoreBaselines      bool
	Graph              *graph
	MovedTo            string
	NeedsExcerptUpdate bool
}

// linkRow is one dependency of the page's requirement, either way.
type linkRow struct {
	SpaceKey, Key, Relationship string
	// Status is the linked requirement's current status ("" when no page
	// defines it).
	Status string
	URL    string
	// Suspect is the link's suspect mark, as the API's suspect fields say
	// it ("" when not suspect; a reverse dependency's mark is the
	// referencing requirement's, on its own page).
	Suspect string
}

type issueRow struct {
	IssueKey, Relationship, ServiceID, Origin string
	// Suspect is the link's suspect mark ("" when not suspect).
	Suspect string
}

// suspectNote describes a suspect mark for the page: what changed in the
// link's target and since when; "" for no mark.
func suspectNote(m *requirement.Suspect) string {
	if m == nil {
		return ""
	}
	note := "suspect: its target changed"
	if len(m.Fields) > 0 {
		note += " in " + strings.Join(m.Fields, ", ")
	}
	if !m.Since.IsZero() {
		note += " at " + m.Since.UTC().Format("2006-01-02 15:04 UTC")
	}
	return note + " (not reviewed since)"
}

// requirement serves a requirement's page: the row (current, or the copy
// in baseline v), the rows linked to it and to those (for the graph, the
// current version only), and the baselines holding a copy.
func (h *Handler) requirement(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	v, err := httpapi.QueryInt(r, "v", 0, 1, wiki.MaxBaseline)
	if err != nil {
		return err
	}
	space, key := r.PathValue("spaceKey"), r.PathValue("key")
	req, err := h.Requirements.Requirement(r.Context(), p.Tenant, space, key, v)
	if err != nil {
		return err
	}
	level1, err := h.Requirements.Linked(r.Context(), p.Tenant, req)
	if err != nil {
		return err
	}
	level2 := map[requirement.ID]*requirement.Requirement{}
	if v == 0 {
		rows := make([]*requirement.Requirement, 0, len(level1))
		for _, row := range level1 {
			if row.Status != "" {
				rows = append(rows, row)
			}
		}
		// Sorted so that the read, and the graph, do not depend on map order.
		slices.SortFunc(rows, func(a, b *requirement.Requirement) int { return strings.Compare(a.ID().String(), b.ID().String()) })
		if level2, err = h.Requirements.Linked(r.Context(), p.Tenant, append(rows, req)...); err != nil {
			return err
		}
	}
	baselines, more, err := h.baselinesOf(r, p, req)
	if err != nil {
		return err
	}
	data := &requirementPage{
		layoutData: layoutData{Title: req.SpaceKey + "/" + req.Key, User: &p, Nav: spaceNav(req.SpaceKey, "")},
		R:          req, Excerpt: template.HTML(page.Sanitize(req.HTMLExcerpt)), //nolint:gosec // sanitized just now
		URL: reqURL(req.SpaceKey, req.Key, v), Baselines: baselines, MoreBaselines: more,
		NeedsExcerptUpdate: req.HTMLNeedsUpdating,
		Graph:              layoutGraph(req, level1, level2),
	}
	if req.Status == requirement.Moved && req.NewSpaceKey != "" && req.NewKey != "" {
		data.MovedTo = reqURL(req.NewSpaceKey, req.NewKey, 0)
	}
	for _, d := range req.Dependencies {
		row := toLinkRow(d, level1)
		row.Suspect = suspectNote(req.DependencySuspect(d))
		data.Dependencies = append(data.Dependencies, row)
	}
	for _, d := range req.ReverseDependencies {
		data.ReverseDeps = append(data.ReverseDeps, toLinkRow(d, level1))
	}
	for _, l := range req.Issues {
		data.Issues = append(data.Issues, issueRow{IssueKey: l.IssueKey, Relationship: l.Relationship, ServiceID: l.ServiceID,
			Origin: string(l.Origin()), Suspect: suspectNote(req.IssueSuspect(l))})
	}
	return render(w, r, http.StatusOK, "requirement", data)
}

func toLinkRow(d requirement.Dependency, rows map[requirement.ID]*requirement.Requirement) linkRow {
	row := linkRow{SpaceKey: d.SpaceKey, Key: d.Key, Relationship: d.Relationship, URL: reqURL(d.SpaceKey, d.Key, 0)}
	if got := rows[requirement.NewID(d.SpaceKey, d.Key, 0)]; got != nil {
		row.Status = string(got.Status)
	}
	return row
}

// baselinesOf returns the numbers of the committed baselines holding a
// copy of req, newest first (at most maxBaselinesShown; more says there
// are others), through the search: `key = '<key>' AND baseline IS NOT
// NULL` in the requirement's space.
func (h *Handler) baselinesOf(r *http.Request, p auth.Principal, req *requirement.Requirement) ([]int, bool, error) {
	// The key was read back from the store, so it is a valid key: letters,
	// digits, '_', '-', '.', nothing to escape in a quoted string.
	q, err := query.Parse(fmt.Sprintf("key = '%s' AND baseline IS NOT NULL", req.Key))
	if err != nil {
		return nil, false, fmt.Errorf("baselines of %s/%s: %w", req.SpaceKey, req.Key, err)
	}
	order, err := query.ParseOrder("BASELINE DESC")
	if err != nil {
		return nil, false, fmt.Errorf("baselines of %s/%s: %w", req.SpaceKey, req.Key, err)
	}
	res, err := h.Search.Search(r.Context(), search.Request{
		Tenant: p.Tenant, PathSpace: req.SpaceKey, Space: req.SpaceKey, Query: q, Order: order,
		Limit: maxBaselinesShown, IncludeArchived: true,
	})
	if err != nil {
		return nil, false, fmt.Errorf("baselines of %s/%s: %w", req.SpaceKey, req.Key, err)
	}
	var out []int
	for _, row := range res.Requirements {
		if row.Baseline > 0 {
			out = append(out, row.Baseline)
		}
	}
	return out, res.HasMore, nil
}

type homePage struct {
	layoutData
	SpaceKey, Key string
}

// home is the page a login leads to by default: who is signed in, and a
// form that opens a requirement by space and key (GET with spaceKey and
// key: 303 to its page).
func (h *Handler) home(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	q := r.URL.Query()
	space, key := strings.TrimSpace(q.Get("spaceKey")), strings.TrimSpace(q.Get("key"))
	if space != "" || key != "" {
		if err := wiki.CheckSpaceKey(space); err != nil {
			return err
		}
		if err := wiki.CheckKey(key); err != nil {
			return err
		}
		websession.SecurityHeaders(w.Header())
		http.Redirect(w, r, reqURL(space, key, 0), http.StatusSeeOther)
		return nil
	}
	return render(w, r, http.StatusOK, "home", &homePage{layoutData: layoutData{Title: "Requirements", User: &p}})
}

// pageView serves the wiki page a baseline's pageLink names
// (/pages/viewpage.action?pageId=): its title and space and the
// requirements it defines, read only.
func (h *Handler) pageView(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	id := r.URL.Query().Get("pageId")
	if id == "" {
		return apperr.InvalidNamed("pageId", "pageId is required")
	}
	pg, rows, err := h.Requirements.PageRequirements(r.Context(), p.Tenant, id)
	if err != nil {
		return err
	}
	data := &pageViewPage{layoutData: layoutData{Title: pg.Title, User: &p, Nav: spaceNav(pg.SpaceKey, "")}, Page: pg}
	for _, row := range rows {
		data.Rows = append(data.Rows, pageRow{R: row, URL: reqURL(row.SpaceKey, row.Key, 0),
			Excerpt: template.HTML(page.Sanitize(row.HTMLExcerpt))}) //nolint:gosec // sanitized just now
	}
	return render(w, r, http.StatusOK, "pageview", data)
}

type pageViewPage struct {
	layoutData
	Page *wiki.Page
	Rows []pageRow
}

type pageRow struct {
	R       *requirement.Requirement
	URL     string
	Excerpt template.HTML
}
