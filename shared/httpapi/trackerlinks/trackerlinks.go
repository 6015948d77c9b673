// Package trackerlinks is the TrackerLinks route group: the links between
// issues and wiki requirements (/rest/reqs/1/issuelinks...) and the
// resynchronisation of issues with their wikis (PUT /rest/reqs/1/sync). It
// speaks JSON and leaves the behaviour to shared/tracker.
package trackerlinks

import (
	"net/http"
	"strings"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// NotImplemented is the fixed answer of GET /rest/reqs/1/issuelinks (spec
// §4.2), a JSON string.
const NotImplemented = "Not implemented: use GET /rest/reqs/1/issuelinks/{issueKey}"

// Handler serves the routes of the TrackerLinks function.
type Handler struct {
	Tracker *tracker.Service
}

// Register declares the routes of the TrackerLinks function in
// template.yaml. It only takes method values, so it works on a zero
// Handler.
func (h *Handler) Register(rt *httpapi.Router) {
	rt.Handle("GET /rest/reqs/1/issuelinks", httpapi.Member, h.fixed)
	rt.Handle("GET /rest/reqs/1/issuelinks/{issueKey}", httpapi.Member, h.get)
	rt.Handle("POST /rest/reqs/1/issuelinks/{issueKey}", httpapi.Member, h.create)
	rt.Handle("PUT /rest/reqs/1/issuelinks/{issueKey}", httpapi.Member, h.replace)
	rt.Handle("DELETE /rest/reqs/1/issuelinks/{issueKey}", httpapi.Member, h.delete)
	rt.Handle("DELETE /rest/reqs/1/issuelinks/{issueKey}/suspect", httpapi.Member, h.clearSuspect)
	rt.Handle("PUT /rest/reqs/1/sync", httpapi.Member, h.sync)
}

// linkInDTO is an issue link item (spec 2.6) or reference (2.7). The
// fields the GET answer adds are accepted, so a client can send back what
// it read: issueKey must then be the path's, requirementDeleted, origin
// and the suspect fields are ignored (a link made here is always the
// tracker's, and suspect marks come from the wiki).
type linkInDTO struct {
	ApplinkID          string  `json:"applinkId"`
	SpaceKey           string  `json:"spaceKey"`
	Key                string  `json:"key"`
	BaselineNumber     *int    `json:"baselineNumber"`
	Relationship       string  `json:"relationship"`
	GenericURL         *string `json:"genericUrl"`
	HTMLExcerpt        *string `json:"htmlExcerpt"`
	IssueKey           *string `json:"issueKey"`
	RequirementDeleted *bool   `json:"requirementDeleted"`
	Origin             *string `json:"origin"`
	Suspect            *bool   `json:"suspect"`
	SuspectSince       *string `json:"suspectSince"`
	SuspectCause       *struct {
		Fields []string `json:"fields"`
	} `json:"suspectCause"`
}

func (d linkInDTO) entity(issueKey string) tracker.LinkInput {
	ref := tracker.ReqRef{ApplinkID: d.ApplinkID, SpaceKey: d.SpaceKey, Key: d.Key}
	if d.BaselineNumber != nil {
		ref.Baseline = *d.BaselineNumber
	}
	return tracker.LinkInput{
		Link:        tracker.Link{IssueKey: issueKey, Req: ref, Relationship: requirement.NormalizeRelationship(d.Relationship)},
		HTMLExcerpt: d.HTMLExcerpt, GenericURL: d.GenericURL,
	}
}

// linkDTO is an issue link as the API shows it: spec 2.6 plus issueKey,
// whether the wiki deleted the requirement, and its origin ("PAGE" when a
// wiki page holds it, else "TRACKER").
type linkDTO struct {
	IssueKey           string `json:"issueKey"`
	ApplinkID          string `json:"applinkId"`
	SpaceKey           string `json:"spaceKey"`
	Key                string `json:"key"`
	BaselineNumber     *int   `json:"baselineNumber"`
	Relationship       string `json:"relationship"`
	GenericURL         string `json:"genericUrl"`
	HTMLExcerpt        string `json:"htmlExcerpt"`
	RequirementDeleted bool   `json:"requirementDeleted"`
	Origin             string `json:"origin"`
	// Suspect says whether the wiki changed the requirement since the
	// issue's users last reviewed it; suspectSince and
	// suspectCause only when it did.
	Suspect      bool             `json:"suspect"`
	SuspectSince string           `json:"suspectSince,omitempty"`
	SuspectCause *suspectCauseDTO `json:"suspectCause,omitempty"`
}

type suspectCauseDTO struct {
	Fields []string `json:"fields"`
}

func baselineNumber(b int) *int {
	if b <= 0 {
		return nil
	}
	return &b
}

func toLinkDTOs(views []tracker.LinkView) []linkDTO {
	out := make([]linkDTO, len(views))
	for i, v := range views {
		out[i] = linkDTO{IssueKey: v.IssueKey, ApplinkID: v.Req.ApplinkID, SpaceKey: v.Req.SpaceKey, Key: v.Req.Key,
			BaselineNumber: baselineNumber(v.Req.Baseline), Relationship: v.Relationship, GenericURL: v.GenericURL,
			HTMLExcerpt: v.HTMLExcerpt, RequirementDeleted: v.Deleted, Origin: v.Holds.Origin()}
		if m := v.Suspect; m != nil {
			out[i].Suspect, out[i].SuspectSince = true, m.Since.UTC().Format(time.RFC3339Nano)
			out[i].SuspectCause = &suspectCauseDTO{Fields: append([]string{}, m.Fields...)}
		}
	}
	return out
}

// decodeItems reads a JSON array of link items for the path's issue.
func decodeItems(r *http.Request) (string, []tracker.LinkInput, error) {
	issueKey := r.PathValue("issueKey")
	var in []linkInDTO
	if err := httpapi.Decode(r, &in); err != nil {
		return "", nil, err
	}
	if in == nil {
		return "", nil, apperr.Invalidf("the body must be a JSON array of issue links")
	}
	items := make([]tracker.LinkInput, len(in))
	for i, d := range in {
		if d.IssueKey != nil && *d.IssueKey != issueKey {
			return "", nil, apperr.Invalidf("item %d: issueKey %q is not the path's %q", i, *d.IssueKey, issueKey)
		}
		items[i] = d.entity(issueKey)
	}
	return issueKey, items, nil
}

func (h *Handler) fixed(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	httpapi.WriteJSON(w, http.StatusOK, NotImplemented)
	return nil
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	views, err := h.Tracker.IssueLinks(r.Context(), p.Tenant, r.PathValue("issueKey"), requirement.NormalizeRelationship(r.URL.Query().Get("relationship")))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toLinkDTOs(views))
	return nil
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	issueKey, items, err := decodeItems(r)
	if err != nil {
		return err
	}
	views, err := h.Tracker.CreateLinks(r.Context(), p.Tenant, issueKey, items)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toLinkDTOs(views))
	return nil
}

func (h *Handler) replace(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	issueKey, items, err := decodeItems(r)
	if err != nil {
		return err
	}
	views, err := h.Tracker.ReplaceLinks(r.Context(), p.Tenant, issueKey, requirement.NormalizeRelationship(r.URL.Query().Get("relationship")), items)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toLinkDTOs(views))
	return nil
}

// clearSuspect serves DELETE /rest/reqs/1/issuelinks/{issueKey}/suspect:
// the issue's users reviewed its suspect links → 204.
func (h *Handler) clearSuspect(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	if err := h.Tracker.ClearSuspect(r.Context(), p.Tenant, r.PathValue("issueKey")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	issueKey, items, err := decodeItems(r)
	if err != nil {
		return err
	}
	refs := make([]tracker.Link, len(items))
	for i, it := range items {
		refs[i] = it.Link
	}
	if err := h.Tracker.DeleteLinks(r.Context(), p.Tenant, issueKey, refs); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// syncLinkDTO is one link sent to a wiki by a sync.
type syncLinkDTO struct {
	IssueKey       string `json:"issueKey"`
	ApplinkID      string `json:"applinkId"`
	SpaceKey       string `json:"spaceKey"`
	Key            string `json:"key"`
	BaselineNumber *int   `json:"baselineNumber"`
	Relationship   string `json:"relationship"`
}

type syncDTO struct {
	Links        []syncLinkDTO `json:"links"`
	Requirements int           `json:"requirements"`
}

func toSyncDTO(res tracker.SyncResult) syncDTO {
	out := syncDTO{Links: make([]syncLinkDTO, len(res.Links)), Requirements: res.Requirements}
	for i, l := range res.Links {
		out.Links[i] = syncLinkDTO{IssueKey: l.IssueKey, ApplinkID: l.Req.ApplinkID, SpaceKey: l.Req.SpaceKey,
			Key: l.Req.Key, BaselineNumber: baselineNumber(l.Req.Baseline), Relationship: l.Relationship}
	}
	return out
}

// sync takes the issues as ?issues=A,B, ?issues=A&issues=B, or both.
func (h *Handler) sync(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var issues []string
	for _, v := range r.URL.Query()["issues"] {
		issues = append(issues, strings.Split(v, ",")...)
	}
	res, err := h.Tracker.Sync(r.Context(), p.Tenant, issues)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toSyncDTO(res))
	return nil
}
