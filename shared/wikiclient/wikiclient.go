// Package wikiclient is the tracker's HTTP client of a wiki's API: it reads
// requirements, runs the link dialog's search, reads and sets the API
// version of the wiki's integration, and sends the links callback. It
// implements tracker.WikiClient.
//
// Every call carries the applink's wiki token as a bearer token (never
// logged, never put in an error) and has its own timeout. Failures are
// translated into the service's error vocabulary: a 404 from the wiki is
// apperr.NotFound, a 400 answer to a search is apperr.Invalid (the user's
// query), anything else (an unreachable wiki, a timeout, a 5xx, a refused
// token, an unreadable answer) is apperr.BadGateway with the wiki's own
// message.
package wikiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// maxAnswer bounds a wiki answer; the link dialog passes the search answer
// on, and a Lambda answer is limited to 6 MB.
const maxAnswer = 5 << 20

// anySpace is the path segment of a search in every space: the spec says
// the path's spaceKey has no effect unless the wiki isolates spaces.
const anySpace = "_"

// Client calls wikis. It is safe for concurrent use.
type Client struct {
	http    *http.Client
	timeout time.Duration
}

var _ tracker.WikiClient = (*Client)(nil)

// New returns a Client whose calls each time out after timeout (10 s when
// zero or negative).
func New(timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return &Client{http: &http.Client{}, timeout: timeout}
}

// requirementDTO is the part of the wiki's Requirement JSON the tracker reads.
type requirementDTO struct {
	SpaceKey    string `json:"spaceKey"`
	Key         string `json:"key"`
	Baseline    *int   `json:"baseline"`
	Status      string `json:"status"`
	HTMLExcerpt string `json:"htmlExcerpt"`
	GenericURL  string `json:"genericUrl"`
	NewSpaceKey string `json:"newSpaceKey"`
	NewKey      string `json:"newKey"`
}

// Requirement reads GET {wiki}/rest/reqs/1/requirement2/{space}/{key}[?v=baseline].
func (c *Client) Requirement(ctx context.Context, w tracker.WikiEndpoint, spaceKey, key string, baseline int) (tracker.WikiRequirement, error) {
	q := url.Values{}
	if baseline > 0 {
		q.Set("v", strconv.Itoa(baseline))
	}
	var dto requirementDTO
	path := "/rest/reqs/1/requirement2/" + url.PathEscape(spaceKey) + "/" + url.PathEscape(key)
	if err := c.do(ctx, w, http.MethodGet, path, q, nil, &dto, false); err != nil {
		return tracker.WikiRequirement{}, err
	}
	r := tracker.WikiRequirement{SpaceKey: dto.SpaceKey, Key: dto.Key, Status: dto.Status, HTMLExcerpt: dto.HTMLExcerpt,
		GenericURL: dto.GenericURL, NewSpaceKey: dto.NewSpaceKey, NewKey: dto.NewKey}
	if dto.Baseline != nil {
		r.Baseline = *dto.Baseline
	}
	return r, nil
}

// Search runs GET {wiki}/rest/reqs/1/requirement2/{space}?q=&offset=&limit=
// and returns the wiki's JSON answer unchanged. Without a space the path
// segment is "_" and the search covers every space the wiki lets it.
func (c *Client) Search(ctx context.Context, w tracker.WikiEndpoint, s tracker.WikiSearch) (json.RawMessage, error) {
	q := url.Values{}
	if s.Q != "" {
		q.Set("q", s.Q)
	}
	space := anySpace
	if s.SpaceKey != "" {
		space = s.SpaceKey
		q.Set("spaceKey", s.SpaceKey)
	}
	if s.Offset > 0 {
		q.Set("offset", strconv.Itoa(s.Offset))
	}
	if s.Limit > 0 {
		q.Set("limit", strconv.Itoa(s.Limit))
	}
	var raw json.RawMessage
	if err := c.do(ctx, w, http.MethodGet, "/rest/reqs/1/requirement2/"+url.PathEscape(space), q, nil, &raw, true); err != nil {
		return nil, err
	}
	return raw, nil
}

// Version reads GET {wiki}/rest/reqs/1/integration/{serviceId}/version.
func (c *Client) Version(ctx context.Context, w tracker.WikiEndpoint, serviceID string) (tracker.WikiVersion, error) {
	var dto struct {
		Version *int `json:"version"`
		Max     *int `json:"max"`
	}
	if err := c.do(ctx, w, http.MethodGet, versionPath(serviceID), nil, nil, &dto, false); err != nil {
		return tracker.WikiVersion{}, err
	}
	if dto.Version == nil || dto.Max == nil {
		return tracker.WikiVersion{}, apperr.BadGatewayf("the wiki at %s answered its version without \"version\" and \"max\"", w.BaseURL)
	}
	return tracker.WikiVersion{Version: *dto.Version, Max: *dto.Max}, nil
}

// SetVersion sends PUT {wiki}/rest/reqs/1/integration/{serviceId}/version
// with the JSON integer v and returns the version the wiki accepted. The
// wiki may answer a JSON integer or an object with "version".
func (c *Client) SetVersion(ctx context.Context, w tracker.WikiEndpoint, serviceID string, v int) (int, error) {
	var raw json.RawMessage
	if err := c.do(ctx, w, http.MethodPut, versionPath(serviceID), nil, v, &raw, false); err != nil {
		return 0, err
	}
	var n int
	if err := json.Unmarshal(raw, &n); err == nil {
		return n, nil
	}
	var obj struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(raw, &obj); err == nil && obj.Version != nil {
		return *obj.Version, nil
	}
	return 0, apperr.BadGatewayf("the wiki at %s did not say which version it accepted", w.BaseURL)
}

func versionPath(serviceID string) string {
	return "/rest/reqs/1/integration/" + url.PathEscape(serviceID) + "/version"
}

// linksDTO is one requirement of the links callback's body.
type linksDTO struct {
	SpaceKey string     `json:"spaceKey"`
	Key      string     `json:"key"`
	Baseline *int       `json:"baseline"`
	Holds    string     `json:"holds,omitempty"` // "TRACKER": links are the tracker's holds
	Links    []issueDTO `json:"links"`
}

type issueDTO struct {
	IssueKey     string `json:"issueKey"`
	Relationship string `json:"relationship"`
}

// PutLinks sends PUT {wiki}/rest/reqs/1/integration/{serviceId}/links with
// the full link set of each requirement (baseline null for the current
// version).
func (c *Client) PutLinks(ctx context.Context, w tracker.WikiEndpoint, serviceID string, sets []tracker.RequirementLinks) error {
	body := make([]linksDTO, len(sets))
	for i, s := range sets {
		d := linksDTO{SpaceKey: s.SpaceKey, Key: s.Key, Links: make([]issueDTO, len(s.Links))}
		if s.TrackerHolds {
			d.Holds = "TRACKER"
		}
		if s.Baseline > 0 {
			b := s.Baseline
			d.Baseline = &b
		}
		for j, l := range s.Links {
			d.Links[j] = issueDTO{IssueKey: l.IssueKey, Relationship: l.Relationship}
		}
		body[i] = d
	}
	return c.do(ctx, w, http.MethodPut, "/rest/reqs/1/integration/"+url.PathEscape(serviceID)+"/links", nil, body, nil, false)
}

// do sends one request and decodes a 2xx JSON answer into out (when not
// nil). search says whether a 400 is the user's query (Invalid) rather than
// a wiki failure.
func (c *Client) do(ctx context.Context, w tracker.WikiEndpoint, method, path string, q url.Values, in, out any, search bool) error {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	target := strings.TrimRight(w.BaseURL, "/") + path
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode the request to the wiki: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, body)
	if err != nil {
		return apperr.BadGatewayf("cannot call the wiki at %q: invalid address", w.BaseURL)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "reqtrace-tracker")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if w.Token != "" {
		req.Header.Set("Authorization", "Bearer "+w.Token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return apperr.Wrap(apperr.BadGatewayf("the wiki at %s did not answer %s %s within %s", w.BaseURL, method, path, c.timeout), err)
		}
		return apperr.Wrap(apperr.BadGatewayf("the wiki at %s is unreachable: %s", w.BaseURL, transportReason(err)), err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return apperr.Wrap(apperr.BadGatewayf("the wiki at %s broke off its answer to %s %s", w.BaseURL, method, path), err)
	}
	if len(data) > maxAnswer {
		return apperr.BadGatewayf("the wiki's answer to %s %s is larger than %d bytes", method, path, maxAnswer)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return statusError(w.BaseURL, method, path, resp.StatusCode, data, search)
	}
	if out == nil {
		return nil
	}
	if !json.Valid(data) {
		return apperr.BadGatewayf("the wiki at %s answered %s %s with something other than JSON", w.BaseURL, method, path)
	}
	if err := json.Unmarshal(data, out); err != nil {
		return apperr.Wrap(apperr.BadGatewayf("the wiki at %s answered %s %s with unexpected JSON", w.BaseURL, method, path), err)
	}
	return nil
}

// transportReason is the part of a transport error worth showing: the
// operation and cause, without the URL (already named by the caller).
func transportReason(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// statusError translates a non-2xx answer.
func statusError(base, method, path string, status int, body []byte, search bool) error {
	var eb struct {
		Message  string `json:"message"`
		Position *int   `json:"position"`
	}
	msg := ""
	if json.Unmarshal(body, &eb) == nil && eb.Message != "" {
		msg = eb.Message
	} else if s := strings.TrimSpace(string(body)); s != "" {
		msg = s
	}
	if len(msg) > 300 {
		msg = strings.ToValidUTF8(msg[:300], "") + "…"
	}
	switch {
	case status == http.StatusNotFound:
		if msg == "" {
			msg = method + " " + path + " not found"
		}
		return apperr.NotFoundf("wiki: %s", msg)
	case status == http.StatusBadRequest && search:
		if eb.Position != nil {
			return apperr.InvalidAt(*eb.Position, "wiki: %s", msg)
		}
		return apperr.Invalidf("wiki: %s", msg)
	case status == http.StatusUnauthorized:
		return apperr.BadGatewayf("the wiki at %s refused the tracker's credential (%d: %s): check the application link's token", base, status, orStatus(msg, status))
	case status == http.StatusForbidden:
		return apperr.BadGatewayf("the wiki at %s refused the tracker's credential (%d: %s): check that the wiki's integration is ACTIVE and the application link's token is its incomingToken", base, status, orStatus(msg, status))
	}
	return apperr.BadGatewayf("the wiki at %s answered %s %s with %d: %s", base, method, path, status, orStatus(msg, status))
}

func orStatus(msg string, status int) string {
	if msg != "" {
		return msg
	}
	return http.StatusText(status)
}
