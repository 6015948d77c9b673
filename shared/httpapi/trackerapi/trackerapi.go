// Package trackerapi is the TrackerApi route group: the tracker's resource
// information (GET /rest/reqs/1/api), the receipt of wiki messages (POST
// /rest/reqs/1/api), application link registration, listing, deletion,
// mode and version, the link dialog's search, and the tracker's OpenAPI
// document. It speaks JSON
// and leaves the behaviour to shared/tracker.
package trackerapi

import (
	"bytes"
	"net/http"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/openapi"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// Handler serves the routes of the TrackerApi function.
type Handler struct {
	Tracker *tracker.Service
}

// Register declares the routes of the TrackerApi function in template.yaml.
// It only takes method values, so it works on a zero Handler.
func (h *Handler) Register(rt *httpapi.Router) {
	rt.HandleAnonymous("GET /rest/reqs/1/api", h.info)
	rt.Handle("POST /rest/reqs/1/api", httpapi.LinkOnly, h.receive)
	rt.Handle("GET /rest/reqs/1/applinks", httpapi.Admin, h.listApplinks)
	rt.Handle("GET /rest/reqs/1/api/{applinkId}", httpapi.Admin, h.getApplink)
	rt.Handle("PUT /rest/reqs/1/api/{applinkId}", httpapi.Admin, h.putApplink)
	rt.Handle("DELETE /rest/reqs/1/api/{applinkId}", httpapi.Admin, h.deleteApplink)
	rt.Handle("PUT /rest/reqs/1/api/{applinkId}/mode", httpapi.Admin, h.putMode)
	// The wiki may also set the version with its own credential, as the
	// tracker does on the wiki's version endpoint.
	rt.Handle("PUT /rest/reqs/1/api/{applinkId}/version", httpapi.AdminOrOwnLink, h.putVersion)
	rt.Handle("GET /rest/reqs/1/api/{applinkId}/requirements", httpapi.Member, h.search)
	rt.HandleAnonymous("GET /rest/reqs/1/openapi", openapi.Handler(openapi.Tracker))
}

// ---------------------------------------------------------------- GET /rest/reqs/1/api

type versionsDTO struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

type infoDTO struct {
	User              *string     `json:"user"`
	Versions          versionsDTO `json:"versions"`
	ApplinkRecognized *bool       `json:"applinkRecognized,omitempty"`
}

func (h *Handler) info(w http.ResponseWriter, r *http.Request) error {
	out := infoDTO{Versions: versionsDTO{Min: tracker.MinVersion, Max: tracker.MaxVersion}}
	var caller *auth.Principal
	if p, ok := httpapi.Caller(r); ok {
		caller, out.User = &p, &p.User
	}
	id, u := r.URL.Query().Get("applinkId"), r.URL.Query().Get("url")
	if id != "" || u != "" {
		ok, err := h.Tracker.Recognize(r.Context(), caller, id, u)
		if err != nil {
			return err
		}
		out.ApplinkRecognized = &ok
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// ---------------------------------------------------------------- POST /rest/reqs/1/api

type resultDTO struct {
	ID      *int64 `json:"id"`
	Status  string `json:"status"`
	Message string `json:"message"`
}

type resultsDTO struct {
	Results []resultDTO `json:"results"`
}

func toResultDTO(res tracker.Result) resultDTO {
	return resultDTO{ID: res.ID, Status: string(res.Status), Message: res.Message}
}

func (h *Handler) receive(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var raw jsontext.Value
	if err := httpapi.Decode(r, &raw); err != nil {
		return err
	}
	msgs, err := decodeMessages(raw)
	if err != nil {
		return err
	}
	results, err := h.Tracker.Receive(r.Context(), p.Tenant, p.Scope, msgs)
	if err != nil {
		return err
	}
	out := resultsDTO{Results: make([]resultDTO, len(results))}
	for i, res := range results {
		out.Results[i] = toResultDTO(res)
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// ---------------------------------------------------------------- applinks

// applinkInDTO is the body of PUT /rest/reqs/1/api/{applinkId}. The fields
// GET answers are accepted too (applinkId must then be the path's; hasToken
// is ignored), so an admin can edit what GET gave.
type applinkInDTO struct {
	ApplinkID   *string `json:"applinkId"`
	Name        string  `json:"name"`
	URL         string  `json:"url"`
	ServiceID   string  `json:"serviceId"`
	Token       *string `json:"token"`
	Mode        *string `json:"mode"`
	Version     *int    `json:"version"`
	RotateToken bool    `json:"rotateToken"`
	HasToken    *bool   `json:"hasToken"`
}

func (d applinkInDTO) entity() tracker.Registration {
	return tracker.Registration{
		Name: d.Name, URL: d.URL, ServiceID: d.ServiceID, WikiToken: d.Token,
		Mode: d.Mode, Version: d.Version, RotateToken: d.RotateToken,
	}
}

// applinkDTO is an applink as the API shows it: never with the wiki token,
// and with the incoming token only when it was just created.
type applinkDTO struct {
	ApplinkID     string `json:"applinkId"`
	Name          string `json:"name"`
	URL           string `json:"url"`
	ServiceID     string `json:"serviceId"`
	Mode          string `json:"mode"`
	Version       int    `json:"version"`
	HasToken      bool   `json:"hasToken"`
	IncomingToken string `json:"incomingToken,omitempty"`
}

func toApplinkDTO(a tracker.Applink) applinkDTO {
	return applinkDTO{ApplinkID: a.ID, Name: a.Name, URL: a.URL, ServiceID: a.ServiceID, Mode: string(a.Mode),
		Version: a.Version, HasToken: a.WikiToken != ""}
}

func (h *Handler) getApplink(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	a, err := h.Tracker.Applink(r.Context(), p.Tenant, r.PathValue("applinkId"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toApplinkDTO(a))
	return nil
}

// listApplinks answers the tenant's applinks as GET .../api/{applinkId}
// answers each: never a token.
func (h *Handler) listApplinks(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	all, err := h.Tracker.Applinks(r.Context(), p.Tenant)
	if err != nil {
		return err
	}
	out := make([]applinkDTO, 0, len(all))
	for _, a := range all {
		out = append(out, toApplinkDTO(a))
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// deleteApplink deletes an applink with its links, excerpts, pending
// messages and credentials: 204 (docs/tracker.md, "Deleting an
// application link").
func (h *Handler) deleteApplink(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	if err := h.Tracker.DeleteApplink(r.Context(), p.Tenant, r.PathValue("applinkId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) putApplink(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	id := r.PathValue("applinkId")
	var in applinkInDTO
	if err := httpapi.Decode(r, &in); err != nil {
		return err
	}
	if in.ApplinkID != nil && *in.ApplinkID != id {
		return apperr.Invalidf("applinkId %q in the body is not the path's %q", *in.ApplinkID, id)
	}
	reg, err := h.Tracker.Register(r.Context(), p.Tenant, id, in.entity())
	if err != nil {
		return err
	}
	out := toApplinkDTO(reg.Applink)
	out.IncomingToken = reg.IncomingToken
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

type modeDTO struct {
	ApplinkID string `json:"applinkId"`
	Mode      string `json:"mode"`
}

func toModeDTO(a tracker.Applink) modeDTO {
	return modeDTO{ApplinkID: a.ID, Mode: string(a.Mode)}
}

func (h *Handler) putMode(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var mode *string
	if err := httpapi.Decode(r, &mode); err != nil {
		return err
	}
	if mode == nil {
		return apperr.Invalidf("the body must be a JSON string: \"AUTO\", \"MANUAL\" or \"DISABLED\"")
	}
	a, err := h.Tracker.SetMode(r.Context(), p.Tenant, r.PathValue("applinkId"), *mode)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toModeDTO(a))
	return nil
}

type versionDTO struct {
	ApplinkID string `json:"applinkId"`
	Version   int    `json:"version"`
}

func toVersionDTO(a tracker.Applink) versionDTO {
	return versionDTO{ApplinkID: a.ID, Version: a.Version}
}

func (h *Handler) putVersion(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var v *int
	if err := httpapi.Decode(r, &v); err != nil {
		return err
	}
	if v == nil {
		return apperr.Invalidf("the body must be a JSON integer, the API version asked for")
	}
	a, err := h.Tracker.SetVersion(r.Context(), p.Tenant, r.PathValue("applinkId"), *v)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toVersionDTO(a))
	return nil
}

// ---------------------------------------------------------------- link dialog

// Paging of the link dialog, as the wiki's search (docs/architecture.md, "Requests").
const (
	defaultLimit = 50
	maxLimit     = 500
)

func (h *Handler) search(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	limit, err := httpapi.QueryLimit(r, "limit", defaultLimit, maxLimit)
	if err != nil {
		return err
	}
	offset, err := httpapi.QueryInt(r, "offset", 0, 0, 0)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	res, err := h.Tracker.SearchRequirements(r.Context(), p.Tenant, r.PathValue("applinkId"),
		tracker.WikiSearch{SpaceKey: q.Get("spaceKey"), Q: q.Get("q"), Offset: offset, Limit: limit})
	if err != nil {
		return err
	}
	if res.NegotiationErr != nil {
		httpapi.Logger(r.Context()).WarnContext(r.Context(), "API version negotiation failed",
			"applinkId", r.PathValue("applinkId"), "error", res.NegotiationErr.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(bytes.TrimSpace(res.Results)) // the status is sent: nothing left to answer
	return nil
}
