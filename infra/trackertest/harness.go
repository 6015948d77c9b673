package trackertest

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/infra/fakedns"
	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
	"github.com/reqtrace/reqtrace/shared/dynamo/trackertable"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/outbound"
	"github.com/reqtrace/reqtrace/shared/tracker"
	"github.com/reqtrace/reqtrace/shared/wikiclient"
)

// Tokens of the principals a Harness seeds.
const (
	DemoAdmin = "demo-tracker-admin"
	DemoUser  = "demo-tracker-user"
	AcmeAdmin = "acme-tracker-admin"
	AcmeUser  = "acme-tracker-user"
	WikiUser  = "demo-wiki-user" // a token of the other application
	// WikiToken is the token the fake wiki expects from the tracker.
	WikiToken = "wiki-incoming-token"
)

// Harness is tracker route groups over DynamoDB Local (infra/testenv) with
// a fake wiki, the principals above, and the demo applink "wiki-1"
// registered (serviceId "jira-1").
type Harness struct {
	T      *testing.T
	Router *httpapi.Router
	Svc    *tracker.Service
	Store  *trackertable.TrackerStore
	Wiki   *Wiki
	// WikiURL is the url of demo's wiki-1: Wiki.URL, or with StrictTargets
	// a host name resolving to its loopback address.
	WikiURL string
	// Link is the incoming token of demo's wiki-1.
	Link string
}

// Options change what NewHarnessWith builds.
type Options struct {
	// StrictTargets builds the tracker as deployed, with
	// ALLOW_PRIVATE_TARGETS off. The fake wiki, which listens on loopback,
	// is then registered by a public-looking name (WikiHost) that a fake
	// DNS resolves to 127.0.0.1: the registration is accepted, and every
	// call to the wiki is refused when connecting.
	StrictTargets bool
}

// WikiHost is the name of the fake wiki with StrictTargets.
const WikiHost = "wiki.example.com"

// NewHarness builds a Harness whose router serves what register registers,
// with private targets allowed (the local stack's setting).
func NewHarness(t *testing.T, register func(*httpapi.Router, *tracker.Service)) *Harness {
	t.Helper()
	return NewHarnessWith(t, Options{}, register)
}

// NewHarnessWith builds a Harness with options o.
func NewHarnessWith(t *testing.T, o Options, register func(*httpapi.Router, *tracker.Service)) *Harness {
	t.Helper()
	env := testenv.AWS(t)
	ctx := context.Background()
	authStore := authtable.NewAuthStore(env.DynamoDB, env.AuthTable)
	for tok, p := range map[string]auth.Principal{
		DemoAdmin: {Tenant: "demo", App: auth.Tracker, Kind: auth.User, User: "alice", Admin: true},
		DemoUser:  {Tenant: "demo", App: auth.Tracker, Kind: auth.User, User: "bob"},
		AcmeAdmin: {Tenant: "acme", App: auth.Tracker, Kind: auth.User, User: "carol", Admin: true},
		AcmeUser:  {Tenant: "acme", App: auth.Tracker, Kind: auth.User, User: "dave"},
		WikiUser:  {Tenant: "demo", App: auth.Wiki, Kind: auth.User, User: "erin"},
	} {
		if err := authStore.PutToken(ctx, auth.HashToken(tok), p); err != nil {
			t.Fatal(err)
		}
	}
	store := trackertable.NewTrackerStore(env.DynamoDB, env.TrackerTable)
	wiki := NewWiki(t, WikiToken, "jira-1")
	wikiURL := wiki.URL
	if o.StrictTargets {
		u, _ := url.Parse(wiki.URL)
		wikiURL = "http://" + WikiHost + ":" + u.Port()
	}
	client := outbound.New(outbound.Options{Timeout: 2 * time.Second, AllowPrivate: !o.StrictTargets, MaxBody: wikiclient.MaxAnswer,
		Resolver: fakedns.Resolver(map[string][]netip.Addr{WikiHost: {netip.MustParseAddr("127.0.0.1")}})})
	svc := tracker.New(tracker.Deps{Applinks: store, Tokens: authStore, Links: store, Pending: store, Locks: store, Outbox: store,
		Wiki: wikiclient.New(client), AllowPrivateTargets: !o.StrictTargets})
	rt := httpapi.NewRouter(auth.Tracker, auth.NewAuthenticator(authStore, 0))
	rt.Logger = slog.New(slog.DiscardHandler)
	register(rt, svc)
	h := &Harness{T: t, Router: rt, Svc: svc, Store: store, Wiki: wiki, WikiURL: wikiURL}
	var reg struct {
		IncomingToken string `json:"incomingToken"`
	}
	h.JSON("PUT", "/rest/reqs/1/api/wiki-1", DemoAdmin,
		`{"name":"Demo wiki","url":"`+wikiURL+`","serviceId":"jira-1","token":"`+WikiToken+`"}`, 200, &reg)
	h.Link = reg.IncomingToken
	return h
}

// Do sends a request; body is sent as application/json unless empty.
func (h *Harness) Do(method, path, token, body string) *httptest.ResponseRecorder {
	h.T.Helper()
	return h.DoType(method, path, token, "application/json", body)
}

// DoType sends a request with body of content type ctype.
func (h *Harness) DoType(method, path, token, ctype, body string) *httptest.ResponseRecorder {
	h.T.Helper()
	return httpapitest.Do(h.Router, method, path, token, ctype, body)
}

// JSON sends a request, checks the status and decodes the answer into out
// (when not nil).
func (h *Harness) JSON(method, path, token, body string, status int, out any) {
	h.T.Helper()
	rec := h.Do(method, path, token, body)
	if rec.Code != status {
		h.T.Fatalf("%s %s: status %d, want %d: %s", method, path, rec.Code, status, rec.Body)
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			h.T.Fatalf("%s %s: %v in %s", method, path, err, rec.Body)
		}
	}
}

// Expect sends a request and checks the status, that the answer contains
// each of parts, and that errors are JSON.
func (h *Harness) Expect(method, path, token, body string, status int, parts ...string) {
	h.T.Helper()
	h.expect(method, path, token, body, status, parts, nil)
}

// ExpectWithout sends a request and checks the status, that errors are
// JSON, and that the answer contains none of absent (what a wiki answered
// must not reach the tracker's caller).
func (h *Harness) ExpectWithout(method, path, token, body string, status int, absent ...string) {
	h.T.Helper()
	h.expect(method, path, token, body, status, nil, absent)
}

func (h *Harness) expect(method, path, token, body string, status int, parts, absent []string) {
	h.T.Helper()
	rec := h.Do(method, path, token, body)
	if rec.Code != status {
		h.T.Errorf("%s %s: status %d, want %d: %s", method, path, rec.Code, status, rec.Body)
		return
	}
	for _, p := range parts {
		if !strings.Contains(rec.Body.String(), p) {
			h.T.Errorf("%s %s: answer %s lacks %q", method, path, rec.Body, p)
		}
	}
	for _, a := range absent {
		if strings.Contains(rec.Body.String(), a) {
			h.T.Errorf("%s %s: answer %s contains %q", method, path, rec.Body, a)
		}
	}
	if status >= 400 && rec.Header().Get("Content-Type") != "application/json" {
		h.T.Errorf("%s %s: error with content type %q", method, path, rec.Header().Get("Content-Type"))
	}
}
