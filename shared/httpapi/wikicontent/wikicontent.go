// Package wikicontent is the WikiContent route group: how pages reach the
// service (PUT, GET and DELETE /rest/reqs/1/content/{contentId}, see
// shared/openapi/wiki.yaml), the status-only reindex of the spec (POST
// /rest/reqs/1/helpers/reindex/{contentId}) and the deprecated POST
// /rest/reqs/1/sync (410). Every route needs a wiki user (Member).
package wikicontent

import (
	"context"
	"net/http"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// Pages is what the route group needs of the page service
// (wiki.Service implements it).
type Pages interface {
	// SavePage stores and indexes a page: invalid input, too large, conflict.
	SavePage(ctx context.Context, tenant, actor string, in wiki.PageInput) (*wiki.Result, error)
	// Page returns a page: invalid id, not found.
	Page(ctx context.Context, tenant, id string) (*wiki.Page, error)
	// DeletePage deletes a page: invalid id, not found, conflict.
	DeletePage(ctx context.Context, tenant, actor, id string) error
	// Reindex reindexes a stored page: invalid id, not found, conflict.
	Reindex(ctx context.Context, tenant, actor, id string) (*wiki.Result, error)
}

// Handler serves the route group. Register works on a zero Handler (the
// route-agreement test lists its routes); serving needs Pages.
type Handler struct {
	Pages Pages
}

// Register declares the routes of WikiContent in template.yaml.
func (h *Handler) Register(rt *httpapi.Router) {
	rt.Handle("PUT /rest/reqs/1/content/{contentId}", httpapi.Member, h.put)
	rt.Handle("GET /rest/reqs/1/content/{contentId}", httpapi.Member, h.get)
	rt.Handle("DELETE /rest/reqs/1/content/{contentId}", httpapi.Member, h.delete)
	rt.Handle("POST /rest/reqs/1/helpers/reindex/{contentId}", httpapi.Member, h.reindex)
	rt.Handle("POST /rest/reqs/1/sync", httpapi.Reader, deprecatedSync, httpapi.Accepts())
}

// pageInDTO is the body of PUT /content/{contentId}.
type pageInDTO struct {
	// ID may repeat the path's contentId; it must then be equal.
	ID       *string `json:"id"`
	SpaceKey string  `json:"spaceKey"`
	Title    string  `json:"title"`
	ParentID *string `json:"parentId"`
	Body     *string `json:"body"`
}

// entity is the page to save as the path's id; Body must be set.
func (d pageInDTO) entity(id string) wiki.PageInput {
	in := wiki.PageInput{ID: id, SpaceKey: d.SpaceKey, Title: d.Title, Body: *d.Body}
	if d.ParentID != nil {
		in.ParentID = *d.ParentID
	}
	return in
}

// keyStatusDTO is one requirement in a save or reindex answer.
type keyStatusDTO struct {
	SpaceKey          string `json:"spaceKey"`
	Key               string `json:"key"`
	Status            string `json:"status"`
	HTMLNeedsUpdating bool   `json:"htmlNeedsUpdating"`
}

// resultDTO answers a save or a reindex.
type resultDTO struct {
	ID           string         `json:"id"`
	SpaceKey     string         `json:"spaceKey"`
	Title        string         `json:"title"`
	ParentID     *string        `json:"parentId"`
	Version      int            `json:"version"`
	Requirements []keyStatusDTO `json:"requirements"`
	Duplicates   []string       `json:"duplicates"`
	// Warnings name issue macros whose serverId names no integration.
	Warnings []warningDTO `json:"warnings"`
}

// warningDTO is one entry of a save answer's warnings.
type warningDTO struct {
	Key     string `json:"key"`
	Message string `json:"message"`
}

// pageDTO answers GET /content/{contentId}.
type pageDTO struct {
	ID       string  `json:"id"`
	SpaceKey string  `json:"spaceKey"`
	Title    string  `json:"title"`
	ParentID *string `json:"parentId"`
	Version  int     `json:"version"`
	Body     string  `json:"body"`
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toResultDTO(res *wiki.Result) resultDTO {
	out := resultDTO{
		ID: res.Page.ID, SpaceKey: res.Page.SpaceKey, Title: res.Page.Title, ParentID: nullable(res.Page.ParentID),
		Version: res.Page.Version, Requirements: []keyStatusDTO{}, Duplicates: []string{}, Warnings: []warningDTO{},
	}
	for _, w := range res.Warnings {
		out.Warnings = append(out.Warnings, warningDTO{Key: w.Key, Message: w.Message})
	}
	for _, s := range res.Requirements {
		out.Requirements = append(out.Requirements, keyStatusDTO{SpaceKey: s.SpaceKey, Key: s.Key, Status: string(s.Status), HTMLNeedsUpdating: s.HTMLNeedsUpdating})
	}
	out.Duplicates = append(out.Duplicates, res.Duplicates...)
	return out
}

func toPageDTO(pg *wiki.Page) pageDTO {
	return pageDTO{ID: pg.ID, SpaceKey: pg.SpaceKey, Title: pg.Title, ParentID: nullable(pg.ParentID), Version: pg.Version, Body: pg.Body}
}

func (h *Handler) put(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	id := r.PathValue("contentId")
	if err := wiki.CheckContentID("contentId", id); err != nil {
		return err
	}
	var in pageInDTO
	if err := httpapi.Decode(r, &in); err != nil {
		return err
	}
	if in.ID != nil && *in.ID != id {
		return apperr.Invalidf("id %q in the body differs from the contentId %q of the path", *in.ID, id)
	}
	if in.Body == nil {
		return apperr.Invalidf("body is required: the page in storage format (it may be empty)")
	}
	res, err := h.Pages.SavePage(r.Context(), p.Tenant, p.User, in.entity(id))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toResultDTO(res))
	return nil
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	pg, err := h.Pages.Page(r.Context(), p.Tenant, r.PathValue("contentId"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toPageDTO(pg))
	return nil
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	if err := h.Pages.DeletePage(r.Context(), p.Tenant, p.User, r.PathValue("contentId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) reindex(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	res, err := h.Pages.Reindex(r.Context(), p.Tenant, p.User, r.PathValue("contentId"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toResultDTO(res))
	return nil
}

func deprecatedSync(http.ResponseWriter, *http.Request, auth.Principal) error {
	return apperr.Gonef("POST /rest/reqs/1/sync is deprecated and no longer served: " +
		"issue links are synchronised by the tracker (PUT /rest/reqs/1/sync on the tracker)")
}
