package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/reqtrace/reqtrace/shared/netpolicy"
	"github.com/reqtrace/reqtrace/shared/outbox"
)

// Estate is the estate of every message sent to an issue tracker (spec 2.5).
const Estate = "_"

// MaxBatch is the largest number of messages in one POST.
const MaxBatch = 100

// Message is the wire shape of one queue message (spec 2.5, and the
// version-5 additions, docs/integrations.md "Wire shape"), the JSON DTO of outbox.Message.
type Message struct {
	ID           int    `json:"id"` // local to the request: 1..n
	Type         string `json:"type"`
	AuthorKey    string `json:"authorKey,omitempty"`
	AuthorName   string `json:"authorName,omitempty"`
	SpaceKey     string `json:"spaceKey"`
	Key          string `json:"key"`
	Baseline     *int   `json:"baseline"` // null for the current version
	Estate       string `json:"estate"`
	ObjectKey    string `json:"objectKey,omitempty"`
	Relationship string `json:"relationship,omitempty"`
	// Links is the whole PAGE link set of a LINKS message: always present
	// on LINKS ([] when the requirement has none), absent on other types.
	Links *[]MessageLink `json:"links,omitempty"`
	// Version is the PAGE link version of a LINKS message.
	Version *int64 `json:"version,omitempty"`
	// Origin is the page defining the requirement (LINKS, when known).
	Origin         *MessageOrigin `json:"origin,omitempty"`
	NewHTMLExcerpt string         `json:"newHtmlExcerpt,omitempty"`
	NewSpaceKey    string         `json:"newSpaceKey,omitempty"`
	NewKey         string         `json:"newKey,omitempty"`
	NewBaseline    *int           `json:"newBaseline,omitempty"` // absent (null) for the current version
	NewURL         string         `json:"newUrl,omitempty"`
	// ChangedFields and Suspect are sent on UPDATED to trackers at version
	// 5 or more only.
	ChangedFields *[]string `json:"changedFields,omitempty"`
	Suspect       *bool     `json:"suspect,omitempty"`
	// SuspectCause names the suspectFields that changed, when Suspect.
	SuspectCause *SuspectCause `json:"suspectCause,omitempty"`
}

// SuspectCause is why a change made links suspect: the fields of the
// admin setting suspectFields that changed.
type SuspectCause struct {
	Fields []string `json:"fields"`
}

// MessageLink is one issue link of a LINKS message.
type MessageLink struct {
	ObjectKey    string `json:"objectKey"`
	Relationship string `json:"relationship"`
}

// MessageOrigin names the wiki page that defines a LINKS message's
// requirement.
type MessageOrigin struct {
	PageID string `json:"pageId"`
	Title  string `json:"title"`
}

// LinksVersion is the first API version whose trackers take LINKS messages
// and the version-5 fields of UPDATED.
const LinksVersion = 5

func optInt(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

// Batch converts messages to the array POSTed to a tracker at API version
// version; ids are 1..n in order. The wiki always sends with the
// integration's credential, a technical user of the tracker, so every
// message carries the wiki author (authorKey, authorName) when it is known.
// LINKS messages are encoded as they are: Deliver translates them for
// trackers below LinksVersion first (wireMessages).
func Batch(version int, msgs []*outbox.Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		w := Message{
			ID: i + 1, Type: string(m.Type), AuthorKey: m.AuthorKey, AuthorName: m.AuthorName,
			SpaceKey: m.SpaceKey, Key: m.Key, Baseline: optInt(m.Baseline), Estate: Estate,
			ObjectKey: m.ObjectKey, Relationship: m.Relationship, NewHTMLExcerpt: m.NewHTMLExcerpt,
			NewSpaceKey: m.NewSpaceKey, NewKey: m.NewKey, NewBaseline: optInt(m.NewBaseline), NewURL: m.NewURL,
		}
		switch {
		case m.Type == outbox.Links:
			links := make([]MessageLink, len(m.Links))
			for j, l := range m.Links {
				links[j] = MessageLink{ObjectKey: l.IssueKey, Relationship: l.Relationship}
			}
			v := m.LinksVersion
			w.Links, w.Version = &links, &v
			if m.OriginPageID != "" {
				w.Origin = &MessageOrigin{PageID: m.OriginPageID, Title: m.OriginTitle}
			}
		case m.Type == outbox.Link && m.OriginPageID != "":
			// Added for trackers that tell their users which page defines
			// a link (version 4 trackers ignore unknown fields).
			w.Origin = &MessageOrigin{PageID: m.OriginPageID, Title: m.OriginTitle}
		case m.Type == outbox.Updated && version >= LinksVersion:
			changed := append([]string{}, m.ChangedFields...)
			suspect := len(m.SuspectFields) > 0
			w.ChangedFields, w.Suspect = &changed, &suspect
			if suspect {
				w.SuspectCause = &SuspectCause{Fields: append([]string{}, m.SuspectFields...)}
			}
		}
		out[i] = w
	}
	return out
}

// wireMessages returns the messages to POST to a tracker at API version
// version, and for each the index in msgs of the message it stands for.
// From LinksVersion on that is msgs itself. Below it a LINKS message (which
// such a tracker does not know) becomes one LINK message per link of its
// set: adding a link the tracker has is harmless, and removals cannot be
// said at version 4, so an empty set sends nothing.
func wireMessages(version int, msgs []*outbox.Message) ([]*outbox.Message, []int) {
	out := make([]*outbox.Message, 0, len(msgs))
	from := make([]int, 0, len(msgs))
	for i, m := range msgs {
		if m.Type != outbox.Links || version >= LinksVersion {
			out, from = append(out, m), append(from, i)
			continue
		}
		for _, l := range m.Links {
			c := *m
			c.Type, c.ObjectKey, c.Relationship = outbox.Link, l.IssueKey, l.Relationship
			c.Links, c.LinksVersion, c.OriginPageID, c.OriginTitle = nil, 0, "", ""
			out, from = append(out, &c), append(from, i)
		}
	}
	return out, from
}

// Result is the tracker's answer for one message of a successful POST.
type Result struct {
	HTTPStatus int
	Status     string // OK or ERROR
	Message    string
	// Note, when set, is the whole lastResponse: the message needed no
	// POST (a LINKS with no links for a tracker below LinksVersion).
	Note string
}

// OK reports whether the tracker accepted the message.
func (r Result) OK() bool { return r.Status != "ERROR" }

// LastResponse renders the result as the message's lastResponse.
func (r Result) LastResponse() string {
	switch {
	case r.Note != "":
		return r.Note
	case r.Message == "":
		return fmt.Sprintf("HTTP %d: %s", r.HTTPStatus, r.Status)
	}
	return fmt.Sprintf("HTTP %d: %s: %s", r.HTTPStatus, r.Status, clip(r.Message, 1000))
}

// noLinksNote is the lastResponse of a LINKS message with an empty set for
// a tracker below LinksVersion: nothing to add, and removals cannot be sent.
const noLinksNote = "not sent: no links to add, and a tracker below API version 5 cannot remove links"

// DeliveryError is a POST that failed as a whole: the tracker could not be
// reached, did not answer 2xx (409 when its application link is DISABLED),
// or answered something that is not a tracker answer (Reason). Its
// messages stay NEW.
type DeliveryError struct {
	HTTPStatus int    // 0 when no answer came
	Body       string // the start of a non-2xx answer's body (lastResponse only)
	Reason     string // why a 2xx answer was not accepted
	Err        error  // the transport error when no answer came
}

// Error names the remote status, the reason, or the kind of transport
// failure (a timeout, a refused target: netpolicy.Describe), never the
// remote body nor a transport error's own text (it may reach a caller in a
// 502).
func (e *DeliveryError) Error() string {
	switch {
	case e.HTTPStatus == 0:
		return "cannot reach the tracker: " + netpolicy.Describe(e.Err)
	case e.Reason != "":
		return fmt.Sprintf("tracker answered HTTP %d: %s", e.HTTPStatus, e.Reason)
	}
	return fmt.Sprintf("tracker answered HTTP %d", e.HTTPStatus)
}

func (e *DeliveryError) Unwrap() error { return e.Err }

// LastResponse renders the failure as the messages' lastResponse: Summary,
// plus what the queue listing shows to administrators (the transport
// error's text, the start of a non-2xx answer's body).
func (e *DeliveryError) LastResponse() string {
	switch {
	case e.HTTPStatus == 0:
		return "error: " + clip(e.Err.Error(), 1000)
	case e.Reason == "" && e.Body != "":
		return fmt.Sprintf("HTTP %d: %s", e.HTTPStatus, e.Body)
	}
	return e.Summary()
}

// Summary renders the failure without what came from the remote side (the
// body of a non-2xx answer, the transport error's text): what a 502 may
// show.
func (e *DeliveryError) Summary() string {
	switch {
	case e.HTTPStatus == 0:
		return "error: " + netpolicy.Describe(e.Err)
	case e.Reason != "":
		return fmt.Sprintf("HTTP %d: %s", e.HTTPStatus, e.Reason)
	}
	return fmt.Sprintf("HTTP %d", e.HTTPStatus)
}

// Tracker delivers message batches to an issue tracker.
type Tracker interface {
	// Deliver POSTs msgs (at most MaxBatch) to the integration and answers
	// one Result per message, in order, or a *DeliveryError (or the
	// context's error).
	Deliver(ctx context.Context, d *Descriptor, msgs []*outbox.Message) ([]Result, error)
}

// HTTPTracker is the Tracker over HTTP: POST rpcUrl+endpoint with
// "Authorization: Bearer <token>" and the JSON array of the integration's
// API version; the answer must be {"results": [{"id", "status":
// "OK"|"ERROR", "message"}]} with a result for every id sent.
type HTTPTracker struct {
	// Client is the outbound client (shared/outbound: policy, timeout,
	// answer size); http.DefaultClient when nil, which only tests do.
	Client *http.Client
}

var _ Tracker = (*HTTPTracker)(nil)

// maxAnswer bounds how much of a tracker's answer is read, whatever the
// client (shared/outbound's default limit).
const maxAnswer = 1 << 20

// Deliver implements Tracker. For a tracker below LinksVersion, LINKS
// messages are translated to LINK messages (wireMessages); when that makes
// more than MaxBatch messages they go in several POSTs, in order, and the
// first failure ends the call (the messages stay NEW; the LINKs already
// sent are sent again later, which a tracker applies idempotently). The
// result of a translated LINKS is ERROR when one of its LINKs was refused.
func (t *HTTPTracker) Deliver(ctx context.Context, d *Descriptor, msgs []*outbox.Message) ([]Result, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	if len(msgs) > MaxBatch {
		return nil, fmt.Errorf("deliver: %d messages in one batch, at most %d", len(msgs), MaxBatch)
	}
	wire, from := wireMessages(d.Version, msgs)
	results := make([]Result, len(msgs))
	for i, m := range msgs {
		if m.Type == outbox.Links && d.Version < LinksVersion {
			results[i] = Result{Status: "OK", Note: noLinksNote} // until one of its LINKs answers
		}
	}
	for start := 0; start < len(wire); start += MaxBatch {
		end := min(start+MaxBatch, len(wire))
		got, err := t.post(ctx, d, wire[start:end])
		if err != nil {
			return nil, err
		}
		for j, r := range got {
			i := from[start+j]
			if results[i].Note != "" || results[i].Status == "" {
				results[i] = r // the first answer for a translated LINKS
			} else if !r.OK() && results[i].OK() {
				results[i] = r // a refused LINK makes the LINKS refused
			}
		}
	}
	return results, nil
}

// post sends one POST of at most MaxBatch wire messages and answers one
// Result per message, or a *DeliveryError when the answer is not a tracker
// answer for all of them.
func (t *HTTPTracker) post(ctx context.Context, d *Descriptor, msgs []*outbox.Message) ([]Result, error) {
	body, err := json.Marshal(Batch(d.Version, msgs))
	if err != nil {
		return nil, fmt.Errorf("encode messages: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.URL(), bytes.NewReader(body))
	if err != nil {
		return nil, &DeliveryError{Err: errors.New("invalid tracker address")}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if d.Token != "" {
		req.Header.Set("Authorization", "Bearer "+d.Token)
	}
	client := t.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &DeliveryError{Err: err}
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err == nil && len(answer) > maxAnswer {
		err = &netpolicy.TooLargeError{Limit: maxAnswer}
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &DeliveryError{HTTPStatus: resp.StatusCode, Body: clip(strings.TrimSpace(string(answer)), 500)}
	}
	var tooLarge *netpolicy.TooLargeError
	if errors.As(err, &tooLarge) {
		return nil, &DeliveryError{HTTPStatus: resp.StatusCode, Reason: "not a tracker answer (" + strings.TrimPrefix(tooLarge.Error(), "the answer is ") + ")"}
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &DeliveryError{Err: fmt.Errorf("read the answer: %w", err)}
	}
	results, reason := parseAnswer(resp.Header.Get("Content-Type"), answer, len(msgs))
	if reason != "" {
		return nil, &DeliveryError{HTTPStatus: resp.StatusCode, Reason: reason}
	}
	for i := range results {
		results[i].HTTPStatus = resp.StatusCode
	}
	return results, nil
}

// parseAnswer reads a 2xx tracker answer to n messages strictly: the
// content type is application/json (parameters allowed), the body a JSON
// object whose "results" array holds, for every id 1..n, a result with
// status OK or ERROR (either case). Anything else answers why, in words
// that never quote the body: a login page answered with 200 must not mark
// messages delivered, nor be copied anywhere.
func parseAnswer(contentType string, body []byte, n int) ([]Result, string) {
	mt, _, err := mime.ParseMediaType(contentType)
	switch {
	case contentType == "":
		return nil, "not a tracker answer (no content type)"
	case err != nil:
		return nil, "not a tracker answer (unreadable content type)"
	case mt != "application/json":
		return nil, fmt.Sprintf("not a tracker answer (%s)", clip(mt, 100))
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, "not a tracker answer (empty body)"
	}
	var a struct {
		Results *[]json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, "not a tracker answer (not a JSON object)"
	}
	if a.Results == nil {
		return nil, "not a tracker answer (no results)"
	}
	results := make([]Result, n)
	for _, raw := range *a.Results {
		var r struct {
			ID      int    `json:"id"`
			Status  string `json:"status"`
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &r) != nil || r.ID < 1 || r.ID > n {
			continue
		}
		status := strings.ToUpper(r.Status)
		if status != "OK" && status != "ERROR" {
			continue
		}
		results[r.ID-1].Status, results[r.ID-1].Message = status, r.Message
	}
	for i, r := range results {
		if r.Status == "" {
			return nil, fmt.Sprintf("no result for message %d", i+1)
		}
	}
	return results, ""
}

// clip shortens s to at most n bytes on a rune boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
