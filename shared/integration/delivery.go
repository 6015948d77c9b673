package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/reqtrace/reqtrace/shared/outbox"
)

// Estate is the estate of every message sent to an issue tracker (spec 2.5).
const Estate = "_"

// MaxBatch is the largest number of messages in one POST.
const MaxBatch = 100

// Message is the version-4 wire shape of one queue message (spec 2.5), the
// JSON DTO of outbox.Message.
type Message struct {
	ID             int    `json:"id"` // local to the request: 1..n
	Type           string `json:"type"`
	AuthorKey      string `json:"authorKey,omitempty"`
	AuthorName     string `json:"authorName,omitempty"`
	SpaceKey       string `json:"spaceKey"`
	Key            string `json:"key"`
	Baseline       *int   `json:"baseline"` // null for the current version
	Estate         string `json:"estate"`
	ObjectKey      string `json:"objectKey,omitempty"`
	Relationship   string `json:"relationship,omitempty"`
	NewHTMLExcerpt string `json:"newHtmlExcerpt,omitempty"`
	NewSpaceKey    string `json:"newSpaceKey,omitempty"`
	NewKey         string `json:"newKey,omitempty"`
	NewBaseline    *int   `json:"newBaseline,omitempty"` // absent (null) for the current version
	NewURL         string `json:"newUrl,omitempty"`
}

func optInt(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

// Batch converts messages to the version-4 array POSTed to a tracker; ids
// are 1..n in order. The wiki always sends with the integration's
// credential, a technical user of the tracker, so every message carries the
// wiki author (authorKey, authorName) when it is known.
func Batch(msgs []*outbox.Message) []Message {
	out := make([]Message, len(msgs))
	for i, m := range msgs {
		out[i] = Message{
			ID: i + 1, Type: string(m.Type), AuthorKey: m.AuthorKey, AuthorName: m.AuthorName,
			SpaceKey: m.SpaceKey, Key: m.Key, Baseline: optInt(m.Baseline), Estate: Estate,
			ObjectKey: m.ObjectKey, Relationship: m.Relationship, NewHTMLExcerpt: m.NewHTMLExcerpt,
			NewSpaceKey: m.NewSpaceKey, NewKey: m.NewKey, NewBaseline: optInt(m.NewBaseline), NewURL: m.NewURL,
		}
	}
	return out
}

// Result is the tracker's answer for one message of a successful POST.
type Result struct {
	HTTPStatus int
	Status     string // OK or ERROR; "" when the tracker gave no result for it
	Message    string
}

// OK reports whether the tracker accepted the message.
func (r Result) OK() bool { return r.Status != "ERROR" }

// LastResponse renders the result as the message's lastResponse.
func (r Result) LastResponse() string {
	switch {
	case r.Status == "":
		return fmt.Sprintf("HTTP %d: accepted (no result for this message)", r.HTTPStatus)
	case r.Message == "":
		return fmt.Sprintf("HTTP %d: %s", r.HTTPStatus, r.Status)
	}
	return fmt.Sprintf("HTTP %d: %s: %s", r.HTTPStatus, r.Status, clip(r.Message, 1000))
}

// DeliveryError is a POST that failed as a whole: the tracker could not be
// reached or did not answer 2xx (409 when its application link is
// DISABLED). Its messages stay NEW.
type DeliveryError struct {
	HTTPStatus int    // 0 when no answer came
	Body       string // the start of the answer's body
	Err        error  // the transport error when no answer came
}

func (e *DeliveryError) Error() string {
	if e.HTTPStatus == 0 {
		return "cannot reach the tracker: " + e.Err.Error()
	}
	if e.Body == "" {
		return fmt.Sprintf("tracker answered HTTP %d", e.HTTPStatus)
	}
	return fmt.Sprintf("tracker answered HTTP %d: %s", e.HTTPStatus, e.Body)
}

func (e *DeliveryError) Unwrap() error { return e.Err }

// LastResponse renders the failure as the messages' lastResponse.
func (e *DeliveryError) LastResponse() string {
	if e.HTTPStatus == 0 {
		return "error: " + clip(e.Err.Error(), 1000)
	}
	if e.Body == "" {
		return fmt.Sprintf("HTTP %d", e.HTTPStatus)
	}
	return fmt.Sprintf("HTTP %d: %s", e.HTTPStatus, e.Body)
}

// Tracker delivers message batches to an issue tracker.
type Tracker interface {
	// Deliver POSTs msgs (at most MaxBatch) to the integration and answers
	// one Result per message, in order, or a *DeliveryError (or the
	// context's error).
	Deliver(ctx context.Context, d *Descriptor, msgs []*outbox.Message) ([]Result, error)
}

// HTTPTracker is the Tracker over HTTP: POST rpcUrl+endpoint with
// "Authorization: Bearer <token>" and the version-4 JSON array; the answer
// is {"results": [{"id", "status": "OK"|"ERROR", "message"}]}.
type HTTPTracker struct {
	Client *http.Client // with its timeout; http.DefaultClient when nil
}

var _ Tracker = (*HTTPTracker)(nil)

type trackerAnswer struct {
	Results []struct {
		ID      int    `json:"id"`
		Status  string `json:"status"`
		Message string `json:"message"`
	} `json:"results"`
}

// maxAnswer bounds how much of a tracker's answer is read.
const maxAnswer = 4 << 20

// Deliver implements Tracker.
func (t *HTTPTracker) Deliver(ctx context.Context, d *Descriptor, msgs []*outbox.Message) ([]Result, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	if len(msgs) > MaxBatch {
		return nil, fmt.Errorf("deliver: %d messages in one batch, at most %d", len(msgs), MaxBatch)
	}
	body, err := json.Marshal(Batch(msgs))
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
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, &DeliveryError{HTTPStatus: resp.StatusCode, Body: clip(strings.TrimSpace(string(answer)), 500)}
	}
	if err != nil {
		return nil, &DeliveryError{Err: fmt.Errorf("read the answer: %w", err)}
	}
	results := make([]Result, len(msgs))
	for i := range results {
		results[i].HTTPStatus = resp.StatusCode
	}
	var a trackerAnswer
	if json.Unmarshal(answer, &a) == nil {
		for _, r := range a.Results {
			if r.ID >= 1 && r.ID <= len(msgs) {
				status := strings.ToUpper(r.Status)
				if status != "ERROR" {
					status = "OK"
				}
				results[r.ID-1].Status, results[r.ID-1].Message = status, r.Message
			}
		}
	}
	return results, nil
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
