// Package wikiintegrations is the WikiIntegrations route group: the
// integration descriptors of spec 2.3 (list, create, detail, update) and
// their deletion, the outbound queue of each integration (list, push now,
// delete), the version and links callbacks a tracker calls with its
// incomingToken (docs/integrations.md), and the admin settings. Every route needs a wiki administrator,
// except version and links, which also take the integration's own Link
// credential. docs/integrations.md describes the behaviour.
package wikiintegrations

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/requirement"
)

// Service is what the route group needs (integration.Service implements
// it). Errors: invalid input (400), not found (404, also for another
// tenant's ids), conflict (409), and *integration.DeliveryError from Push.
type Service interface {
	List(ctx context.Context, tenant string) ([]integration.View, error)
	Get(ctx context.Context, tenant, serviceID string) (integration.View, error)
	Create(ctx context.Context, tenant string, p integration.Patch) (integration.View, string, error)
	Update(ctx context.Context, tenant, serviceID string, p integration.Patch) (integration.View, string, error)
	Delete(ctx context.Context, tenant, serviceID string) error
	Version(ctx context.Context, tenant, serviceID string) (int, error)
	SetVersion(ctx context.Context, tenant, serviceID string, v int) (int, error)
	Queue(ctx context.Context, tenant, serviceID string, limit int, includeDone bool, after string) ([]*outbox.Message, bool, error)
	Push(ctx context.Context, tenant, serviceID, id string) (*outbox.Message, error)
	DeleteMessage(ctx context.Context, tenant, serviceID, id string) error
	ReplaceLinks(ctx context.Context, tenant, serviceID string, sets []integration.LinkSet) (int, error)
	Reconcile(ctx context.Context, tenant, serviceID, actor string) (int, error)
	Settings(ctx context.Context, tenant string) (integration.Settings, error)
	PutSettings(ctx context.Context, tenant string, s integration.Settings) (integration.Settings, error)
}

var _ Service = (*integration.Service)(nil)

// Handler serves the route group. Register works on a zero Handler (the
// route-agreement test lists its routes); serving needs Service.
type Handler struct {
	Service Service
}

// Register declares the routes of WikiIntegrations in template.yaml.
func (h *Handler) Register(rt *httpapi.Router) {
	rt.Handle("GET /rest/reqs/1/integration", httpapi.Admin, h.list)
	rt.Handle("POST /rest/reqs/1/integration", httpapi.Admin, h.create)
	rt.Handle("GET /rest/reqs/1/integration/{serviceId}", httpapi.Admin, h.get)
	rt.Handle("PUT /rest/reqs/1/integration/{serviceId}", httpapi.Admin, h.update)
	rt.Handle("DELETE /rest/reqs/1/integration/{serviceId}", httpapi.Admin, h.delete)
	rt.Handle("GET /rest/reqs/1/integration/{serviceId}/queue/outbound", httpapi.Admin, h.queue)
	rt.Handle("PUT /rest/reqs/1/integration/{serviceId}/queue/outbound/{messageId}", httpapi.Admin, h.push)
	rt.Handle("DELETE /rest/reqs/1/integration/{serviceId}/queue/outbound/{messageId}", httpapi.Admin, h.deleteMessage)
	rt.Handle("GET /rest/reqs/1/integration/{serviceId}/version", httpapi.AdminOrOwnLink, h.version)
	rt.Handle("PUT /rest/reqs/1/integration/{serviceId}/version", httpapi.AdminOrOwnLink, h.setVersion)
	rt.Handle("PUT /rest/reqs/1/integration/{serviceId}/links", httpapi.AdminOrOwnLink, h.links)
	rt.Handle("POST /rest/reqs/1/integration/{serviceId}/reconcile", httpapi.Admin, h.reconcile)
	rt.Handle("GET /rest/reqs/1/admin/settings", httpapi.Admin, h.settings)
	rt.Handle("PUT /rest/reqs/1/admin/settings", httpapi.Admin, h.putSettings)
}

// descriptorDTO is the IntegrationDescriptor of spec 2.3 as answered. The
// tracker credential is never in it; hasToken says whether one is set.
type descriptorDTO struct {
	ServiceID                 string `json:"serviceId"`
	ApplinkID                 string `json:"applinkId"`
	Label                     string `json:"label"`
	DisplayURL                string `json:"displayUrl"`
	RPCURL                    string `json:"rpcUrl"`
	Endpoint                  string `json:"endpoint"`
	SendErrorsToEmail         string `json:"sendErrorsToEmail"`
	SendErrorsToEmailThrottle int    `json:"sendErrorsToEmailThrottle"`
	UserKey                   string `json:"userKey"`
	Username                  string `json:"username"`
	Version                   int    `json:"version"`
	CountMessagesInQueue      int    `json:"countMessagesInQueue"`
	Status                    string `json:"status"`
	HasToken                  bool   `json:"hasToken"`
	// PendingRemovals counts the links pages stopped holding that an
	// integration below version 5 could not be told to remove (read-only).
	PendingRemovals int `json:"pendingRemovals"`
	// IncomingToken is answered once: on create and on rotateToken.
	IncomingToken string `json:"incomingToken,omitempty"`
}

func toDescriptorDTO(v integration.View, incoming string) descriptorDTO {
	d := v.Descriptor
	return descriptorDTO{
		ServiceID: d.ServiceID, ApplinkID: d.ApplinkID, Label: d.Label, DisplayURL: d.DisplayURL, RPCURL: d.RPCURL,
		Endpoint: d.Endpoint, SendErrorsToEmail: d.SendErrorsToEmail, SendErrorsToEmailThrottle: d.SendErrorsToEmailThrottle,
		UserKey: d.UserKey, Username: d.Username, Version: d.Version, CountMessagesInQueue: v.CountMessagesInQueue,
		Status: string(d.Status), HasToken: d.Token != "", IncomingToken: incoming, PendingRemovals: d.PendingRemovals,
	}
}

// descriptorInDTO is the body of POST and PUT: the descriptor as GET
// answers it (absent fields keep their value on PUT), plus the write-only
// token and, on PUT, rotateToken. Read-only fields are accepted and
// ignored, so that a GET answer can be sent back as is.
type descriptorInDTO struct {
	ServiceID                 *string `json:"serviceId"`
	ApplinkID                 *string `json:"applinkId"`
	Label                     *string `json:"label"`
	DisplayURL                *string `json:"displayUrl"`
	RPCURL                    *string `json:"rpcUrl"`
	Endpoint                  *string `json:"endpoint"`
	SendErrorsToEmail         *string `json:"sendErrorsToEmail"`
	SendErrorsToEmailThrottle *int    `json:"sendErrorsToEmailThrottle"`
	UserKey                   *string `json:"userKey"`
	Username                  *string `json:"username"`
	Version                   *int    `json:"version"`
	Status                    *string `json:"status"`
	Token                     *string `json:"token"`
	RotateToken               bool    `json:"rotateToken"`
	// Read-only: ignored.
	CountMessagesInQueue json.RawMessage `json:"countMessagesInQueue"`
	PendingRemovals      json.RawMessage `json:"pendingRemovals"`
	HasToken             json.RawMessage `json:"hasToken"`
	IncomingToken        json.RawMessage `json:"incomingToken"`
}

func (d descriptorInDTO) entity() integration.Patch {
	return integration.Patch{
		ServiceID: d.ServiceID, ApplinkID: d.ApplinkID, Label: d.Label, DisplayURL: d.DisplayURL, RPCURL: d.RPCURL,
		Endpoint: d.Endpoint, SendErrorsToEmail: d.SendErrorsToEmail, SendErrorsToEmailThrottle: d.SendErrorsToEmailThrottle,
		UserKey: d.UserKey, Username: d.Username, Version: d.Version, Status: d.Status, Token: d.Token,
		RotateToken: d.RotateToken,
	}
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	views, err := h.Service.List(r.Context(), p.Tenant)
	if err != nil {
		return err
	}
	out := make([]descriptorDTO, len(views))
	for i, v := range views {
		out[i] = toDescriptorDTO(v, "")
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var in descriptorInDTO
	if err := httpapi.Decode(r, &in); err != nil {
		return err
	}
	v, incoming, err := h.Service.Create(r.Context(), p.Tenant, in.entity())
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toDescriptorDTO(v, incoming))
	return nil
}

func (h *Handler) get(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	v, err := h.Service.Get(r.Context(), p.Tenant, r.PathValue("serviceId"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toDescriptorDTO(v, ""))
	return nil
}

func (h *Handler) update(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var in descriptorInDTO
	if err := httpapi.Decode(r, &in); err != nil {
		return err
	}
	v, incoming, err := h.Service.Update(r.Context(), p.Tenant, r.PathValue("serviceId"), in.entity())
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toDescriptorDTO(v, incoming))
	return nil
}

// delete removes an integration with its queue and incoming credential:
// 204 (docs/integrations.md, "Deleting an integration").
func (h *Handler) delete(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	if err := h.Service.Delete(r.Context(), p.Tenant, r.PathValue("serviceId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// messageDTO is one outbound queue message (shared/openapi/wiki.yaml).
type messageDTO struct {
	ID             string  `json:"id"`
	State          string  `json:"state"`
	CreatedAt      string  `json:"createdAt"`
	Type           string  `json:"type"`
	AuthorKey      string  `json:"authorKey,omitempty"`
	AuthorName     string  `json:"authorName,omitempty"`
	SpaceKey       string  `json:"spaceKey"`
	Key            string  `json:"key"`
	Baseline       *int    `json:"baseline"`
	ObjectKey      string  `json:"objectKey"`
	Relationship   string  `json:"relationship"`
	NewHTMLExcerpt string  `json:"newHtmlExcerpt"`
	NewSpaceKey    string  `json:"newSpaceKey"`
	NewKey         string  `json:"newKey"`
	NewBaseline    *int    `json:"newBaseline"`
	NewURL         string  `json:"newUrl"`
	LastResponse   *string `json:"lastResponse,omitempty"`
	// Version 5: a LINKS message's page link set and version, an UPDATED
	// message's changed fields and, when the change made links suspect,
	// suspect and its cause, as a version-5 tracker receives them.
	Links         *[]linkDTO                `json:"links,omitempty"`
	Version       *int64                    `json:"version,omitempty"`
	ChangedFields []string                  `json:"changedFields,omitempty"`
	Suspect       *bool                     `json:"suspect,omitempty"`
	SuspectCause  *integration.SuspectCause `json:"suspectCause,omitempty"`
}

// linkDTO is one link of a LINKS message, as the tracker receives it.
type linkDTO struct {
	ObjectKey    string `json:"objectKey"`
	Relationship string `json:"relationship"`
}

func optInt(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

func toMessageDTO(m *outbox.Message, withResponse bool) messageDTO {
	out := messageDTO{
		ID: m.ID, State: string(m.State), CreatedAt: httpapi.FormatTime(m.CreatedAt), Type: string(m.Type),
		AuthorKey: m.AuthorKey, AuthorName: m.AuthorName, SpaceKey: m.SpaceKey, Key: m.Key, Baseline: optInt(m.Baseline),
		ObjectKey: m.ObjectKey, Relationship: m.Relationship, NewHTMLExcerpt: m.NewHTMLExcerpt, NewSpaceKey: m.NewSpaceKey,
		NewKey: m.NewKey, NewBaseline: optInt(m.NewBaseline), NewURL: m.NewURL, ChangedFields: m.ChangedFields,
	}
	if len(m.SuspectFields) > 0 {
		suspect := true
		out.Suspect, out.SuspectCause = &suspect, &integration.SuspectCause{Fields: append([]string{}, m.SuspectFields...)}
	}
	if m.Type == outbox.Links {
		links := make([]linkDTO, 0, len(m.Links))
		for _, l := range m.Links {
			links = append(links, linkDTO{ObjectKey: l.IssueKey, Relationship: l.Relationship})
		}
		v := m.LinksVersion
		out.Links, out.Version = &links, &v
	}
	if withResponse {
		lr := m.LastResponse
		out.LastResponse = &lr
	}
	return out
}

func (h *Handler) queue(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	limit, err := httpapi.QueryLimit(r, "limit", integration.QueueLimit, integration.QueueMaxLimit)
	if err != nil {
		return err
	}
	includeDone, err := httpapi.QueryBool(r, "includeDone")
	if err != nil {
		return err
	}
	// The spec spells it includeLastRespnse; the correct spelling is
	// accepted too.
	withResponse, err := httpapi.QueryBool(r, "includeLastRespnse")
	if err != nil {
		return err
	}
	if !withResponse {
		if withResponse, err = httpapi.QueryBool(r, "includeLastResponse"); err != nil {
			return err
		}
	}
	msgs, more, err := h.Service.Queue(r.Context(), p.Tenant, r.PathValue("serviceId"), limit, includeDone, r.URL.Query().Get("after"))
	if err != nil {
		return err
	}
	out := make([]messageDTO, len(msgs))
	for i, m := range msgs {
		out[i] = toMessageDTO(m, withResponse)
	}
	// The answer is a JSON array (the spec's shape, which existing clients
	// read), so whether a next page has messages is a header: X-Has-More.
	// The next page is ?after=<the last id answered>.
	w.Header().Set(HasMoreHeader, strconv.FormatBool(more))
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// HasMoreHeader is the header of the queue listing that says, "true" or
// "false", whether the next page (after the last message answered) has
// messages: the listing is a JSON array, which has no room for hasMore.
const HasMoreHeader = "X-Has-More"

// pushDTO answers a push: 200 when the tracker took the message, 502 with
// the tracker's failure (status and message as every error body). A 502
// names the remote status, the reason or the kind of transport failure,
// never the remote body: its lastResponse is the failure's Summary, and
// the queue listing shows the recorded one (with the start of the body).
type pushDTO struct {
	ID           string `json:"id"`
	State        string `json:"state"`
	LastResponse string `json:"lastResponse"`
}

// pushFailedDTO is a 502 push answer: an error body with the message.
type pushFailedDTO struct {
	httpapi.ErrorBody
	pushDTO
}

func toPushDTO(m *outbox.Message) pushDTO {
	return pushDTO{ID: m.ID, State: string(m.State), LastResponse: m.LastResponse}
}

func (h *Handler) push(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	m, err := h.Service.Push(r.Context(), p.Tenant, r.PathValue("serviceId"), r.PathValue("messageId"))
	var de *integration.DeliveryError
	if errors.As(err, &de) {
		// The log line (not the answer) carries the recorded failure.
		e := apperr.Wrap(apperr.BadGatewayf("%s", de.Error()), errors.New(de.LastResponse()))
		out := toPushDTO(m)
		out.LastResponse = de.Summary()
		return httpapi.WithBody(e, pushFailedDTO{httpapi.NewErrorBody(http.StatusBadGateway, e.Message), out})
	}
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toPushDTO(m))
	return nil
}

func (h *Handler) deleteMessage(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	if err := h.Service.DeleteMessage(r.Context(), p.Tenant, r.PathValue("serviceId"), r.PathValue("messageId")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// reconcileDTO answers a reconcile.
type reconcileDTO struct {
	Queued int `json:"queued"` // requirements whose link sets were queued
}

// reconcile queues the page link sets of every requirement the integration
// may disagree about: POST .../reconcile → {"queued": n}. A body, if any,
// is ignored.
func (h *Handler) reconcile(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	n, err := h.Service.Reconcile(r.Context(), p.Tenant, r.PathValue("serviceId"), p.User)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, reconcileDTO{Queued: n})
	return nil
}

// versionDTO answers the version endpoint: the integration's API version
// and the highest this wiki supports.
type versionDTO struct {
	Version int `json:"version"`
	Max     int `json:"max"`
}

func toVersionDTO(v int) versionDTO {
	return versionDTO{Version: v, Max: integration.MaxVersion}
}

func (h *Handler) version(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	v, err := h.Service.Version(r.Context(), p.Tenant, r.PathValue("serviceId"))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toVersionDTO(v))
	return nil
}

func (h *Handler) setVersion(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var asked *int64
	if err := httpapi.Decode(r, &asked); err != nil {
		return err
	}
	if asked == nil {
		return apperr.Invalidf("the body must be a JSON integer, the API version asked for")
	}
	if *asked < 0 {
		return apperr.InvalidNamed("version", "version must be 0 or more, got %d", *asked)
	}
	v, err := h.Service.SetVersion(r.Context(), p.Tenant, r.PathValue("serviceId"), int(min(*asked, integration.MaxVersion)))
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toVersionDTO(v))
	return nil
}

// linkSetInDTO is one entry of the links callback body.
type linkSetInDTO struct {
	SpaceKey string `json:"spaceKey"`
	Key      string `json:"key"`
	Baseline *int   `json:"baseline"`
	// Holds "TRACKER" says links is exactly the set the tracker holds;
	// absent, a tracker below version 5 sends its whole set.
	Holds *string `json:"holds"`
	Links []struct {
		IssueKey     string `json:"issueKey"`
		Relationship string `json:"relationship"`
	} `json:"links"`
}

func (d linkSetInDTO) entity() (integration.LinkSet, error) {
	set := integration.LinkSet{SpaceKey: d.SpaceKey, Key: d.Key}
	if d.Links != nil { // null or absent stays nil: integration.CheckLinkSets refuses it
		set.Links = make([]requirement.IssueLink, 0, len(d.Links))
	}
	if d.Holds != nil {
		if *d.Holds != string(requirement.OriginTracker) {
			return set, apperr.InvalidNamed("holds", "holds must be %q or absent, got %q", requirement.OriginTracker, *d.Holds)
		}
		set.TrackerHolds = true
	}
	if d.Baseline != nil {
		set.Baseline = *d.Baseline
	}
	for _, l := range d.Links {
		set.Links = append(set.Links, requirement.IssueLink{IssueKey: l.IssueKey, Relationship: l.Relationship})
	}
	return set, nil
}

// linksDTO answers the links callback.
type linksDTO struct {
	Updated int `json:"updated"` // requirements whose links changed
}

func (h *Handler) links(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var in []linkSetInDTO
	if err := httpapi.Decode(r, &in); err != nil {
		return err
	}
	if in == nil {
		return apperr.Invalidf("the body must be a JSON array of {spaceKey, key, baseline, links}")
	}
	sets := make([]integration.LinkSet, len(in))
	for i, d := range in {
		set, err := d.entity()
		if err != nil {
			return apperr.Invalidf("entry %d: %s", i, apperr.As(err).Message)
		}
		sets[i] = set
	}
	n, err := h.Service.ReplaceLinks(r.Context(), p.Tenant, r.PathValue("serviceId"), sets)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, linksDTO{Updated: n})
	return nil
}

// settingsDTO is the admin settings document, answered and sent (a field
// left out of a PUT keeps its value).
type settingsDTO struct {
	IsolateSpaces *bool     `json:"isolateSpaces"`
	SuspectFields *[]string `json:"suspectFields"`
}

func toSettingsDTO(s integration.Settings) settingsDTO {
	fields := s.EffectiveSuspectFields()
	return settingsDTO{IsolateSpaces: &s.IsolateSpaces, SuspectFields: &fields}
}

func (h *Handler) settings(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	s, err := h.Service.Settings(r.Context(), p.Tenant)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toSettingsDTO(s))
	return nil
}

func (h *Handler) putSettings(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var in settingsDTO
	if err := httpapi.Decode(r, &in); err != nil {
		return err
	}
	s, err := h.Service.Settings(r.Context(), p.Tenant)
	if err != nil {
		return err
	}
	if in.IsolateSpaces != nil {
		s.IsolateSpaces = *in.IsolateSpaces
	}
	if in.SuspectFields != nil {
		s.SuspectFields = append([]string{}, *in.SuspectFields...)
	}
	if s, err = h.Service.PutSettings(r.Context(), p.Tenant, s); err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toSettingsDTO(s))
	return nil
}
