// Package wikibaselines is the WikiBaselines route group: every
// /rest/reqs/1/baseline/... endpoint of spec §4.1 (list, create,
// create-instant, delete, label, pages) with the JSON of the wiki API (shared/openapi/wiki.yaml),
// plus status and progress: a freeze that does not finish within the
// request answers 202 FREEZING and is finished by WikiBaselineJobs.
// Every route needs a wiki user (Member). docs/baselines.md describes the
// behaviour.
package wikibaselines

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/httpapi"
)

// Baselines is what the route group needs of the baseline service
// (baseline.Service implements it).
type Baselines interface {
	// List returns a space's baselines: invalid space key, not found.
	List(ctx context.Context, tenant, space string) ([]*baseline.Baseline, error)
	// Create freezes a baseline: invalid input (query errors with a
	// position), not found (space, page), too large.
	Create(ctx context.Context, tenant, actor, space string, in baseline.CreateInput) (*baseline.Baseline, error)
	// CreateInstant freezes the requirements of a page (tree): invalid
	// input, not found, too large.
	CreateInstant(ctx context.Context, tenant, actor, space string, in baseline.InstantInput) (*baseline.Baseline, error)
	// Delete deletes a baseline and its copies: invalid input, not found.
	Delete(ctx context.Context, tenant, space string, n int) error
	// SetLabel changes a label: invalid input, not found.
	SetLabel(ctx context.Context, tenant, space string, n int, label string) (*baseline.Baseline, error)
	// Pages lists the pages of a baseline: invalid input, not found.
	Pages(ctx context.Context, tenant, space string, n int) ([]baseline.PageCount, error)
}

var _ Baselines = (*baseline.Service)(nil)

// Handler serves the route group. Register works on a zero Handler (the
// route-agreement test lists its routes); serving needs Baselines.
type Handler struct {
	Baselines Baselines
}

// Register declares the routes of WikiBaselines in template.yaml.
func (h *Handler) Register(rt *httpapi.Router) {
	rt.Handle("GET /rest/reqs/1/baseline/{spaceKey}", httpapi.Member, h.list)
	rt.Handle("POST /rest/reqs/1/baseline/{spaceKey}/1/create", httpapi.Member, h.create)
	rt.Handle("POST /rest/reqs/1/baseline/{spaceKey}/1/create-instant", httpapi.Member, h.createInstant)
	rt.Handle("DELETE /rest/reqs/1/baseline/{spaceKey}/{baseline}", httpapi.Member, h.delete)
	rt.Handle("PUT /rest/reqs/1/baseline/{spaceKey}/{baseline}/label", httpapi.Member, h.label, httpapi.Accepts("text/plain", "application/json"))
	rt.Handle("GET /rest/reqs/1/baseline/{spaceKey}/{baseline}/pages", httpapi.Member, h.pages)
}

// baselineDTO is a Baseline of the wiki API (shared/openapi/wiki.yaml). Count and PageLink are
// sent with expand=details and in the answers of the create routes.
type baselineDTO struct {
	SpaceKey  string  `json:"spaceKey"`
	Number    int     `json:"number"`
	Name      string  `json:"name"`
	Label     string  `json:"label"`
	CEO       string  `json:"ceo"`
	Instant   bool    `json:"instant"`
	CreatedAt string  `json:"createdAt"`
	CreatedBy string  `json:"createdBy"`
	Count     *int    `json:"count,omitempty"`
	PageLink  *string `json:"pageLink,omitempty"`
	// Status (an added field) is COMPLETE, FREEZING or FAILED.
	Status string `json:"status"`
	// Progress is sent for FREEZING and FAILED baselines.
	Progress *progressDTO `json:"progress,omitempty"`
	// Message says why a FAILED freeze gave up.
	Message string `json:"message,omitempty"`
	// Retitles (an added field, in create's answer only) says which page
	// the baseline renames to its name when it commits, so the rename is
	// never a surprise.
	Retitles *retitleDTO `json:"retitles,omitempty"`
}

// retitleDTO is the page a baseline renames and the title it gives it.
type retitleDTO struct {
	PageID string `json:"pageId"`
	Title  string `json:"title"`
}

// withRetitle adds to a create answer the page it renames.
func withRetitle(dto baselineDTO) baselineDTO {
	dto.Retitles = &retitleDTO{PageID: dto.CEO, Title: dto.Name}
	return dto
}

// progressDTO is how far a freeze got.
type progressDTO struct {
	Written int `json:"written"`
	Total   int `json:"total"`
}

func toBaselineDTO(b *baseline.Baseline, details bool) baselineDTO {
	out := baselineDTO{
		SpaceKey: b.SpaceKey, Number: b.Number, Name: b.Name, Label: b.Label, CEO: b.CEO, Instant: b.Instant,
		CreatedAt: httpapi.FormatTime(b.CreatedAt), CreatedBy: b.CreatedBy, Status: b.Status, Message: b.Message,
	}
	if out.Status == "" {
		out.Status = baseline.StatusComplete
	}
	if out.Status != baseline.StatusComplete {
		out.Progress = &progressDTO{Written: b.Count, Total: b.Total}
	}
	if details {
		count, link := b.Count, b.PageLink()
		out.Count, out.PageLink = &count, &link
	}
	return out
}

// pageCountDTO is one page of GET .../{baseline}/pages.
type pageCountDTO struct {
	PageID string `json:"pageId"`
	Title  string `json:"title"`
	Count  int    `json:"count"`
}

func toPageCountDTO(pg baseline.PageCount) pageCountDTO {
	return pageCountDTO{PageID: pg.PageID, Title: pg.Title, Count: pg.Count}
}

// pageID is a page id in a request body: a JSON string or a JSON integer
// (Confluence page ids are numbers); null leaves it unset.
type pageID string

// UnmarshalJSON implements json.Unmarshaler (httpapi.Unmarshal calls it
// with the member's value, already checked to be well-formed JSON).
func (p *pageID) UnmarshalJSON(data []byte) error {
	v := jsontext.Value(bytes.TrimSpace(data))
	switch v.Kind() {
	case 'n':
		return nil
	case '"':
		var s string
		if err := httpapi.Unmarshal(v, &s); err != nil {
			return apperr.Invalidf("a page id must be a string or an integer")
		}
		*p = pageID(s)
		return nil
	case '0':
		n := string(v)
		if _, err := strconv.ParseInt(n, 10, 64); err != nil || strings.HasPrefix(n, "-") {
			return apperr.Invalidf("a page id must be a string or a non-negative integer, got %.32s", n)
		}
		*p = pageID(n)
		return nil
	}
	return apperr.Invalidf("a page id must be a string or an integer")
}

// createInDTO is the body of POST .../1/create.
type createInDTO struct {
	Name        string `json:"name"`
	CEO         pageID `json:"ceo"`
	QueryString string `json:"queryString"`
}

func (d createInDTO) entity() baseline.CreateInput {
	return baseline.CreateInput{Name: d.Name, CEO: string(d.CEO), QueryString: d.QueryString}
}

// instantInDTO is the body of POST .../1/create-instant.
type instantInDTO struct {
	Name                string `json:"name"`
	FromCEO             pageID `json:"fromCeo"`
	FromCEOWithChildren bool   `json:"fromCeoWithChildren"`
}

func (d instantInDTO) entity() baseline.InstantInput {
	return baseline.InstantInput{Name: d.Name, FromCEO: string(d.FromCEO), WithChildren: d.FromCEOWithChildren}
}

// details reports whether expand (a comma-separated list whose only known
// value is details) asks for details; an unknown value is a 400, as for the
// requirement reads.
func details(r *http.Request) (bool, error) {
	found := false
	for _, v := range r.URL.Query()["expand"] {
		for _, part := range strings.Split(v, ",") {
			switch part = strings.TrimSpace(part); {
			case strings.EqualFold(part, "details"):
				found = true
			case part != "":
				return false, apperr.Invalidf("unknown expand value %q: the only one is details", part)
			}
		}
	}
	return found, nil
}

func (h *Handler) list(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	expand, err := details(r)
	if err != nil {
		return err
	}
	list, err := h.Baselines.List(r.Context(), p.Tenant, r.PathValue("spaceKey"))
	if err != nil {
		return err
	}
	out := make([]baselineDTO, 0, len(list))
	for _, b := range list {
		out = append(out, toBaselineDTO(b, expand))
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

func (h *Handler) create(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var in createInDTO
	if err := httpapi.Decode(r, &in); err != nil {
		return err
	}
	b, err := h.Baselines.Create(r.Context(), p.Tenant, p.User, r.PathValue("spaceKey"), in.entity())
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, createStatus(b), withRetitle(toBaselineDTO(b, true)))
	return nil
}

func (h *Handler) createInstant(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	var in instantInDTO
	if err := httpapi.Decode(r, &in); err != nil {
		return err
	}
	b, err := h.Baselines.CreateInstant(r.Context(), p.Tenant, p.User, r.PathValue("spaceKey"), in.entity())
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, createStatus(b), toBaselineDTO(b, true))
	return nil
}

// createStatus is 200 for a baseline frozen within the request, 202 for
// one the background worker finishes.
func createStatus(b *baseline.Baseline) int {
	if b.Status == baseline.StatusFreezing {
		return http.StatusAccepted
	}
	return http.StatusOK
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	n, err := baseline.ParseNumber(r.PathValue("baseline"))
	if err != nil {
		return err
	}
	if err := h.Baselines.Delete(r.Context(), p.Tenant, r.PathValue("spaceKey"), n); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (h *Handler) label(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	n, err := baseline.ParseNumber(r.PathValue("baseline"))
	if err != nil {
		return err
	}
	label, err := readLabel(r)
	if err != nil {
		return err
	}
	b, err := h.Baselines.SetLabel(r.Context(), p.Tenant, r.PathValue("spaceKey"), n, label)
	if err != nil {
		return err
	}
	httpapi.WriteJSON(w, http.StatusOK, toBaselineDTO(b, true))
	return nil
}

func (h *Handler) pages(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	n, err := baseline.ParseNumber(r.PathValue("baseline"))
	if err != nil {
		return err
	}
	pages, err := h.Baselines.Pages(r.Context(), p.Tenant, r.PathValue("spaceKey"), n)
	if err != nil {
		return err
	}
	out := make([]pageCountDTO, 0, len(pages))
	for _, pg := range pages {
		out = append(out, toPageCountDTO(pg))
	}
	httpapi.WriteJSON(w, http.StatusOK, out)
	return nil
}

// readLabel reads the body of PUT .../label: text/plain (the spec's type)
// or application/json holding a JSON string. A text/plain body that is
// exactly one JSON string literal, surrounding white space aside, is
// decoded: a widely used Python client of the original sends the label
// JSON-encoded ("v1.0" with its quotes) whatever the content type, and
// storing those quotes is never what its user meant. A label that really
// starts and ends with a quote is then sent as application/json
// ("\"Approved\""); a text/plain body that is not one valid JSON string
// literal ("a" and "b", "C:\path") is the label as sent. Anything else is
// 415. docs/baselines.md states the rule.
func readLabel(r *http.Request) (string, error) {
	switch httpapi.MediaType(r) {
	case "application/json":
		var label *string
		err := httpapi.Decode(r, &label)
		if e := apperr.As(err); e != nil && e.Code == apperr.Invalid {
			return "", apperr.InvalidField("label", "the body must be a JSON string, the label (%s)", e.Message)
		}
		if err != nil {
			return "", err
		}
		if label == nil {
			return "", apperr.InvalidField("label", "the body must be a JSON string, the label, not null")
		}
		return *label, nil
	case "text/plain":
		text, err := httpapi.ReadText(r)
		if err != nil {
			return "", err
		}
		if label, ok := jsonStringLiteral(text); ok {
			return label, nil
		}
		return text, nil
	case "":
		return "", apperr.UnsupportedMediaf("missing Content-Type: send the label as text/plain or as a JSON string (application/json)")
	}
	return "", apperr.UnsupportedMediaf("unsupported Content-Type %q: send the label as text/plain or as a JSON string (application/json)",
		r.Header.Get("Content-Type"))
}

// jsonStringLiteral returns the string that text holds when text,
// surrounding white space aside, is exactly one valid JSON string literal.
func jsonStringLiteral(text string) (string, bool) {
	t := strings.TrimSpace(text)
	if len(t) < 2 || t[0] != '"' || t[len(t)-1] != '"' {
		return "", false
	}
	var s string
	if httpapi.Unmarshal([]byte(t), &s) != nil { // also refuses trailing data: "a" "b"
		return "", false
	}
	return s, true
}
