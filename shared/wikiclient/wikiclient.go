// Package wikiclient is the tracker's HTTP client of a wiki's API: it reads
// requirements, runs the link dialog's search, reads and sets the API
// version of the wiki's integration, and sends the links callback. It
// implements tracker.WikiClient.
//
// Calls go through the outbound client (shared/outbound: the target policy,
// HTTP_TIMEOUT, a bounded answer). Every call carries the applink's wiki
// token as a bearer token (never logged, never put in an error). Failures
// are translated into the service's error vocabulary: a 404 from the wiki
// is apperr.NotFound, a 400 answer to a search is apperr.Invalid (the
// user's query, with the wiki's message and position), anything else (an
// unreachable or refused wiki, a timeout, a 5xx, a refused token, an
// unreadable answer) is apperr.BadGateway naming the status or the kind of
// failure, never the wiki's answer.
package wikiclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/netpolicy"
	"github.com/reqtrace/reqtrace/shared/outbound"
	"github.com/reqtrace/reqtrace/shared/tracker"
)

// MaxAnswer bounds a wiki answer: the link dialog's search asks for up to
// 500 requirements, and a Lambda answer is limited to 6 MB. The functions
// build their client with it (outbound.FromConfig).
const MaxAnswer = 5 << 20

// anySpace is the path segment of a search in every space: the spec says
// the path's spaceKey has no effect unless the wiki isolates spaces.
const anySpace = "_"

// Client calls wikis. It is safe for concurrent use.
type Client struct {
	http    *http.Client
	timeout time.Duration
}

var _ tracker.WikiClient = (*Client)(nil)

// New returns a Client calling through c, an outbound client
// (shared/outbound); nil builds one with outbound's defaults (10 s, no
// private targets).
func New(c *http.Client) *Client {
	if c == nil {
		c = outbound.New(outbound.Options{MaxBody: MaxAnswer})
	}
	return &Client{http: c, timeout: c.Timeout}
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
	var data []byte
	if err == nil {
		defer resp.Body.Close()
		data, err = io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
		if err == nil && len(data) > MaxAnswer {
			err = &netpolicy.TooLargeError{Limit: MaxAnswer}
		}
	}
	var tooLarge *netpolicy.TooLargeError
	switch {
	case err == nil:
	case errors.As(err, &tooLarge):
		return apperr.Wrap(apperr.BadGatewayf("the wiki at %s answered %s %s: %s", w.BaseURL, method, path, tooLarge.Error()), err)
	case isTimeout(err) && c.timeout > 0:
		return apperr.Wrap(apperr.BadGatewayf("the wiki at %s did not answer %s %s within %s", w.BaseURL, method, path, c.timeout), err)
	case resp != nil:
		return apperr.Wrap(apperr.BadGatewayf("the wiki at %s broke off its answer to %s %s: %s", w.BaseURL, method, path, netpolicy.Describe(err)), err)
	default:
		return apperr.Wrap(apperr.BadGatewayf("the wiki at %s is unreachable: %s", w.BaseURL, netpolicy.Describe(err)), err)
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

func isTimeout(err error) bool {
	var ne net.Error
	return errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// statusError translates a non-2xx answer. Only the status is named: the
// wiki's answer is not repeated to the tracker's caller, but for the
// message of a 400 to a search (the user's query, which the wiki's query
// parser explains), taken from a JSON error body only and cleaned.
func statusError(base, method, path string, status int, body []byte, search bool) error {
	switch {
	case status == http.StatusNotFound:
		return apperr.NotFoundf("the wiki at %s answered %s %s with 404", base, method, path)
	case status == http.StatusBadRequest && search:
		var eb struct {
			Message  string `json:"message"`
			Position *int   `json:"position"`
		}
		_ = json.Unmarshal(body, &eb)
		msg := queryMessage(eb.Message)
		if eb.Position != nil && *eb.Position >= 0 {
			return apperr.InvalidAt(*eb.Position, "wiki: %s", msg)
		}
		return apperr.Invalidf("wiki: %s", msg)
	case status == http.StatusUnauthorized:
		return apperr.BadGatewayf("the wiki at %s refused the tracker's credential (401): check the application link's token", base)
	case status == http.StatusForbidden:
		return apperr.BadGatewayf("the wiki at %s refused the tracker's credential (403): check that the wiki's integration is ACTIVE and the application link's token is its incomingToken", base)
	}
	return apperr.BadGatewayf("the wiki at %s answered %s %s with %d", base, method, path, status)
}

// maxQueryMessage bounds the wiki's explanation of a refused query.
const maxQueryMessage = 300

// queryMessage is the wiki's explanation of a refused query as the
// tracker repeats it: printable text, at most maxQueryMessage bytes.
func queryMessage(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, strings.ToValidUTF8(s, ""))
	s = strings.TrimSpace(s)
	if s == "" {
		return "the query was refused"
	}
	if len(s) > maxQueryMessage {
		s = strings.ToValidUTF8(s[:maxQueryMessage], "") + "…"
	}
	return s
}
