package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/outbox"
)

func TestBatchWireShapeVersion5(t *testing.T) {
	t.Parallel()
	msgs := []*outbox.Message{
		{Type: outbox.Links, AuthorKey: "alice", SpaceKey: "DEMO", Key: "REQ-1", Links: []outbox.LinkRef{{IssueKey: "PROJ-1", Relationship: "implements"}},
			LinksVersion: 7, OriginPageID: "123", OriginTitle: "Specs", NewHTMLExcerpt: "x", NewURL: "/requirements/DEMO/REQ-1"},
		{Type: outbox.Links, SpaceKey: "DEMO", Key: "REQ-2", Baseline: 2},
		{Type: outbox.Updated, SpaceKey: "DEMO", Key: "REQ-3", ChangedFields: []string{"text", "status"}, NewHTMLExcerpt: "y"},
		{Type: outbox.Updated, SpaceKey: "DEMO", Key: "REQ-4"},
		{Type: outbox.Updated, SpaceKey: "DEMO", Key: "REQ-5", ChangedFields: []string{"text", "status"}, SuspectFields: []string{"text"}, NewHTMLExcerpt: "z"},
	}
	js, _ := json.Marshal(Batch(5, msgs))
	want := `[{"id":1,"type":"LINKS","authorKey":"alice","spaceKey":"DEMO","key":"REQ-1","baseline":null,"estate":"_","links":[{"objectKey":"PROJ-1","relationship":"implements"}],"version":7,"origin":{"pageId":"123","title":"Specs"},"newHtmlExcerpt":"x","newUrl":"/requirements/DEMO/REQ-1"},` +
		`{"id":2,"type":"LINKS","spaceKey":"DEMO","key":"REQ-2","baseline":2,"estate":"_","links":[],"version":0},` +
		`{"id":3,"type":"UPDATED","spaceKey":"DEMO","key":"REQ-3","baseline":null,"estate":"_","newHtmlExcerpt":"y","changedFields":["text","status"],"suspect":false},` +
		`{"id":4,"type":"UPDATED","spaceKey":"DEMO","key":"REQ-4","baseline":null,"estate":"_","changedFields":[],"suspect":false},` +
		`{"id":5,"type":"UPDATED","spaceKey":"DEMO","key":"REQ-5","baseline":null,"estate":"_","newHtmlExcerpt":"z","changedFields":["text","status"],"suspect":true,"suspectCause":{"fields":["text"]}}]`
	if string(js) != want {
		t.Fatalf("version-5 wire shape\n got %s\nwant %s", js, want)
	}
	// At version 4 UPDATED keeps its version-4 shape.
	js, _ = json.Marshal(Batch(4, msgs[2:3]))
	if want := `[{"id":1,"type":"UPDATED","spaceKey":"DEMO","key":"REQ-3","baseline":null,"estate":"_","newHtmlExcerpt":"y"}]`; string(js) != want {
		t.Fatalf("version-4 UPDATED\n got %s\nwant %s", js, want)
	}
	// A suspect change too: a version-4 tracker never sees suspect.
	js, _ = json.Marshal(Batch(4, msgs[4:5]))
	if want := `[{"id":1,"type":"UPDATED","spaceKey":"DEMO","key":"REQ-5","baseline":null,"estate":"_","newHtmlExcerpt":"z"}]`; string(js) != want {
		t.Fatalf("version-4 UPDATED of a suspect change\n got %s\nwant %s", js, want)
	}
}

// answerServer is a tracker answering every POST with what answer gives
// (status, content type, body) and recording the batches.
type answerServer struct {
	*httptest.Server
	mu      sync.Mutex
	batches [][]Message
	answer  func(batch []Message) (status int, contentType, body string)
}

func newAnswerServer(t *testing.T, answer func([]Message) (int, string, string)) *answerServer {
	s := &answerServer{answer: answer}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var batch []Message
		_ = json.NewDecoder(r.Body).Decode(&batch)
		s.mu.Lock()
		s.batches = append(s.batches, batch)
		answer := s.answer
		s.mu.Unlock()
		status, ct, body := answer(batch)
		if ct != "" {
			w.Header().Set("Content-Type", ct)
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *answerServer) posts() [][]Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([][]Message(nil), s.batches...)
}

// okAnswer is a correct tracker answer: OK for every message, ERROR for
// keys or objectKeys starting with BAD.
func okAnswer(batch []Message) (int, string, string) {
	var res []string
	for _, m := range batch {
		status := "OK"
		if strings.HasPrefix(m.Key, "BAD") || strings.HasPrefix(m.ObjectKey, "BAD") {
			status = "ERROR"
		}
		res = append(res, fmt.Sprintf(`{"id":%d,"status":%q,"message":"m%d"}`, m.ID, status, m.ID))
	}
	return 200, "application/json", `{"results":[` + strings.Join(res, ",") + `]}`
}

const loginPage = `<html><body><form action="/login">secret-ish login page</form></body></html>`

func TestDeliverAcceptsOnlyTrackerAnswers(t *testing.T) {
	t.Parallel()
	three := []*outbox.Message{{Type: outbox.Updated, Key: "R1"}, {Type: outbox.Updated, Key: "R2"}, {Type: outbox.Updated, Key: "R3"}}
	cases := []struct {
		name   string
		status int
		ct     string
		body   string
		want   string // lastResponse; "" = accepted
	}{
		{"results", 200, "application/json", `{"results":[{"id":1,"status":"OK"},{"id":2,"status":"error","message":"no"},{"id":3,"status":"OK","message":"fine"}]}`, ""},
		{"charset parameter", 200, "application/json; charset=utf-8", `{"results":[{"id":3,"status":"OK"},{"id":2,"status":"OK"},{"id":1,"status":"OK"}]}`, ""},
		{"202 accepted with results", 202, "Application/JSON", `{"results":[{"id":1,"status":"OK"},{"id":2,"status":"OK"},{"id":3,"status":"OK"}],"extra":1}`, ""},
		{"HTML login page", 200, "text/html; charset=utf-8", loginPage, "HTTP 200: not a tracker answer (text/html)"},
		{"empty body", 200, "application/json", "", "HTTP 200: not a tracker answer (empty body)"},
		{"no content type", 204, "", "", "HTTP 204: not a tracker answer (no content type)"},
		{"JSON without results", 200, "application/json", `{"status":"ok"}`, "HTTP 200: not a tracker answer (no results)"},
		{"null results", 200, "application/json", `{"results":null}`, "HTTP 200: not a tracker answer (no results)"},
		{"JSON array", 200, "application/json", `[{"id":1,"status":"OK"}]`, "HTTP 200: not a tracker answer (not a JSON object)"},
		{"HTML labelled JSON", 200, "application/json", loginPage, "HTTP 200: not a tracker answer (not a JSON object)"},
		{"missing id", 200, "application/json", `{"results":[{"id":1,"status":"OK"},{"id":2,"status":"OK"}]}`, "HTTP 200: no result for message 3"},
		{"ids out of range", 200, "application/json", `{"results":[{"id":0,"status":"OK"},{"id":2,"status":"OK"},{"id":3,"status":"OK"},{"id":4,"status":"OK"}]}`, "HTTP 200: no result for message 1"},
		{"unknown status", 200, "application/json", `{"results":[{"id":1,"status":"OK"},{"id":2,"status":"MAYBE"},{"id":3,"status":"OK"}]}`, "HTTP 200: no result for message 2"},
		{"empty results", 200, "application/json", `{"results":[]}`, "HTTP 200: no result for message 1"},
		{"500", 500, "text/html", loginPage, "HTTP 500: " + loginPage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv := newAnswerServer(t, func([]Message) (int, string, string) { return c.status, c.ct, c.body })
			d := &Descriptor{RPCURL: srv.URL, Endpoint: DefaultEndpoint, Version: 4}
			res, err := (&HTTPTracker{}).Deliver(context.Background(), d, three)
			if c.want == "" {
				if err != nil || len(res) != 3 || res[0].LastResponse() != fmt.Sprintf("HTTP %d: OK", c.status) {
					t.Fatalf("Deliver = %+v, %v", res, err)
				}
				return
			}
			var de *DeliveryError
			if !errors.As(err, &de) || res != nil {
				t.Fatalf("Deliver = %+v, %v; want a DeliveryError", res, err)
			}
			if de.LastResponse() != c.want {
				t.Fatalf("lastResponse = %q, want %q", de.LastResponse(), c.want)
			}
			// The error (what a push's 502 says) never quotes the body.
			if strings.Contains(de.Error(), "login") || strings.Contains(de.Error(), "<") {
				t.Fatalf("Error() echoes the body: %q", de.Error())
			}
		})
	}
}

func TestDeliverTranslatesLinksBelowVersion5(t *testing.T) {
	t.Parallel()
	srv := newAnswerServer(t, okAnswer)
	links := func(keys ...string) []outbox.LinkRef {
		var out []outbox.LinkRef
		for _, k := range keys {
			out = append(out, outbox.LinkRef{IssueKey: k, Relationship: "implements"})
		}
		return out
	}
	msgs := []*outbox.Message{
		{Type: outbox.Updated, SpaceKey: "DEMO", Key: "R0"},
		{Type: outbox.Links, AuthorKey: "alice", SpaceKey: "DEMO", Key: "R1", Links: links("PROJ-1", "PROJ-2"), LinksVersion: 3, OriginPageID: "1", OriginTitle: "Specs", NewURL: "/requirements/DEMO/R1"},
		{Type: outbox.Links, SpaceKey: "DEMO", Key: "R2"}, // nothing to add
		{Type: outbox.Links, SpaceKey: "DEMO", Key: "R3", Links: links("PROJ-3", "BAD-4")},
	}
	d := &Descriptor{RPCURL: srv.URL, Endpoint: DefaultEndpoint, Version: 4}
	res, err := (&HTTPTracker{}).Deliver(context.Background(), d, msgs)
	if err != nil {
		t.Fatal(err)
	}
	posts := srv.posts()
	if len(posts) != 1 || len(posts[0]) != 5 {
		t.Fatalf("posts = %+v", posts)
	}
	js, _ := json.Marshal(posts[0][1])
	if want := `{"id":2,"type":"LINK","authorKey":"alice","spaceKey":"DEMO","key":"R1","baseline":null,"estate":"_","objectKey":"PROJ-1","relationship":"implements","newUrl":"/requirements/DEMO/R1"}`; string(js) != want {
		t.Fatalf("translated LINK\n got %s\nwant %s", js, want)
	}
	if posts[0][2].ObjectKey != "PROJ-2" || posts[0][3].ObjectKey != "PROJ-3" || posts[0][4].ID != 5 {
		t.Fatalf("translated batch = %+v", posts[0])
	}
	got := make([]string, len(res))
	for i, r := range res {
		got[i] = r.LastResponse()
	}
	want := []string{"HTTP 200: OK: m1", "HTTP 200: OK: m2", noLinksNote, "HTTP 200: ERROR: m5"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("results = %q, want %q", got, want)
	}

	// Only empty sets: no POST at all.
	n := len(srv.posts())
	res, err = (&HTTPTracker{}).Deliver(context.Background(), d, msgs[2:3])
	if err != nil || len(res) != 1 || res[0].LastResponse() != noLinksNote || !res[0].OK() || len(srv.posts()) != n {
		t.Fatalf("empty LINKS = %+v, %v", res, err)
	}

	// More than MaxBatch LINKs: several POSTs of at most MaxBatch.
	var keys []string
	for i := range 150 {
		keys = append(keys, fmt.Sprintf("PROJ-%d", i+1))
	}
	big := []*outbox.Message{{Type: outbox.Links, SpaceKey: "DEMO", Key: "R9", Links: links(keys...)}, {Type: outbox.Deleted, SpaceKey: "DEMO", Key: "R10"}}
	res, err = (&HTTPTracker{}).Deliver(context.Background(), d, big)
	posts = srv.posts()[n:]
	if err != nil || len(res) != 2 || len(posts) != 2 || len(posts[0]) != MaxBatch || len(posts[1]) != 51 || posts[1][50].Type != "DELETED" {
		t.Fatalf("big LINKS: %d posts, %v", len(posts), err)
	}

	// At version 5 the LINKS go as they are.
	d5 := &Descriptor{RPCURL: srv.URL, Endpoint: DefaultEndpoint, Version: 5}
	if _, err := (&HTTPTracker{}).Deliver(context.Background(), d5, msgs); err != nil {
		t.Fatal(err)
	}
	last := srv.posts()[len(srv.posts())-1]
	if len(last) != 4 || last[1].Type != "LINKS" || last[2].Links == nil || len(*last[2].Links) != 0 {
		t.Fatalf("version-5 batch = %+v", last)
	}
}

// TestSyncRefusesALoginPage: a tracker answering 200 with an HTML page
// delivers nothing: the batch stays NEW with the reason, nothing more is
// sent to it in the run, and the error is mailed (docs/integrations.md, "What counts as delivered").
func TestSyncRefusesALoginPage(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	srv := newAnswerServer(t, func([]Message) (int, string, string) { return 200, "text/html", loginPage })
	f.deliverTo(t, srv.URL)
	msgs := f.write(t, "demo", 150, true)
	rep := f.run(t)
	if rep.Posts != 1 || rep.Failed != 1 || rep.Delivered != 0 || rep.Mails != 1 || len(srv.posts()) != 1 {
		t.Fatalf("report %+v, posts %d", rep, len(srv.posts()))
	}
	for _, m := range msgs[:100] {
		got := f.outbox.get("demo", "jira-1", m.ID)
		if got.State != outbox.New || got.LastResponse != "HTTP 200: not a tracker answer (text/html)" {
			t.Fatalf("message %s: %s %q", m.ID, got.State, got.LastResponse)
		}
	}
	if got := f.outbox.get("demo", "jira-1", msgs[100].ID); got.State != outbox.New || got.LastResponse != "" {
		t.Fatalf("a later message was touched: %+v", got)
	}
	if mails := f.mailer.Sent(); f.queue.len() != 1 || len(mails) == 0 || !strings.Contains(mails[0].String(), "not a tracker answer (text/html)") ||
		strings.Contains(mails[0].String(), "login") {
		t.Fatalf("queue %d, mail %q", f.queue.len(), mails)
	}
	// A tracker that leaves out a result: the same.
	srv.mu.Lock()
	srv.answer = func(batch []Message) (int, string, string) {
		_, ct, body := okAnswer(batch[:len(batch)-1])
		return 200, ct, body
	}
	srv.mu.Unlock()
	f.clock.Add(3 * time.Minute)
	if rep := f.run(t); rep.Failed != 1 || rep.Delivered != 0 {
		t.Fatalf("missing result run %+v", rep)
	}
	if got := f.outbox.get("demo", "jira-1", msgs[0].ID); got.State != outbox.New || got.LastResponse != "HTTP 200: no result for message 100" {
		t.Fatalf("after a missing result: %s %q", got.State, got.LastResponse)
	}
	// Back to proper answers: all delivered, in order.
	srv.mu.Lock()
	srv.answer = okAnswer
	srv.mu.Unlock()
	f.clock.Add(3 * time.Minute)
	if rep := f.run(t); rep.Delivered != 150 || f.queue.len() != 0 {
		t.Fatalf("recovery run %+v", rep)
	}
}

func TestPushRefusesALoginPage(t *testing.T) {
	t.Parallel()
	f := newSyncFixture(t)
	srv := newAnswerServer(t, func([]Message) (int, string, string) { return 200, "text/html", loginPage })
	f.deliverTo(t, srv.URL)
	msgs := f.write(t, "demo", 1, false)
	svc := New(Deps{Store: f.store, Outbox: f.outbox, Tracker: &HTTPTracker{}, Now: f.clock.Now})
	m, err := svc.Push(context.Background(), "demo", "jira-1", msgs[0].ID)
	var de *DeliveryError
	if !errors.As(err, &de) || m.State != outbox.New || m.LastResponse != "HTTP 200: not a tracker answer (text/html)" || strings.Contains(de.Error(), "login") {
		t.Fatalf("push = %+v, %v", m, err)
	}
	if got := f.outbox.get("demo", "jira-1", msgs[0].ID); got.State != outbox.New || got.LastResponse != m.LastResponse {
		t.Fatalf("stored %+v", got)
	}
}

// deliverTo points the fixture's integration jira-1 of demo at url.
func (f *syncFixture) deliverTo(t *testing.T, url string) {
	t.Helper()
	d, err := f.store.Get(context.Background(), "demo", "jira-1")
	if err != nil {
		t.Fatal(err)
	}
	d.RPCURL = url
	if err := f.store.Update(context.Background(), "demo", d); err != nil {
		t.Fatal(err)
	}
}
