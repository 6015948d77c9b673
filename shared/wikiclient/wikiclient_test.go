package wikiclient_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/outbound"
	"github.com/reqtrace/reqtrace/shared/tracker"
	"github.com/reqtrace/reqtrace/shared/wikiclient"
)

// client is a wiki client allowed to call the loopback test servers.
func client(timeout time.Duration) *wikiclient.Client {
	return wikiclient.New(outbound.New(outbound.Options{Timeout: timeout, AllowPrivate: true, MaxBody: wikiclient.MaxAnswer}))
}

// call is one request the fake wiki saw.
type call struct {
	method, uri, auth, ctype, body string
}

// fakeWiki answers every request with status and body, recording it.
func fakeWiki(t *testing.T, status int, body string) (*httptest.Server, *[]call) {
	t.Helper()
	var calls []call
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		calls = append(calls, call{r.Method, r.URL.RequestURI(), r.Header.Get("Authorization"), r.Header.Get("Content-Type"), string(b)})
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func endpoint(srv *httptest.Server) tracker.WikiEndpoint {
	return tracker.WikiEndpoint{BaseURL: srv.URL + "/", Token: "wiki-secret"}
}

func TestRequirement(t *testing.T) {
	t.Parallel()
	srv, calls := fakeWiki(t, 200, `{"spaceKey":"DEMO","key":"REQ 1","baseline":3,"status":"ARCHIVED","text":"t",
		"htmlExcerpt":"<p>x</p>","genericUrl":"/requirements/DEMO/REQ%201","issues":[]}`)
	c := client(time.Second)
	got, err := c.Requirement(context.Background(), endpoint(srv), "DEMO", "REQ 1", 3)
	if err != nil {
		t.Fatal(err)
	}
	want := tracker.WikiRequirement{SpaceKey: "DEMO", Key: "REQ 1", Baseline: 3, Status: "ARCHIVED", HTMLExcerpt: "<p>x</p>", GenericURL: "/requirements/DEMO/REQ%201"}
	if got != want {
		t.Errorf("got %+v", got)
	}
	c0 := (*calls)[0]
	if c0.method != "GET" || c0.uri != "/rest/reqs/1/requirement2/DEMO/REQ%201?v=3" || c0.auth != "Bearer wiki-secret" {
		t.Errorf("request %+v", c0)
	}
	if _, err := c.Requirement(context.Background(), endpoint(srv), "DEMO", "R", 0); err != nil {
		t.Fatal(err)
	}
	if u := (*calls)[1].uri; u != "/rest/reqs/1/requirement2/DEMO/R" {
		t.Errorf("current version asked as %s", u)
	}
}

func TestSearch(t *testing.T) {
	t.Parallel()
	answer := `{"results":[{"key":"REQ-1"}],"offset":0,"limit":5,"count":1}`
	srv, calls := fakeWiki(t, 200, answer)
	c := client(time.Second)
	got, err := c.Search(context.Background(), endpoint(srv), tracker.WikiSearch{Q: "key = 'REQ-1'", Limit: 5})
	if err != nil || string(got) != answer {
		t.Fatalf("%s, %v", got, err)
	}
	if u := (*calls)[0].uri; u != "/rest/reqs/1/requirement2/_?limit=5&q=key+%3D+%27REQ-1%27" {
		t.Errorf("uri %s", u)
	}
	if _, err := c.Search(context.Background(), endpoint(srv), tracker.WikiSearch{SpaceKey: "DEMO", Offset: 10}); err != nil {
		t.Fatal(err)
	}
	if u := (*calls)[1].uri; u != "/rest/reqs/1/requirement2/DEMO?offset=10&spaceKey=DEMO" {
		t.Errorf("uri %s", u)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	srv, calls := fakeWiki(t, 200, `{"version":2,"max":4}`)
	c := client(time.Second)
	v, err := c.Version(context.Background(), endpoint(srv), "jira/1")
	if err != nil || v != (tracker.WikiVersion{Version: 2, Max: 4}) {
		t.Fatalf("%+v, %v", v, err)
	}
	if u := (*calls)[0].uri; u != "/rest/reqs/1/integration/jira%2F1/version" {
		t.Errorf("uri %s", u)
	}
	bad, _ := fakeWiki(t, 200, `{"v":2}`)
	if _, err := c.Version(context.Background(), endpoint(bad), "s"); apperr.CodeOf(err) != apperr.BadGateway {
		t.Errorf("answer without fields: %v", err)
	}
}

func TestSetVersion(t *testing.T) {
	t.Parallel()
	for _, answer := range []string{`4`, `{"serviceId":"s","version":4}`} {
		srv, calls := fakeWiki(t, 200, answer)
		got, err := client(time.Second).SetVersion(context.Background(), endpoint(srv), "s", 4)
		if err != nil || got != 4 {
			t.Errorf("answer %s: %d, %v", answer, got, err)
		}
		c0 := (*calls)[0]
		if c0.method != "PUT" || c0.body != "4" || c0.ctype != "application/json" {
			t.Errorf("request %+v", c0)
		}
	}
	srv, _ := fakeWiki(t, 200, `"four"`)
	if _, err := client(time.Second).SetVersion(context.Background(), endpoint(srv), "s", 4); apperr.CodeOf(err) != apperr.BadGateway {
		t.Errorf("unreadable answer: %v", err)
	}
}

func TestPutLinks(t *testing.T) {
	t.Parallel()
	srv, calls := fakeWiki(t, 204, ``)
	err := client(time.Second).PutLinks(context.Background(), endpoint(srv), "jira-1", []tracker.RequirementLinks{
		{SpaceKey: "DEMO", Key: "R1", Links: []tracker.IssueRelationship{{IssueKey: "A", Relationship: "implements"}}},
		{SpaceKey: "DEMO", Key: "R2", Baseline: 2, Links: []tracker.IssueRelationship{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	c0 := (*calls)[0]
	want := `[{"spaceKey":"DEMO","key":"R1","baseline":null,"links":[{"issueKey":"A","relationship":"implements"}]},` +
		`{"spaceKey":"DEMO","key":"R2","baseline":2,"links":[]}]`
	if c0.method != "PUT" || c0.uri != "/rest/reqs/1/integration/jira-1/links" || c0.body != want {
		t.Errorf("request %+v", c0)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	t.Cleanup(slow.Close)
	for _, tc := range []struct {
		name     string
		status   int
		body     string
		srv      *httptest.Server
		code     apperr.Code
		contains string
	}{
		{name: "404", status: 404, body: `{"status":404,"message":"requirement DEMO/R9 not found"}`, code: apperr.NotFound, contains: "with 404"},
		{name: "500", status: 500, body: `{"status":500,"message":"internal error"}`, code: apperr.BadGateway, contains: "with 500"},
		{name: "502 text", status: 502, body: `Bad Gateway from proxy`, code: apperr.BadGateway, contains: "with 502"},
		{name: "401", status: 401, body: `{"status":401,"message":"invalid bearer token"}`, code: apperr.BadGateway, contains: "refused the tracker's credential"},
		{name: "too large", status: 200, body: `"` + strings.Repeat("x", wikiclient.MaxAnswer) + `"`, code: apperr.BadGateway, contains: "larger than 5 MiB"},
		{name: "not JSON", status: 200, body: `<html>`, code: apperr.BadGateway, contains: "other than JSON"},
		{name: "down", srv: down, code: apperr.BadGateway, contains: "unreachable"},
		{name: "timeout", srv: slow, code: apperr.BadGateway, contains: "did not answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := tc.srv
			if srv == nil {
				srv, _ = fakeWiki(t, tc.status, tc.body)
			}
			// Only the slow wiki meets the client's timeout: the others'
			// answers (5 MiB for "too large") must not, on a loaded machine.
			timeout := 10 * time.Second
			if tc.srv == slow {
				timeout = 200 * time.Millisecond
			}
			_, err := client(timeout).Requirement(context.Background(), endpoint(srv), "DEMO", "R9", 0)
			e := apperr.As(err)
			if e == nil || e.Code != tc.code || !strings.Contains(e.Message, tc.contains) {
				t.Fatalf("err = %v, want %s containing %q", err, tc.code, tc.contains)
			}
			if strings.Contains(e.Message, "wiki-secret") {
				t.Error("the token leaked into the message")
			}
			// The wiki's answer is never repeated (it reaches the
			// tracker's caller in a 502).
			for _, body := range []string{"not found", "internal error", "from proxy", "invalid bearer", "<html>", "xxx"} {
				if strings.Contains(e.Message, body) {
					t.Errorf("the message %q repeats the answer (%q)", e.Message, body)
				}
			}
		})
	}
}

func TestSearchBadQuery(t *testing.T) {
	t.Parallel()
	srv, _ := fakeWiki(t, 400, `{"status":400,"message":"unexpected end of query","position":3}`)
	_, err := client(time.Second).Search(context.Background(), endpoint(srv), tracker.WikiSearch{Q: "((("})
	e := apperr.As(err)
	if e == nil || !errors.Is(err, apperr.ErrInvalid) || e.Position != 3 || !strings.Contains(e.Message, "unexpected end") {
		t.Fatalf("err = %#v", err)
	}
	// The same 400 to a non-search call is the wiki's failure.
	_, err = client(time.Second).Requirement(context.Background(), endpoint(srv), "S", "K", 0)
	if apperr.CodeOf(err) != apperr.BadGateway {
		t.Errorf("400 on a read: %v", err)
	}
}
