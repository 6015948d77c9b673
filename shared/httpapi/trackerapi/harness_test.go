package trackerapi_test

import (
	"context"
	"encoding/json"
	"github.com/reqtrace/reqtrace/shared/httpapi/httpapitest"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/trackerapi"
	"github.com/reqtrace/reqtrace/shared/tracker"
	"github.com/reqtrace/reqtrace/shared/tracker/trackertest"
	"github.com/reqtrace/reqtrace/shared/wikiclient"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// Tokens of the test principals.
const (
	demoAdmin = "demo-tracker-admin"
	demoUser  = "demo-tracker-user"
	acmeAdmin = "acme-tracker-admin"
	acmeUser  = "acme-tracker-user"
	wikiUser  = "demo-wiki-user" // a token of the other application
	wikiToken = "wiki-incoming-token"
)

// harness is the TrackerApi route group over DynamoDB Local with a fake
// wiki, and the demo applink "wiki-1" registered (serviceId "jira-1").
type harness struct {
	t      *testing.T
	router *httpapi.Router
	svc    *tracker.Service
	store  *dynamo.TrackerStore
	wiki   *trackertest.Wiki
	// link is the incoming token of demo's wiki-1.
	link string
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	env := testenv.AWS(t)
	ctx := context.Background()
	authStore := dynamo.NewAuthStore(env.DynamoDB, env.AuthTable)
	for tok, p := range map[string]auth.Principal{
		demoAdmin: {Tenant: "demo", App: auth.Tracker, Kind: auth.User, User: "alice", Admin: true},
		demoUser:  {Tenant: "demo", App: auth.Tracker, Kind: auth.User, User: "bob"},
		acmeAdmin: {Tenant: "acme", App: auth.Tracker, Kind: auth.User, User: "carol", Admin: true},
		acmeUser:  {Tenant: "acme", App: auth.Tracker, Kind: auth.User, User: "dave"},
		wikiUser:  {Tenant: "demo", App: auth.Wiki, Kind: auth.User, User: "erin"},
	} {
		if err := authStore.PutToken(ctx, auth.HashToken(tok), p); err != nil {
			t.Fatal(err)
		}
	}
	store := dynamo.NewTrackerStore(env.DynamoDB, env.TrackerTable)
	wiki := trackertest.NewWiki(t, wikiToken, "jira-1")
	svc := tracker.New(tracker.Deps{Applinks: store, Tokens: authStore, Links: store, Pending: store, Wiki: wikiclient.New(2 * time.Second)})
	rt := httpapi.NewRouter(auth.Tracker, auth.NewAuthenticator(authStore, 0))
	rt.Logger = slog.New(slog.DiscardHandler)
	(&trackerapi.Handler{Tracker: svc}).Register(rt)
	h := &harness{t: t, router: rt, svc: svc, store: store, wiki: wiki}
	var reg struct {
		IncomingToken string `json:"incomingToken"`
	}
	h.json("PUT", "/rest/reqs/1/api/wiki-1", demoAdmin,
		`{"name":"Demo wiki","url":"`+wiki.URL+`","serviceId":"jira-1","token":"`+wikiToken+`"}`, 200, &reg)
	h.link = reg.IncomingToken
	return h
}

// do sends a request; body is sent as application/json unless empty.
func (h *harness) do(method, path, token, body string) *httptest.ResponseRecorder {
	h.t.Helper()
	return h.doType(method, path, token, "application/json", body)
}

func (h *harness) doType(method, path, token, ctype, body string) *httptest.ResponseRecorder {
	h.t.Helper()
	return httpapitest.Do(h.router, method, path, token, ctype, body)
}

// json sends a request, checks the status and decodes the answer into out
// (when not nil).
func (h *harness) json(method, path, token, body string, status int, out any) {
	h.t.Helper()
	rec := h.do(method, path, token, body)
	if rec.Code != status {
		h.t.Fatalf("%s %s: status %d, want %d: %s", method, path, rec.Code, status, rec.Body)
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			h.t.Fatalf("%s %s: %v in %s", method, path, err, rec.Body)
		}
	}
}

// expect sends a request and checks the status and that the answer
// contains each of parts.
func (h *harness) expect(method, path, token, body string, status int, parts ...string) {
	h.t.Helper()
	rec := h.do(method, path, token, body)
	if rec.Code != status {
		h.t.Errorf("%s %s: status %d, want %d: %s", method, path, rec.Code, status, rec.Body)
		return
	}
	for _, p := range parts {
		if !strings.Contains(rec.Body.String(), p) {
			h.t.Errorf("%s %s: answer %s lacks %q", method, path, rec.Body, p)
		}
	}
	if status >= 400 && rec.Header().Get("Content-Type") != "application/json" {
		h.t.Errorf("%s %s: error with content type %q", method, path, rec.Header().Get("Content-Type"))
	}
}
