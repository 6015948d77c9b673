// Package wikirequirements is the WikiRequirements route group: requirement
// reads (GET /rest/reqs/1/requirement2/{spaceKey}/{key}), external
// properties (PUT /rest/reqs/1/requirement2/{spaceKey}/{key}/external,
// external.go), the page view
// (GET /rest/reqs/1/page/{spaceKey}/{pageId}), the requirement search (GET
// /rest/reqs/1/requirement2/{spaceKey}, search.go), the diff (GET
// /rest/reqs/1/diff/{spaceKey}, diff.go), the coverage matrix (GET
// /rest/reqs/1/coverage/{spaceKey}, coverage.go), the CSV exports of all
// three (export.go), the CSV downloads of the web pages' diff and coverage
// for a browser session (GET /diff/{spaceKey}/csv, GET
// /coverage/{spaceKey}/csv, webdownload.go), the routes the spec says
// must not be used (405 with Allow, 410) and the wiki's OpenAPI document
// (GET /rest/reqs/1/openapi). It owns the JSON shape of a requirement
// (shared/openapi/wiki.yaml), which every answer showing one uses.
package wikirequirements

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/websession"
	"github.com/reqtrace/reqtrace/shared/openapi"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// Reader is what the route group needs of the wiki service
// (wiki.Service implements it).
type Reader interface {
	// Requirement returns the current row (baseline 0) or a baseline copy:
	// invalid space or key, not found.
	Requirement(ctx context.Context, tenant, space, key string, baseline int) (*requirement.Requirement, error)
	// References returns the pages citing r.
	References(ctx context.Context, tenant string, r *requirement.Requirement) ([]requirement.PageRef, error)
	// ViewPage returns the requirements of a page after gathering flagged
	// excerpts: invalid space or id, not found.
	ViewPage(ctx context.Context, tenant, actor, space, pageID string) ([]*requirement.Requirement, error)
}

// Handler serves the route group. Register works on a zero Handler (the
// route-agreement test lists its routes); serving reads needs Requirements,
// serving the search needs Search, setting external properties needs
// External, the diff needs Diff, the coverage needs Coverage, CSV exports
// need Export, clearing suspect links needs Search and Suspects, and the
// web pages' downloads need Sessions too.
type Handler struct {
	Requirements Reader
	Search       Searcher
	External     ExternalSetter
	Diff         Differ
	Export       Exporter
	Suspects     SuspectClearer
	Coverage     Coverer
	// Sessions resolves the session cookie of the web pages' downloads.
	Sessions websession.Resolver
	// Limiter, when set, counts each download of a session against its
	// tenant's rate, as the router counts a token's requests.
	Limiter httpapi.Limiter
}

// Register declares the routes of WikiRequirements in template.yaml,
// including the wiki's OpenAPI document and the web pages' downloads
// (anonymous to the router: the downloads check the session cookie).
func (h *Handler) Register(rt *httpapi.Router) {
	const space, key = "/rest/reqs/1/requirement2/{spaceKey}", "/rest/reqs/1/requirement2/{spaceKey}/{key}"
	rt.Handle("GET "+space, httpapi.Reader, h.search)
	rt.Handle("POST "+space, httpapi.Reader, readOnly, httpapi.Accepts())
	rt.Handle("PUT "+space, httpapi.Reader, readOnly, httpapi.Accepts())
	rt.Handle("GET "+key, httpapi.Reader, h.get)
	rt.Handle("POST "+key, httpapi.Reader, readOnly, httpapi.Accepts())
	rt.Handle("PUT "+key, httpapi.Reader, readOnly, httpapi.Accepts())
	rt.Handle("DELETE "+key, httpapi.Reader, readOnly, httpapi.Accepts())
	rt.Handle("PUT "+key+"/external", httpapi.Member, h.setExternal)
	rt.Handle("GET /rest/reqs/1/requirement3", httpapi.Reader, requirement3)
	rt.Handle("GET /rest/reqs/1/page/{spaceKey}/{pageId}", httpapi.Member, h.page)
	rt.Handle("GET /rest/reqs/1/diff/{spaceKey}", httpapi.Member, h.diff)
	rt.Handle("GET /rest/reqs/1/coverage/{spaceKey}", httpapi.Member, h.coverage)
	rt.Handle("POST /rest/reqs/1/suspects/{spaceKey}/clear", httpapi.Member, h.clearSuspects)
	rt.HandleAnonymous("GET /rest/reqs/1/openapi", openapi.Handler(openapi.Wiki))
	h.registerDownloads(rt)
}

// requirementDTO is the JSON of a requirement (shared/openapi/wiki.yaml).
type requirementDTO struct {
	SpaceKey string `json:"spaceKey"`
	Key      string `json:"key"`
	// Baseline is null for the current version.
	Baseline            *int            `json:"baseline"`
	Status              string          `json:"status"`
	Text                string          `json:"text"`
	HTMLExcerpt         string          `json:"htmlExcerpt"`
	HTMLNeedsUpdating   bool            `json:"htmlNeedsUpdating"`
	Properties          []propertyDTO   `json:"properties"`
	Origin              *pageRefDTO     `json:"origin"`
	Dependencies        []dependencyDTO `json:"dependencies"`
	ReverseDependencies []dependencyDTO `json:"reverseDependencies"`
	Issues              []issueDTO      `json:"issues"`
	GenericURL          string          `json:"genericUrl"`
	// NewSpaceKey and NewKey are present when Status is MOVED.
	NewSpaceKey string `json:"newSpaceKey,omitempty"`
	NewKey      string `json:"newKey,omitempty"`
	// References is present with expand=references.
	References *[]pageRefDTO `json:"references,omitempty"`
}

// propertyDTO is one property of a requirement: type INLINE for a page's
// property, EXTERNAL for one set through the external properties API.
type propertyDTO struct {
	Key   string `json:"key"`
	Value string `json:"value"`
	Type  string `json:"type"`
}

// pageRefDTO names a page.
type pageRefDTO struct {
	PageID string `json:"pageId"`
	Title  string `json:"title"`
}

// dependencyDTO is a link between two requirements; a dependency (not a
// reverse one) also says whether it is suspect.
type dependencyDTO struct {
	SpaceKey     string `json:"spaceKey"`
	Key          string `json:"key"`
	Relationship string `json:"relationship"`
	suspectDTO
}

// suspectDTO are the suspect fields of a dependency or issue link:
// suspectSince and suspectCause only when suspect.
type suspectDTO struct {
	Suspect      *bool            `json:"suspect,omitempty"`
	SuspectSince string           `json:"suspectSince,omitempty"`
	SuspectCause *suspectCauseDTO `json:"suspectCause,omitempty"`
}

type suspectCauseDTO struct {
	Fields []string `json:"fields"`
}

// toSuspectDTO converts a link's mark (nil: not suspect).
func toSuspectDTO(m *requirement.Suspect) suspectDTO {
	suspect := m != nil
	out := suspectDTO{Suspect: &suspect}
	if m != nil {
		out.SuspectSince = m.Since.UTC().Format(time.RFC3339Nano)
		out.SuspectCause = &suspectCauseDTO{Fields: append([]string{}, m.Fields...)}
	}
	return out
}

// issueDTO is a link to an issue; serviceId is null when the page's macro
// named no integration.
type issueDTO struct {
	ServiceID    *string `json:"serviceId"`
	IssueKey     string  `json:"issueKey"`
	Relationship string  `json:"relationship"`
	// Origin is PAGE while an issue macro of the requirement's page holds
	// the link, else TRACKER (made on the tracker).
	Origin string `json:"origin"`
	suspectDTO
}

// toRequirementDTO converts a requirement to its JSON shape; lists are
// never null.
func toRequirementDTO(r *requirement.Requirement) requirementDTO {
	out := requirementDTO{
		SpaceKey: r.SpaceKey, Key: r.Key, Status: string(r.Status), Text: r.Text, HTMLExcerpt: r.HTMLExcerpt,
		HTMLNeedsUpdating: r.HTMLNeedsUpdating, Properties: []propertyDTO{}, Dependencies: []dependencyDTO{},
		ReverseDependencies: []dependencyDTO{}, Issues: []issueDTO{}, GenericURL: r.GenericURL(),
	}
	if r.Baseline > 0 {
		n := r.Baseline
		out.Baseline = &n
	}
	if r.Origin.PageID != "" {
		origin := toPageRefDTO(r.Origin)
		out.Origin = &origin
	}
	if r.Status == requirement.Moved {
		out.NewSpaceKey, out.NewKey = r.NewSpaceKey, r.NewKey
	}
	for _, p := range r.Properties {
		out.Properties = append(out.Properties, propertyDTO{Key: p.Key, Value: p.Value, Type: p.Type.String()})
	}
	for _, d := range r.Dependencies {
		out.Dependencies = append(out.Dependencies, dependencyDTO{SpaceKey: d.SpaceKey, Key: d.Key, Relationship: d.Relationship,
			suspectDTO: toSuspectDTO(r.DependencySuspect(d))})
	}
	for _, d := range r.ReverseDependencies {
		out.ReverseDependencies = append(out.ReverseDependencies, dependencyDTO{SpaceKey: d.SpaceKey, Key: d.Key, Relationship: d.Relationship})
	}
	for _, l := range r.Issues {
		is := issueDTO{IssueKey: l.IssueKey, Relationship: l.Relationship, Origin: string(l.Origin()),
			suspectDTO: toSuspectDTO(r.IssueSuspect(l))}
		if l.ServiceID != "" {
			sid := l.ServiceID
			is.ServiceID = &sid
		}
		out.Issues = append(out.Issues, is)
	}
	return out
}

// toRequirementDTOs converts a list of requirements; the list is never
// null.
func toRequirementDTOs(rows []*requirement.Requirement) []requirementDTO {
	out := make([]requirementDTO, 0, len(rows))
	for _, r := range rows {
		out = append(out, toRequirementDTO(r))
	}
	return out
}

func toPageRefDTO(pg requirement.PageRef) pageRefDTO {
	return pageRefDTO{PageID: pg.PageID, Title: pg.Title}
}

// pageViewDTO answers the page view.
type pageViewDTO struct {
	Requirements []requirementDTO `json:"requirements"`
}

// expandReferences reads expand: a comma-separated list whose only known
// value is references.
func expandReferences(r *http.Request) (bool, error) {
	refs := false
	for _, v := range r.URL.Query()["expand"] {
		for part := range strings.SplitSeq(v, ",") {
			switch strings.TrimSpace(part) {
			case "":
			case "references":
				refs = true
			default:
				return false, apperr.InvalidNamed("expand", "unknown expand value %q: the only one is references", part)
			}
		}
	}
	return refs, nil
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	v, err := httpapi.QueryInt(r, "v", 0, 1, wiki.MaxBaseline)
	if err != nil {
		return err
	}
	refs, err := expandReferences(r)
	if err != nil {
		return err
	}
	req, err := h.Requirements.Requirement(r.Context(), p.Tenant, r.PathValue("spaceKey"), r.PathValue("key"), v)
	if err != nil {
		return err
	}
	out := toRequirementDTO(req)
	if refs {
		pages, err := h.Requirements.References(r.Context(), p.Tenant, req)
		if err != nil {
			return err
		}
		list := make([]pageRefDTO, 0, len(pages))
		for _, pg := range pages {
			list = append(list, toPageRefDTO(pg))
		}
		out.References = &list
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) page(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	rows, err := h.Requirements.ViewPage(r.Context(), p.Tenant, p.User, r.PathValue("spaceKey"), r.PathValue("pageId"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, pageViewDTO{Requirements: toRequirementDTOs(rows)})
	return nil
}

func readOnly(_ http.ResponseWriter, r *http.Request, _ auth.Principal) error {
	return httpapi.MethodNotAllowed([]string{http.MethodGet}, "%s must not be used on %s: requirements change only when their page is saved",
		r.Method, r.URL.Path)
}

func requirement3(http.ResponseWriter, *http.Request, auth.Principal) error {
	return apperr.Gonef("GET /rest/reqs/1/requirement3 must not be used: use GET /rest/reqs/1/requirement2/{spaceKey}")
}
