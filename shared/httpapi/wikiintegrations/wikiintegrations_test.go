package wikiintegrations_test

// End-to-end tests of the WikiIntegrations route group and the sync run on
// the local stack (DynamoDB Local and moto SQS through infra/testenv), with
// an httptest tracker standing in for POST /rest/reqs/1/api.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/reqtrace/reqtrace/infra/fakedns"
	"github.com/reqtrace/reqtrace/infra/httpapitest"
	"github.com/reqtrace/reqtrace/infra/samtemplate"
	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikiintegrations"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/outbound"
	"github.com/reqtrace/reqtrace/shared/outbox"
	"github.com/reqtrace/reqtrace/shared/queue"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// tracker is a fake issue tracker: it records the batches POSTed to
// /rest/reqs/1/api and answers status (200 with per-message results, or an
// error).
type tracker struct {
	*httptest.Server
	mu      sync.Mutex
	batches [][]map[string]any
	auth    []string
	status  int
}

func newTracker(t *testing.T) *tracker {
	tr := &tracker{status: 200}
	tr.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var batch []map[string]any
		if r.Method != http.MethodPost || r.URL.Path != "/rest/reqs/1/api" || json.NewDecoder(r.Body).Decode(&batch) != nil {
			http.Error(w, "bad request", 400)
			return
		}
		tr.mu.Lock()
		tr.batches = append(tr.batches, batch)
		tr.auth = append(tr.auth, r.Header.Get("Authorization"))
		status := tr.status
		tr.mu.Unlock()
		switch status {
		case 200:
			var res []map[string]any
			for _, m := range batch {
				res = append(res, map[string]any{"id": m["id"], "status": "OK", "message": "applied"})
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"results": res})
		case 409:
			http.Error(w, `{"status":409,"message":"application link is DISABLED"}`, 409)
		case http.StatusTemporaryRedirect:
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/iam/security-credentials/", status)
		default:
			http.Error(w, `{"status":500,"message":"database unavailable"}`, status)
		}
	}))
	t.Cleanup(tr.Close)
	return tr
}

func (tr *tracker) set(status int) {
	tr.mu.Lock()
	tr.status = status
	tr.mu.Unlock()
}

func (tr *tracker) posts() [][]map[string]any {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.batches)
}

type mailer struct {
	mu   sync.Mutex
	sent []string
}

func (m *mailer) Send(_ context.Context, to, subject, body string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sent = append(m.sent, to+"\n"+subject+"\n"+body)
	return nil
}

func (m *mailer) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sent)
}

// stack is one test's wiki: the router of the route group, the sync run,
// and direct access to the stores and the queue.
type stack struct {
	env    *testenv.Env
	router *httpapi.Router
	sync   *integration.Sync
	// deps built sync, for a test that needs other options.
	deps    integration.Deps
	outbox  *wikitable.OutboxStore
	reqs    *wikitable.RequirementStore
	pub     *integration.Publisher
	tracker *tracker
	// trackerURL is the fake tracker's address as integrations name it:
	// tracker.URL, or with strict targets a host name resolving to it.
	trackerURL string
	mail       *mailer
	wiki       *wiki.Service
}

const (
	demoAdmin = "demo-admin-token"
	demoUser  = "demo-user-token"
	acmeAdmin = "acme-admin-token"
)

// newStack builds a wiki with private targets allowed (the local stack's
// setting), calling the fake tracker on 127.0.0.1.
func newStack(t *testing.T) *stack {
	t.Helper()
	return newStackWith(t, false)
}

// trackerHost is the fake tracker's name with strict targets: a fake DNS
// resolves it to 127.0.0.1, as a public name rebound to loopback would.
const trackerHost = "tracker.example.com"

// newStackWith builds a wiki; strict builds it as deployed
// (ALLOW_PRIVATE_TARGETS off), naming the fake tracker by trackerHost.
func newStackWith(t *testing.T, strict bool) *stack {
	t.Helper()
	env := testenv.AWS(t)
	ctx := context.Background()
	db := dynamodb.NewFromConfig(env.Config)
	authStore := authtable.NewAuthStore(db, env.AuthTable)
	for tok, p := range map[string]auth.Principal{
		demoAdmin: {Tenant: "demo", App: auth.Wiki, Kind: auth.User, User: "admin", Admin: true},
		demoUser:  {Tenant: "demo", App: auth.Wiki, Kind: auth.User, User: "alice"},
		acmeAdmin: {Tenant: "acme", App: auth.Wiki, Kind: auth.User, User: "admin", Admin: true},
	} {
		if err := authStore.PutToken(ctx, auth.HashToken(tok), p); err != nil {
			t.Fatal(err)
		}
	}
	store := wikitable.NewIntegrationStore(db, env.WikiTable)
	ob := wikitable.NewOutboxStore(db, env.WikiTable)
	q := queue.New(env.SQS, env.QueueURL)
	s := &stack{env: env, outbox: ob, reqs: wikitable.NewRequirementStore(db, env.WikiTable),
		pub: integration.NewPublisher(q, ob), tracker: newTracker(t), mail: &mailer{}}
	s.trackerURL = s.tracker.URL
	if strict {
		s.trackerURL = "http://" + trackerHost + ":" + strings.TrimPrefix(s.tracker.Listener.Addr().String(), "127.0.0.1:")
	}
	client := outbound.New(outbound.Options{Timeout: 5 * time.Second, AllowPrivate: !strict,
		Resolver: fakedns.Resolver(map[string][]netip.Addr{trackerHost: {netip.MustParseAddr("127.0.0.1")}})})
	deps := integration.Deps{
		Store: store, Outbox: ob, Links: store, Tokens: authStore, Settings: wikitable.NewSettingsStore(db, env.WikiTable),
		Tracker: &integration.HTTPTracker{Client: client}, Publisher: s.pub, Queue: q, Mailer: s.mail,
		ReconcileStore: store, AllowPrivateTargets: !strict,
	}
	deps.Reconciler = integration.NewReconciler(deps, store)
	s.wiki = wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(db, env.WikiTable)})
	s.router = httpapi.NewRouter(auth.Wiki, auth.NewAuthenticator(authStore, 0))
	s.router.Logger = slog.New(slog.DiscardHandler)
	(&wikiintegrations.Handler{Service: integration.New(deps)}).Register(s.router)
	deps.Logger = slog.New(slog.DiscardHandler)
	s.sync = integration.NewSync(deps, integration.SyncOptions{ReceiveWait: time.Nanosecond})
	s.deps = deps
	return s
}

// do sends a request to the route group and answers the status and body.
func (s *stack) do(t *testing.T, method, path, token, body string) (int, string) {
	t.Helper()
	ctype := ""
	if body != "" {
		ctype = "application/json"
	}
	rec := httpapitest.Do(s.router, method, path, token, ctype, body)
	return rec.Code, rec.Body.String()
}

func (s *stack) json(t *testing.T, method, path, token, body string, want int, v any) {
	t.Helper()
	code, out := s.do(t, method, path, token, body)
	if code != want {
		t.Fatalf("%s %s = %d %s, want %d", method, path, code, out, want)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(out), v); err != nil {
			t.Fatalf("%s %s: %v in %s", method, path, err, out)
		}
	}
}

// createIntegration creates demo's (or another tenant's) integration
// pointing at the fake tracker and answers its incomingToken.
func (s *stack) createIntegration(t *testing.T, token, id string) string {
	t.Helper()
	var d map[string]any
	s.json(t, "POST", "/rest/reqs/1/integration", token, fmt.Sprintf(`{"applinkId":%q,"label":"Jira","rpcUrl":%q,
		"displayUrl":"https://jira.example.com","sendErrorsToEmail":"ops@example.com","token":"tracker-secret"}`, id, s.trackerURL), 200, &d)
	return d["incomingToken"].(string)
}

// write stores n NEW messages of demo's jira-1 created at `at` (REQ-<i>),
// publishing them as the content function does unless publish is false.
func (s *stack) write(t *testing.T, n int, at time.Time, publish bool) []*outbox.Message {
	t.Helper()
	msgs := make([]*outbox.Message, n)
	for i := range msgs {
		msgs[i] = &outbox.Message{ID: outbox.NewID(at.Add(time.Duration(i))), ServiceID: "jira-1", State: outbox.New, CreatedAt: at,
			Type: outbox.Updated, AuthorKey: "alice", AuthorName: "Alice", SpaceKey: "DEMO", Key: fmt.Sprintf("REQ-%05d", i),
			NewHTMLExcerpt: "<p>x</p>", NewURL: fmt.Sprintf("/requirements/DEMO/REQ-%05d", i)}
	}
	ctx := context.Background()
	if err := s.outbox.Put(ctx, "demo", msgs); err != nil {
		t.Fatal(err)
	}
	if publish {
		if err := s.pub.Publish(ctx, "demo", msgs); err != nil {
			t.Fatal(err)
		}
	}
	return msgs
}

func (s *stack) run(t *testing.T) integration.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := s.sync.Run(ctx)
	if err != nil {
		t.Fatalf("sync run: %v", err)
	}
	return rep
}

func (s *stack) message(t *testing.T, id string) *outbox.Message {
	t.Helper()
	m, err := s.outbox.Get(context.Background(), "demo", "jira-1", id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// queueCounts answers the visible and in-flight messages of a queue.
func (s *stack) queueCounts(t *testing.T, url string) (int, int) {
	t.Helper()
	out, err := s.env.SQS.GetQueueAttributes(context.Background(), &sqs.GetQueueAttributesInput{QueueUrl: &url,
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	visible, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
	hidden, _ := strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
	return visible, hidden
}

func TestRegisterMatchesTemplate(t *testing.T) {
	t.Parallel()
	tmpl, err := samtemplate.Load("../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, fn := range tmpl.Functions {
		if fn.LogicalID == "WikiIntegrations" {
			for _, r := range fn.Routes {
				declared = append(declared, r.Method+" "+r.Path)
			}
		}
	}
	rt := httpapi.NewRouter(auth.Wiki, nil)
	(&wikiintegrations.Handler{}).Register(rt)
	var served []string
	for _, r := range rt.Routes() {
		served = append(served, r.Method+" "+r.Path)
	}
	slices.Sort(declared)
	slices.Sort(served)
	if len(declared) == 0 || !slices.Equal(declared, served) {
		t.Fatalf("template.yaml declares\n%v\nthe router serves\n%v", declared, served)
	}
}

func TestIntegrationCRUD(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	var created map[string]any
	s.json(t, "POST", "/rest/reqs/1/integration", demoAdmin, fmt.Sprintf(`{"applinkId":"jira-1","label":"Jira","rpcUrl":%q,
		"sendErrorsToEmail":"ops@example.com","sendErrorsToEmailThrottle":15,"userKey":"svc","username":"svc-user","token":"tracker-secret"}`, s.tracker.URL), 200, &created)
	want := map[string]any{"serviceId": "jira-1", "applinkId": "jira-1", "label": "Jira", "displayUrl": s.tracker.URL, "rpcUrl": s.tracker.URL,
		"endpoint": "/rest/reqs/1/api", "sendErrorsToEmail": "ops@example.com", "sendErrorsToEmailThrottle": 15.0, "userKey": "svc",
		"username": "svc-user", "version": 4.0, "countMessagesInQueue": 0.0, "status": "ACTIVE", "hasToken": true, "pendingRemovals": 0.0}
	incoming, _ := created["incomingToken"].(string)
	delete(created, "incomingToken")
	if fmt.Sprint(created) != fmt.Sprint(want) || !strings.HasPrefix(incoming, "rt_") {
		t.Fatalf("created\n%v\nwant\n%v (incoming %q)", created, want, incoming)
	}

	// A non-link integration gets a UUID; a second one with the same id is a conflict.
	var other map[string]any
	s.json(t, "POST", "/rest/reqs/1/integration", demoAdmin, `{"rpcUrl":"https://other.example.com","version":0}`, 200, &other)
	if id := other["serviceId"].(string); len(id) != 36 || other["applinkId"] != "" || other["endpoint"] != "" || other["hasToken"] != false {
		t.Fatalf("non-link integration %v", other)
	}
	if code, body := s.do(t, "POST", "/rest/reqs/1/integration", demoAdmin, `{"serviceId":"jira-1","rpcUrl":"https://x.example.com"}`); code != 409 {
		t.Fatalf("duplicate = %d %s", code, body)
	}

	// Validation.
	for body, msg := range map[string]string{
		`{"rpcUrl":"jira.example.com"}`:                                   "rpcUrl: must be an absolute http or https URL",
		`{"rpcUrl":"https://j.example.com","status":"PAUSED"}`:            "use ACTIVE or DISABLED",
		`{"rpcUrl":"https://j.example.com","version":6}`:                  "version must be between 0 and 5",
		`{"rpcUrl":"https://j.example.com","sendErrorsToEmail":"nobody"}`: "sendErrorsToEmail",
		`{"rpcUrl":"https://j.example.com","colour":"red"}`:               "unknown field",
		`{"rpcUrl":"https://j.example.com","displayUrl":"ftp://j"}`:       "displayUrl",
	} {
		code, out := s.do(t, "POST", "/rest/reqs/1/integration", demoAdmin, body)
		if code != 400 || !strings.Contains(out, msg) {
			t.Fatalf("POST %s = %d %s, want 400 with %q", body, code, out, msg)
		}
	}

	// GET and the list; the token is never answered.
	var got map[string]any
	s.json(t, "GET", "/rest/reqs/1/integration/jira-1", demoAdmin, "", 200, &got)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("GET = %v", got)
	}
	var list []map[string]any
	s.json(t, "GET", "/rest/reqs/1/integration", demoAdmin, "", 200, &list)
	if len(list) != 2 {
		t.Fatalf("list = %v", list)
	}

	// PUT the GET answer back with changes: read-only fields are ignored.
	got["label"], got["status"], got["version"], got["countMessagesInQueue"] = "Jira prod", "disabled", 0, 99
	body, _ := json.Marshal(got)
	var updated map[string]any
	s.json(t, "PUT", "/rest/reqs/1/integration/jira-1", demoAdmin, string(body), 200, &updated)
	if updated["label"] != "Jira prod" || updated["status"] != "DISABLED" || updated["endpoint"] != "" || updated["countMessagesInQueue"] != 0.0 || updated["hasToken"] != true {
		t.Fatalf("updated %v", updated)
	}
	// A partial PUT keeps the rest; version 1 brings the default endpoint back.
	s.json(t, "PUT", "/rest/reqs/1/integration/jira-1", demoAdmin, `{"version":1}`, 200, &updated)
	if updated["label"] != "Jira prod" || updated["endpoint"] != "/rest/reqs/1/api" {
		t.Fatalf("partial update %v", updated)
	}
	if code, out := s.do(t, "PUT", "/rest/reqs/1/integration/jira-1", demoAdmin, `{"status":"OFF"}`); code != 400 || !strings.Contains(out, "ACTIVE or DISABLED") {
		t.Fatalf("bad status = %d %s", code, out)
	}
	if code, _ := s.do(t, "PUT", "/rest/reqs/1/integration/jira-1", demoAdmin, `{"serviceId":"jira-2"}`); code != 400 {
		t.Fatalf("changing serviceId = %d", code)
	}
	if code, _ := s.do(t, "PUT", "/rest/reqs/1/integration/nope", demoAdmin, `{"label":"x"}`); code != 404 {
		t.Fatalf("PUT unknown = %d", code)
	}

	// Non-admins: 403; another tenant: 404, its list is empty.
	for _, r := range [][2]string{{"GET", "/rest/reqs/1/integration"}, {"GET", "/rest/reqs/1/integration/jira-1"},
		{"GET", "/rest/reqs/1/integration/jira-1/queue/outbound"}, {"GET", "/rest/reqs/1/integration/jira-1/version"}, {"GET", "/rest/reqs/1/admin/settings"}} {
		if code, _ := s.do(t, r[0], r[1], demoUser, ""); code != 403 {
			t.Fatalf("user %s %s = %d, want 403", r[0], r[1], code)
		}
	}
	if code, _ := s.do(t, "POST", "/rest/reqs/1/integration", demoUser, `{"rpcUrl":"https://j.example.com"}`); code != 403 {
		t.Fatalf("user POST = %d", code)
	}
	for _, r := range [][2]string{{"GET", "/rest/reqs/1/integration/jira-1"}, {"GET", "/rest/reqs/1/integration/jira-1/queue/outbound"},
		{"GET", "/rest/reqs/1/integration/jira-1/version"}, {"DELETE", "/rest/reqs/1/integration/jira-1/queue/outbound/0000000000000001aaaaaaaa"}} {
		if code, _ := s.do(t, r[0], r[1], acmeAdmin, ""); code != 404 {
			t.Fatalf("acme %s %s = %d, want 404", r[0], r[1], code)
		}
	}
	if code, _ := s.do(t, "PUT", "/rest/reqs/1/integration/jira-1", acmeAdmin, `{"label":"mine"}`); code != 404 {
		t.Fatalf("acme PUT = %d", code)
	}
	s.json(t, "GET", "/rest/reqs/1/integration", acmeAdmin, "", 200, &list)
	if len(list) != 0 {
		t.Fatalf("acme sees %v", list)
	}
	// The tracker credential is written, never read back.
	for _, p := range []string{"/rest/reqs/1/integration", "/rest/reqs/1/integration/jira-1"} {
		if _, out := s.do(t, "GET", p, demoAdmin, ""); strings.Contains(out, "tracker-secret") {
			t.Fatalf("GET %s leaks the token: %s", p, out)
		}
	}
}

func TestIncomingToken(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	incoming := s.createIntegration(t, demoAdmin, "jira-1")
	s.createIntegration(t, demoAdmin, "jira-2")

	var v map[string]any
	s.json(t, "GET", "/rest/reqs/1/integration/jira-1/version", incoming, "", 200, &v)
	if v["version"] != 4.0 || v["max"] != 5.0 {
		t.Fatalf("version = %v", v)
	}
	s.json(t, "PUT", "/rest/reqs/1/integration/jira-1/version", incoming, `2`, 200, &v)
	if v["version"] != 2.0 {
		t.Fatalf("PUT version 2 = %v", v)
	}
	s.json(t, "PUT", "/rest/reqs/1/integration/jira-1/version", demoAdmin, `9`, 200, &v)
	if v["version"] != 5.0 {
		t.Fatalf("PUT version 9 = %v", v)
	}
	s.json(t, "PUT", "/rest/reqs/1/integration/jira-1/version", incoming, `0`, 200, &v)
	var d map[string]any
	s.json(t, "GET", "/rest/reqs/1/integration/jira-1", demoAdmin, "", 200, &d)
	if d["version"] != 0.0 || d["endpoint"] != "" {
		t.Fatalf("after version 0: %v", d)
	}
	for _, body := range []string{`-1`, `"3"`, `2.5`, `null`, `{}`} {
		if code, out := s.do(t, "PUT", "/rest/reqs/1/integration/jira-1/version", incoming, body); code != 400 {
			t.Fatalf("PUT version %s = %d %s", body, code, out)
		}
	}
	// Only its own integration's version and links.
	for _, r := range [][3]string{
		{"GET", "/rest/reqs/1/integration/jira-2/version", ""},
		{"PUT", "/rest/reqs/1/integration/jira-2/links", `[]`},
		{"GET", "/rest/reqs/1/integration/jira-1", ""},
		{"GET", "/rest/reqs/1/integration", ""},
		{"GET", "/rest/reqs/1/integration/jira-1/queue/outbound", ""},
		{"GET", "/rest/reqs/1/admin/settings", ""},
	} {
		if code, out := s.do(t, r[0], r[1], incoming, r[2]); code != 403 {
			t.Fatalf("link %s %s = %d %s, want 403", r[0], r[1], code, out)
		}
	}
	if code, out := s.do(t, "PUT", "/rest/reqs/1/integration/jira-1/links", incoming, `[]`); code != 200 {
		t.Fatalf("own links = %d %s", code, out)
	}

	// Rotation: the old credential stops working, the new one works.
	var rotated map[string]any
	s.json(t, "PUT", "/rest/reqs/1/integration/jira-1", demoAdmin, `{"rotateToken":true}`, 200, &rotated)
	fresh, _ := rotated["incomingToken"].(string)
	if fresh == "" || fresh == incoming {
		t.Fatalf("rotate = %v", rotated)
	}
	if code, _ := s.do(t, "GET", "/rest/reqs/1/integration/jira-1/version", incoming, ""); code != 401 {
		t.Fatalf("old token = %d, want 401", code)
	}
	if code, _ := s.do(t, "GET", "/rest/reqs/1/integration/jira-1/version", fresh, ""); code != 200 {
		t.Fatalf("new token = %d", code)
	}
	// A plain PUT answers no credential.
	var plain map[string]any
	s.json(t, "PUT", "/rest/reqs/1/integration/jira-1", demoAdmin, `{"label":"x"}`, 200, &plain)
	if _, ok := plain["incomingToken"]; ok {
		t.Fatalf("PUT answered a credential: %v", plain)
	}
}

func TestSettings(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	var st map[string]any
	s.json(t, "GET", "/rest/reqs/1/admin/settings", demoAdmin, "", 200, &st)
	if st["isolateSpaces"] != false {
		t.Fatalf("default = %v", st)
	}
	s.json(t, "PUT", "/rest/reqs/1/admin/settings", demoAdmin, `{"isolateSpaces":true}`, 200, &st)
	s.json(t, "PUT", "/rest/reqs/1/admin/settings", demoAdmin, `{}`, 200, &st)
	if st["isolateSpaces"] != true {
		t.Fatalf("after PUT = %v", st)
	}
	s.json(t, "GET", "/rest/reqs/1/admin/settings", acmeAdmin, "", 200, &st)
	if st["isolateSpaces"] != false {
		t.Fatalf("acme = %v", st)
	}
	if code, _ := s.do(t, "PUT", "/rest/reqs/1/admin/settings", demoUser, `{"isolateSpaces":false}`); code != 403 {
		t.Fatalf("user PUT = %d", code)
	}
	if code, _ := s.do(t, "PUT", "/rest/reqs/1/admin/settings", demoAdmin, `{"isolateSpaces":"yes"}`); code != 400 {
		t.Fatalf("bad PUT = %d", code)
	}
}

// TestSuspectFieldsSetting: the admin setting suspectFields
// (docs/change-analysis.md, "Suspect links"): its default, each kind of
// field, [] (nothing marks), kept by a PUT that leaves it out, an unknown
// field refused naming it (nothing changes), admins only, per tenant.
func TestSuspectFieldsSetting(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	fields := func(token string) string {
		t.Helper()
		var st struct{ SuspectFields []string }
		s.json(t, "GET", "/rest/reqs/1/admin/settings", token, "", 200, &st)
		b, _ := json.Marshal(st.SuspectFields)
		return string(b)
	}
	if got := fields(demoAdmin); got != `["text","properties"]` {
		t.Fatalf("default suspectFields %s", got)
	}
	all := `["text","properties","dependencies","status","@Priority"]`
	s.json(t, "PUT", "/rest/reqs/1/admin/settings", demoAdmin, `{"suspectFields":`+all+`}`, 200, nil)
	s.json(t, "PUT", "/rest/reqs/1/admin/settings", demoAdmin, `{"isolateSpaces":true}`, 200, nil)
	if got := fields(demoAdmin); got != all {
		t.Fatalf("after a PUT without suspectFields: %s, want %s", got, all)
	}
	for _, bad := range []string{`["nope"]`, `["Text"]`, `["@"]`, `["@ "]`, `[""]`, `["text","@A\u0001"]`, `"text"`} {
		code, out := s.do(t, "PUT", "/rest/reqs/1/admin/settings", demoAdmin, `{"suspectFields":`+bad+`}`)
		if code != 400 || (bad != `"text"` && !strings.Contains(out, `"suspectFields"`)) {
			t.Errorf("suspectFields %s: %d %s, want 400 naming suspectFields", bad, code, out)
		}
	}
	if got := fields(demoAdmin); got != all {
		t.Fatalf("after refused PUTs: %s, want %s", got, all)
	}
	s.json(t, "PUT", "/rest/reqs/1/admin/settings", demoAdmin, `{"suspectFields":[]}`, 200, nil)
	if got := fields(demoAdmin); got != `[]` {
		t.Fatalf("suspectFields [] read back as %s", got)
	}
	if code, _ := s.do(t, "PUT", "/rest/reqs/1/admin/settings", demoUser, `{"suspectFields":["text"]}`); code != 403 {
		t.Fatalf("a wiki user's PUT = %d, want 403", code)
	}
	if code, _ := s.do(t, "GET", "/rest/reqs/1/admin/settings", demoUser, ""); code != 403 {
		t.Fatalf("a wiki user's GET = %d, want 403", code)
	}
	if got := fields(acmeAdmin); got != `["text","properties"]` {
		t.Fatalf("another tenant's suspectFields %s", got)
	}
}

// TestQueueHasMore: the queue listing says in X-Has-More whether the page
// after it has messages, at exact page boundaries too, for NEW messages and
// with includeDone.
func TestQueueHasMore(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.createIntegration(t, demoAdmin, "jira-1")
	msgs := s.write(t, 4, time.Now(), false)
	base := "/rest/reqs/1/integration/jira-1/queue/outbound"
	page := func(query string) ([]string, string) {
		t.Helper()
		rec := httpapitest.Do(s.router, "GET", base+query, demoAdmin, "", "")
		var q []map[string]any
		if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &q) != nil {
			t.Fatalf("GET %s = %d %s", query, rec.Code, rec.Body)
		}
		ids := []string{}
		for _, m := range q {
			ids = append(ids, m["id"].(string))
		}
		return ids, rec.Header().Get(wikiintegrations.HasMoreHeader)
	}
	id := func(ms ...*outbox.Message) []string {
		out := []string{}
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	for _, tc := range []struct {
		query string
		ids   []string
		more  string
	}{
		{"", id(msgs...), "false"},
		{"?limit=4", id(msgs...), "false"}, // a full last page
		{"?limit=3", id(msgs[:3]...), "true"},
		{"?limit=2", id(msgs[:2]...), "true"},
		{"?limit=2&after=" + msgs[1].ID, id(msgs[2:]...), "false"},
		{"?limit=1&after=" + msgs[2].ID, id(msgs[3]), "false"},
		{"?limit=1&after=" + msgs[1].ID, id(msgs[2]), "true"},
		{"?after=" + msgs[3].ID, []string{}, "false"},
	} {
		if ids, more := page(tc.query); !slices.Equal(ids, tc.ids) || more != tc.more {
			t.Errorf("GET %s: %v, X-Has-More %q; want %v, %q", tc.query, ids, more, tc.ids, tc.more)
		}
	}
	// DONE messages count with includeDone only.
	if err := s.outbox.MarkDone(context.Background(), []integration.Outcome{{Ref: integration.RefOf("demo", msgs[3]), LastResponse: "OK"}}); err != nil {
		t.Fatal(err)
	}
	if ids, more := page("?limit=3"); !slices.Equal(ids, id(msgs[:3]...)) || more != "false" {
		t.Errorf("NEW only, limit 3: %v, %q", ids, more)
	}
	if ids, more := page("?limit=3&includeDone=true"); !slices.Equal(ids, id(msgs[:3]...)) || more != "true" {
		t.Errorf("includeDone, limit 3: %v, %q", ids, more)
	}
}

func TestQueueListingPushAndDelete(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.createIntegration(t, demoAdmin, "jira-1")
	msgs := s.write(t, 5, time.Now(), false)
	base := "/rest/reqs/1/integration/jira-1/queue/outbound"

	var q []map[string]any
	s.json(t, "GET", base, demoAdmin, "", 200, &q)
	if len(q) != 5 || q[0]["id"] != msgs[0].ID || q[0]["state"] != "NEW" || q[0]["baseline"] != nil || q[0]["type"] != "UPDATED" || q[0]["key"] != "REQ-00000" {
		t.Fatalf("queue = %v", q)
	}
	if _, ok := q[0]["lastResponse"]; ok {
		t.Fatal("lastResponse without includeLastRespnse")
	}
	for _, k := range []string{"id", "state", "createdAt", "type", "spaceKey", "key", "baseline", "objectKey", "relationship", "newHtmlExcerpt", "newSpaceKey", "newKey", "newBaseline", "newUrl"} {
		if _, ok := q[0][k]; !ok {
			t.Fatalf("queue message lacks %q: %v", k, q[0])
		}
	}
	// Times are sent as everywhere else: UTC, milliseconds.
	if ts, _ := q[0]["createdAt"].(string); !strings.HasSuffix(ts, "Z") || len(ts) != len("2006-01-02T15:04:05.000Z") {
		t.Fatalf("createdAt %q, want RFC 3339 in UTC with milliseconds", ts)
	}
	s.json(t, "GET", base+"?limit=2&includeLastRespnse=true", demoAdmin, "", 200, &q)
	if len(q) != 2 || q[1]["id"] != msgs[1].ID || q[0]["lastResponse"] != "" {
		t.Fatalf("limited queue = %v", q)
	}
	// Keyset paging: after= the last id of a page continues strictly after it.
	var rest []map[string]any
	s.json(t, "GET", base+"?limit=2&after="+msgs[1].ID, demoAdmin, "", 200, &rest)
	if len(rest) != 2 || rest[0]["id"] != msgs[2].ID || rest[1]["id"] != msgs[3].ID {
		t.Fatalf("page after %s = %v", msgs[1].ID, rest)
	}
	s.json(t, "GET", base+"?after="+msgs[4].ID, demoAdmin, "", 200, &rest)
	if len(rest) != 0 {
		t.Fatalf("page after the last message = %v", rest)
	}
	for _, p := range []string{"?limit=0", "?limit=x", "?includeDone=maybe", "?after=zz", "?after=" + strings.Repeat("f", 65)} {
		if code, _ := s.do(t, "GET", base+p, demoAdmin, ""); code != 400 {
			t.Fatalf("GET %s = %d", p, code)
		}
	}

	// Push now: the tracker fails (502, still NEW), then takes it (200, DONE).
	s.tracker.set(500)
	code, out := s.do(t, "PUT", base+"/"+msgs[0].ID, demoAdmin, "")
	var failed map[string]any
	_ = json.Unmarshal([]byte(out), &failed)
	if code != 502 || failed["state"] != "NEW" || failed["id"] != msgs[0].ID || !strings.HasPrefix(failed["lastResponse"].(string), "HTTP 500") || failed["status"] != 502.0 {
		t.Fatalf("failed push = %d %s", code, out)
	}
	if m := s.message(t, msgs[0].ID); m.State != outbox.New || !strings.HasPrefix(m.LastResponse, "HTTP 500") {
		t.Fatalf("after failed push: %+v", m)
	}
	s.tracker.set(200)
	var pushed map[string]any
	s.json(t, "PUT", base+"/"+msgs[0].ID, demoAdmin, "", 200, &pushed)
	if pushed["state"] != "DONE" || pushed["lastResponse"] != "HTTP 200: OK: applied" {
		t.Fatalf("push = %v", pushed)
	}
	if p := s.tracker.posts(); len(p) != 2 || len(p[1]) != 1 || p[1][0]["key"] != "REQ-00000" || s.tracker.auth[1] != "Bearer tracker-secret" {
		t.Fatalf("tracker saw %v", p)
	}

	// DONE messages are listed only with includeDone.
	s.json(t, "GET", base, demoAdmin, "", 200, &q)
	if len(q) != 4 {
		t.Fatalf("NEW after push = %d", len(q))
	}
	s.json(t, "GET", base+"?includeDone=true&includeLastRespnse=true", demoAdmin, "", 200, &q)
	if len(q) != 5 || q[0]["state"] != "DONE" || q[0]["lastResponse"] != "HTTP 200: OK: applied" {
		t.Fatalf("with done = %v", q)
	}
	var d map[string]any
	s.json(t, "GET", "/rest/reqs/1/integration/jira-1", demoAdmin, "", 200, &d)
	if d["countMessagesInQueue"] != 4.0 {
		t.Fatalf("count = %v", d["countMessagesInQueue"])
	}

	// Delete; then it is gone (404), also for another tenant and integration.
	if code, _ := s.do(t, "DELETE", base+"/"+msgs[1].ID, demoAdmin, ""); code != 204 {
		t.Fatalf("DELETE = %d", code)
	}
	if code, _ := s.do(t, "DELETE", base+"/"+msgs[1].ID, demoAdmin, ""); code != 404 {
		t.Fatalf("second DELETE = %d", code)
	}
	s.createIntegration(t, demoAdmin, "jira-2")
	s.createIntegration(t, acmeAdmin, "jira-1")
	if code, _ := s.do(t, "PUT", "/rest/reqs/1/integration/jira-2/queue/outbound/"+msgs[2].ID, demoAdmin, ""); code != 404 {
		t.Fatalf("other integration's message = %d", code)
	}
	if code, _ := s.do(t, "PUT", base+"/"+msgs[2].ID, acmeAdmin, ""); code != 404 {
		t.Fatalf("other tenant's message = %d", code)
	}
	if code, _ := s.do(t, "DELETE", base+"/not-an-id", demoAdmin, ""); code != 404 {
		t.Fatalf("bad id = %d", code)
	}
	// Pushing to a DISABLED integration is refused.
	s.json(t, "PUT", "/rest/reqs/1/integration/jira-1", demoAdmin, `{"status":"DISABLED"}`, 200, nil)
	if code, _ := s.do(t, "PUT", base+"/"+msgs[2].ID, demoAdmin, ""); code != 409 {
		t.Fatalf("push to DISABLED = %d", code)
	}
}

func TestSyncDeliversInOrder(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.createIntegration(t, demoAdmin, "jira-1")
	msgs := s.write(t, 250, time.Now(), true)
	// A duplicate SQS copy of the first message (another deduplication id).
	body, _ := json.Marshal(map[string]any{"tenant": "demo", "serviceId": "jira-1", "ids": []string{msgs[0].ID}})
	if _, err := s.env.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &s.env.QueueURL, MessageBody: aws.String(string(body)),
		MessageGroupId: aws.String("demo#jira-1"), MessageDeduplicationId: aws.String("copy-" + msgs[0].ID)}); err != nil {
		t.Fatal(err)
	}
	rep := s.run(t)
	posts := s.tracker.posts()
	if len(posts) != 3 || len(posts[0]) != 100 || len(posts[2]) != 50 || rep.Delivered != 250 || rep.Received != 2 || rep.Settled != 2 {
		t.Fatalf("%d posts, report %+v", len(posts), rep)
	}
	i := 0
	for _, p := range posts {
		for j, m := range p {
			if m["id"] != float64(j+1) || m["key"] != msgs[i].Key || m["estate"] != "_" || m["type"] != "UPDATED" ||
				m["authorKey"] != "alice" || m["authorName"] != "Alice" || m["baseline"] != nil || m["newUrl"] != msgs[i].NewURL {
				t.Fatalf("message %d = %v", i, m)
			}
			i++
		}
	}
	if s.tracker.auth[0] != "Bearer tracker-secret" {
		t.Fatalf("Authorization = %q", s.tracker.auth[0])
	}
	for _, m := range []*outbox.Message{msgs[0], msgs[249]} {
		if got := s.message(t, m.ID); got.State != outbox.Done || got.LastResponse != "HTTP 200: OK: applied" {
			t.Fatalf("message %s: %s %q", m.ID, got.State, got.LastResponse)
		}
	}
	if visible, hidden := s.queueCounts(t, s.env.QueueURL); visible+hidden != 0 {
		t.Fatalf("queue keeps %d+%d references", visible, hidden)
	}

	// A late duplicate copy: ignored, not delivered twice.
	if _, err := s.env.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: &s.env.QueueURL, MessageBody: aws.String(string(body)),
		MessageGroupId: aws.String("demo#jira-1"), MessageDeduplicationId: aws.String("late-" + msgs[0].ID)}); err != nil {
		t.Fatal(err)
	}
	if rep := s.run(t); rep.Posts != 0 || rep.Settled != 1 {
		t.Fatalf("duplicate run %+v", rep)
	}
	if len(s.tracker.posts()) != 3 {
		t.Fatal("a duplicate reference was delivered again")
	}
}

func TestSyncFailureKeepsNewMailsOnceAndEndsInDLQ(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.createIntegration(t, demoAdmin, "jira-1")
	// References come back 1 s after a failed run instead of 120 s.
	if _, err := s.env.SQS.SetQueueAttributes(context.Background(), &sqs.SetQueueAttributesInput{QueueUrl: &s.env.QueueURL,
		Attributes: map[string]string{"VisibilityTimeout": "1"}}); err != nil {
		t.Fatal(err)
	}
	msgs := s.write(t, 3, time.Now(), true)
	s.tracker.set(500)
	rep := s.run(t)
	if rep.Received == 0 || rep.Failed == 0 || rep.Delivered != 0 || s.mail.count() != 1 {
		t.Fatalf("first run %+v, mails %d", rep, s.mail.count())
	}
	m := s.message(t, msgs[0].ID)
	if m.State != outbox.New || !strings.HasPrefix(m.LastResponse, "HTTP 500") {
		t.Fatalf("after failure: %+v", m)
	}
	if sent := s.mail.sent[0]; !strings.HasPrefix(sent, "ops@example.com\n") || !strings.Contains(sent, "HTTP 500") || strings.Contains(sent, "tracker-secret") {
		t.Fatalf("mail = %q", sent)
	}
	// Failing runs until SQS moves the reference to the DLQ: that happens
	// at the first receive after maxReceiveCount (5) receives, whichever
	// runs made them (on a loaded machine a run can take longer than the
	// 1 s visibility timeout and receive the same envelope twice), so the
	// runs receive it exactly 5 times in all, fail each time, deliver
	// nothing, and send no more e-mail within the throttle. The outbox
	// keeps the messages NEW with the error.
	receives, runs := rep.Received, 1
	for deadline := time.Now().Add(60 * time.Second); ; {
		time.Sleep(1100 * time.Millisecond)
		rep := s.run(t)
		runs++
		receives += rep.Received
		if rep.Delivered != 0 || (rep.Received != 0 && rep.Failed == 0) {
			t.Fatalf("failing run %d: %+v", runs, rep)
		}
		if visible, _ := s.queueCounts(t, s.env.DLQURL); visible == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no envelope in the DLQ after %d runs, %d receives", runs, receives)
		}
	}
	if receives != 5 {
		t.Fatalf("the reference was received %d times before the DLQ, want maxReceiveCount = 5", receives)
	}
	if s.mail.count() != 1 {
		t.Fatalf("%d e-mails within the throttle", s.mail.count())
	}
	t.Logf("%d runs, %d receives before the DLQ", runs, receives)
	if m := s.message(t, msgs[2].ID); m.State != outbox.New || !strings.HasPrefix(m.LastResponse, "HTTP 500") {
		t.Fatalf("after DLQ: %+v", m)
	}
	// The tracker comes back: the next message's reference delivers the
	// whole backlog, DLQ'd messages first, in order.
	s.tracker.set(200)
	more := s.write(t, 1, time.Now(), true)
	rep = s.run(t)
	last := s.tracker.posts()[len(s.tracker.posts())-1]
	if rep.Delivered != 4 || len(last) != 4 || last[0]["key"] != msgs[0].Key || last[3]["key"] != more[0].Key {
		t.Fatalf("recovery %+v, last post %v", rep, last)
	}
}

func TestSyncTrackerDisabledAndIntegrationDisabled(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.createIntegration(t, demoAdmin, "jira-1")
	// The tracker's link is DISABLED (409): messages stay NEW.
	s.tracker.set(409)
	msgs := s.write(t, 2, time.Now(), true)
	if rep := s.run(t); rep.Failed != 1 {
		t.Fatalf("409 run %+v", rep)
	}
	if m := s.message(t, msgs[0].ID); m.State != outbox.New || !strings.HasPrefix(m.LastResponse, "HTTP 409") {
		t.Fatalf("after 409: %+v", m)
	}
	// The tracker's link is set AUTO again: the very next run delivers
	// (the failed run made its envelopes visible again when it ended).
	s.tracker.set(200)
	if rep := s.run(t); rep.Delivered != 2 {
		t.Fatalf("run after the tracker recovered %+v", rep)
	}

	// The wiki's integration DISABLED: nothing is POSTed, the messages stay
	// NEW.
	s.createIntegration(t, acmeAdmin, "jira-1")
	s.json(t, "PUT", "/rest/reqs/1/integration/jira-1", acmeAdmin, `{"status":"DISABLED"}`, 200, nil)
	now := time.Now()
	acme := []*outbox.Message{{ID: outbox.NewID(now), ServiceID: "jira-1", State: outbox.New, CreatedAt: now, Type: outbox.Deleted, SpaceKey: "ACME", Key: "R-1"}}
	ctx := context.Background()
	if err := s.outbox.Put(ctx, "acme", acme); err != nil {
		t.Fatal(err)
	}
	if err := s.pub.Publish(ctx, "acme", acme); err != nil {
		t.Fatal(err)
	}
	before := len(s.tracker.posts())
	rep := s.run(t)
	if len(s.tracker.posts()) != before || rep.Skipped != 1 {
		t.Fatalf("DISABLED run %+v", rep)
	}
	m, err := s.outbox.Get(ctx, "acme", "jira-1", acme[0].ID)
	if err != nil || m.State != outbox.New {
		t.Fatalf("DISABLED message %+v, %v", m, err)
	}
	// Its envelope is deleted (a hidden one would block its FIFO group
	// once ACTIVE again); set ACTIVE, it is woken: one run delivers.
	if visible, hidden := s.queueCounts(t, s.env.QueueURL); visible+hidden != 0 {
		t.Fatalf("the DISABLED integration's reference is still queued: %d visible, %d hidden", visible, hidden)
	}
	s.json(t, "PUT", "/rest/reqs/1/integration/jira-1", acmeAdmin, `{"status":"ACTIVE"}`, 200, nil)
	if rep := s.run(t); rep.Delivered != 1 {
		t.Fatalf("run after re-activation %+v", rep)
	}
}

func TestSyncReenqueuesPending(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.createIntegration(t, demoAdmin, "jira-1")
	// Committed two minutes ago, never published (the writer crashed).
	old := s.write(t, 3, time.Now().Add(-2*time.Minute), false)
	// Committed just now: left to its writer.
	young := s.write(t, 1, time.Now(), false)
	rep := s.run(t)
	if rep.Reenqueued != 3 || rep.Delivered != 4 {
		t.Fatalf("report %+v", rep)
	}
	if m := s.message(t, old[0].ID); m.State != outbox.Done {
		t.Fatalf("old message %+v", m)
	}
	// The young one was delivered by the sweep; its writer's reference
	// comes later and is ignored.
	if err := s.pub.Publish(context.Background(), "demo", young); err != nil {
		t.Fatal(err)
	}
	if rep := s.run(t); rep.Posts != 0 || rep.Settled != 1 {
		t.Fatalf("late reference %+v", rep)
	}
}

func TestLinksCallback(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	incoming := s.createIntegration(t, demoAdmin, "jira-1")
	ctx := context.Background()
	if err := s.reqs.Put(ctx, "demo", []*requirement.Requirement{
		{SpaceKey: "DEMO", Key: "REQ-1", Status: requirement.Active, Issues: []requirement.IssueLink{{ServiceID: "jira-2", IssueKey: "OTHER-1", Relationship: "tests"}}},
		{SpaceKey: "DEMO", Key: "REQ-2", Status: requirement.Active},
	}); err != nil {
		t.Fatal(err)
	}
	path := "/rest/reqs/1/integration/jira-1/links"
	code, out := s.do(t, "PUT", path, incoming, `[{"spaceKey":"DEMO","key":"REQ-1","baseline":null,"links":[{"issueKey":"PROJ-1","relationship":"implements"}]},
		{"spaceKey":"DEMO","key":"REQ-404","baseline":null,"links":[]}]`)
	if code != 404 || !strings.Contains(out, "DEMO/REQ-404") {
		t.Fatalf("unknown requirement = %d %s", code, out)
	}
	var res map[string]any
	s.json(t, "PUT", path, incoming, `[{"spaceKey":"DEMO","key":"REQ-1","baseline":null,"links":[{"issueKey":"PROJ-1","relationship":"Implements"},{"issueKey":"PROJ-2","relationship":"tests"}]},
		{"spaceKey":"DEMO","key":"REQ-2","links":[{"issueKey":"PROJ-1","relationship":"tests"}]}]`, 200, &res)
	if res["updated"] != 2.0 {
		t.Fatalf("links = %v", res)
	}
	r1, _ := s.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"})
	// The callback's links are the tracker's holds (the stored link of
	// jira-2, from before holds existed, reads as the tracker's too).
	want := []requirement.IssueLink{{ServiceID: "jira-2", IssueKey: "OTHER-1", Relationship: "tests", Tracker: true},
		{ServiceID: "jira-1", IssueKey: "PROJ-1", Relationship: "implements", Tracker: true}, {ServiceID: "jira-1", IssueKey: "PROJ-2", Relationship: "tests", Tracker: true}}
	if !slices.Equal(r1.Issues, want) {
		t.Fatalf("REQ-1 issues = %+v", r1.Issues)
	}
	index := func(issue string) []string {
		var keys []string
		if err := s.reqs.QueryIssueIndex(ctx, "demo", issue, "", 0, func(id requirement.ID) bool {
			keys = append(keys, id.Key)
			return true
		}); err != nil {
			t.Fatal(err)
		}
		return keys
	}
	if got := index("PROJ-1"); !slices.Equal(got, []string{"REQ-1", "REQ-2"}) {
		t.Fatalf("jira = 'PROJ-1' index = %v", got)
	}
	// Replacing drops PROJ-2 (links of jira-2 stay).
	s.json(t, "PUT", path, demoAdmin, `[{"spaceKey":"DEMO","key":"REQ-1","baseline":null,"links":[{"issueKey":"PROJ-1","relationship":"implements"}]}]`, 200, &res)
	if got := index("PROJ-2"); len(got) != 0 {
		t.Fatalf("PROJ-2 index = %v", got)
	}
	for _, body := range []string{`{}`, `null`, `[{"spaceKey":"DEMO","key":"REQ-1","links":[{"issueKey":"nope"}]}]`, `[{"spaceKey":"DEMO","key":"REQ-1","extra":1}]`} {
		if code, out := s.do(t, "PUT", path, incoming, body); code != 400 {
			t.Fatalf("links %s = %d %s", body, code, out)
		}
	}
	if code, _ := s.do(t, "PUT", "/rest/reqs/1/integration/jira-9/links", demoAdmin, `[]`); code != 404 {
		t.Fatalf("unknown integration = %d", code)
	}
}

// TestInputRefusesControlCharacters: control characters, path-like ids, an
// empty relationship and "links": null are 400s naming the JSON field, and
// a refused links callback leaves the stored links as they were (issue 15).
func TestInputRefusesControlCharacters(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	for _, tc := range []struct{ body, field string }{
		{`{"serviceId":"..","rpcUrl":"https://j.example.com"}`, "serviceId"},
		{`{"serviceId":".","rpcUrl":"https://j.example.com"}`, "serviceId"},
		{`{"applinkId":"..","rpcUrl":"https://j.example.com"}`, "serviceId"},
		{`{"serviceId":"a\u0000b","rpcUrl":"https://j.example.com"}`, "serviceId"},
		{`{"rpcUrl":"https://j.example.com","token":"secret\r\nX-Injected: 1"}`, "token"},
		{`{"rpcUrl":"https://j.example.com","token":"secret\n"}`, "token"},
		{`{"rpcUrl":"https://j.example.com","label":"Jira\u001b[2J"}`, "label"},
		{`{"rpcUrl":"https://j.example.com:99999"}`, "rpcUrl"},
	} {
		code, out := s.do(t, "POST", "/rest/reqs/1/integration", demoAdmin, tc.body)
		if code != 400 || !strings.Contains(out, `"errors":{"`+tc.field+`":`) {
			t.Errorf("POST %s = %d %s, want 400 naming %q", tc.body, code, out, tc.field)
		}
	}
	var list []map[string]any
	s.json(t, "GET", "/rest/reqs/1/integration", demoAdmin, "", 200, &list)
	if len(list) != 0 {
		t.Fatalf("refused integrations were stored: %v", list)
	}

	incoming := s.createIntegration(t, demoAdmin, "jira-1")
	ctx := context.Background()
	if err := s.reqs.Put(ctx, "demo", []*requirement.Requirement{{SpaceKey: "DEMO", Key: "REQ-1", Status: requirement.Active}}); err != nil {
		t.Fatal(err)
	}
	path := "/rest/reqs/1/integration/jira-1/links"
	var res map[string]any
	s.json(t, "PUT", path, incoming, `[{"spaceKey":"DEMO","key":"REQ-1","links":[{"issueKey":"PROJ-1","relationship":"tests"}]}]`, 200, &res)
	before, _ := s.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"})
	if len(before.Issues) != 1 {
		t.Fatalf("stored links %+v", before.Issues)
	}
	for _, tc := range []struct{ body, field string }{
		{`[{"spaceKey":"DEMO","key":"REQ-1","links":null}]`, "links"},
		{`[{"spaceKey":"DEMO","key":"REQ-1"}]`, "links"},
		{`[{"spaceKey":"DEMO","key":"REQ-1","links":[{"issueKey":"PROJ-2","relationship":""}]}]`, "relationship"},
		{`[{"spaceKey":"DEMO","key":"REQ-1","links":[{"issueKey":"PROJ-2"}]}]`, "relationship"},
		{`[{"spaceKey":"DEMO","key":"REQ-1","links":[{"issueKey":"PROJ-2","relationship":" "}]}]`, "relationship"},
		{`[{"spaceKey":"DEMO","key":"REQ-1","links":[{"issueKey":"PROJ-2","relationship":"te\u0000sts"}]}]`, "relationship"},
	} {
		code, out := s.do(t, "PUT", path, incoming, tc.body)
		if code != 400 || !strings.Contains(out, `"errors":{"`+tc.field+`":`) {
			t.Errorf("PUT links %s = %d %s, want 400 naming %q", tc.body, code, out, tc.field)
		}
	}
	after, _ := s.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"})
	if !slices.Equal(after.Issues, before.Issues) {
		t.Fatalf("a refused callback changed the links: %+v, was %+v", after.Issues, before.Issues)
	}
	// An explicit empty array still means "no links".
	s.json(t, "PUT", path, incoming, `[{"spaceKey":"DEMO","key":"REQ-1","links":[]}]`, 200, &res)
	if r, _ := s.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"}); len(r.Issues) != 0 {
		t.Fatalf("links [] kept %+v", r.Issues)
	}
}

// TestSyncTenThousandMessages is the sync's target (docs/benchmarks.md): 10,000 NEW messages
// delivered in one run with at most ⌈N/100⌉ POSTs per tracker. It asserts
// the counts, not the time (make bench measures it): the run's budgets are
// set far beyond it, so that a loaded machine does not end the run first.
func TestSyncTenThousandMessages(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.createIntegration(t, demoAdmin, "jira-1")
	start := time.Now()
	msgs := s.write(t, 10000, time.Now(), true)
	written := time.Since(start)
	start = time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Minute)
	defer cancel()
	rep, err := integration.NewSync(s.deps, integration.SyncOptions{ReceiveWait: time.Nanosecond, TrackerBudget: 15 * time.Minute}).Run(ctx)
	if err != nil {
		t.Fatalf("sync run: %v", err)
	}
	if rep.Delivered != 10000 || rep.Posts != 100 || len(s.tracker.posts()) != 100 {
		t.Fatalf("report %+v", rep)
	}
	if m := s.message(t, msgs[9999].ID); m.State != outbox.Done {
		t.Fatalf("last message %s", m.State)
	}
	t.Logf("10000 messages written and published in %v, delivered in %d POSTs in %v (%d envelopes)",
		written.Round(time.Millisecond), rep.Posts, time.Since(start).Round(time.Millisecond), rep.Received)
}

// TestReconcile checks POST .../reconcile and the sync run's own
// reconcile: links a page held before its integration existed reach the
// tracker as LINKS once the integration is at version 5, without the page
// being saved again.
func TestReconcile(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	body := `<table><tbody><tr><th>Key</th><th>Description</th><th>Implements</th></tr><tr>` +
		`<td><ac:structured-macro ac:name="requirement"><ac:parameter ac:name="key">REQ-1</ac:parameter></ac:structured-macro></td>` +
		`<td><p>One</p></td><td><ac:structured-macro ac:name="jira"><ac:parameter ac:name="key">PROJ-1</ac:parameter>` +
		`<ac:parameter ac:name="serverId">jira-1</ac:parameter></ac:structured-macro></td></tr></tbody></table>`
	res, err := s.wiki.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "100", SpaceKey: "DEMO", Title: "Specs", Body: body})
	if err != nil || len(res.Warnings) != 1 {
		t.Fatalf("save = %+v, %v", res, err)
	}
	s.createIntegration(t, demoAdmin, "jira-1")
	path := "/rest/reqs/1/integration/jira-1/reconcile"
	for _, c := range []struct {
		token, path string
		want        int
	}{{demoUser, path, 403}, {acmeAdmin, path, 404}, {demoAdmin, "/rest/reqs/1/integration/nope/reconcile", 404}, {"", path, 401}} {
		if code, out := s.do(t, "POST", c.path, c.token, ""); code != c.want {
			t.Fatalf("POST %s as %q = %d %s, want %d", c.path, c.token, code, out, c.want)
		}
	}
	// Version 4: the LINK of each link.
	var got map[string]any
	s.json(t, "POST", path, demoAdmin, "", 200, &got)
	if got["queued"] != 1.0 {
		t.Fatalf("reconcile at version 4 = %v", got)
	}
	var q []map[string]any
	s.json(t, "GET", "/rest/reqs/1/integration/jira-1/queue/outbound", demoAdmin, "", 200, &q)
	if len(q) != 1 || q[0]["type"] != "LINK" || q[0]["objectKey"] != "PROJ-1" {
		t.Fatalf("queue %v", q)
	}
	// Raised to 5, flagged: the sync run reconciles it by itself, and the
	// tracker gets the LINKS with the set and its version.
	s.json(t, "PUT", "/rest/reqs/1/integration/jira-1/version", demoAdmin, "5", 200, &got)
	rep := s.run(t)
	if rep.Reconciled < 1 {
		t.Fatalf("run %+v reconciled nothing", rep)
	}
	var links []map[string]any
	for _, post := range s.tracker.posts() {
		for _, m := range post {
			if m["type"] == "LINKS" {
				links = append(links, m)
			}
		}
	}
	if len(links) == 0 || fmt.Sprint(links[len(links)-1]["links"]) != "[map[objectKey:PROJ-1 relationship:implements]]" ||
		links[len(links)-1]["version"] != 1.0 {
		t.Fatalf("LINKS posted: %v", links)
	}
	// The flag is cleared: the next run reconciles nothing.
	if rep := s.run(t); rep.Reconciled != 0 {
		t.Fatalf("second run %+v", rep)
	}
}

// TestLinksCallbackHolds checks what the callback's sets mean: a
// version-4 tracker's whole set (no "holds") leaves the links the page
// holds to the page; a set said to be the tracker's holds ("holds":
// "TRACKER", what the tracker-side outbox sends) is recorded as such at
// any version; any other "holds" is a 400 that writes nothing.
func TestLinksCallbackHolds(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	incoming := s.createIntegration(t, demoAdmin, "jira-1") // version 4
	body := `<table><tbody><tr><th>Key</th><th>Description</th><th>Implements</th></tr><tr>` +
		`<td><ac:structured-macro ac:name="requirement"><ac:parameter ac:name="key">REQ-1</ac:parameter></ac:structured-macro></td>` +
		`<td><p>One</p></td><td><ac:structured-macro ac:name="jira"><ac:parameter ac:name="key">PROJ-1</ac:parameter>` +
		`<ac:parameter ac:name="serverId">jira-1</ac:parameter></ac:structured-macro></td></tr></tbody></table>`
	if _, err := s.wiki.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "100", SpaceKey: "DEMO", Title: "Specs", Body: body}); err != nil {
		t.Fatal(err)
	}
	path := "/rest/reqs/1/integration/jira-1/links"
	issues := func() string {
		r, err := s.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range r.Issues {
			out = append(out, fmt.Sprintf("%s:%v%v", l.IssueKey, l.Page, l.Tracker))
		}
		return strings.Join(out, " ")
	}
	s.json(t, "PUT", path, incoming, `[{"spaceKey":"DEMO","key":"REQ-1","baseline":null,"links":[{"issueKey":"PROJ-1","relationship":"implements"},{"issueKey":"PROJ-2","relationship":"tests"}]}]`, 200, nil)
	if got := issues(); got != "PROJ-1:truefalse PROJ-2:falsetrue" {
		t.Fatalf("after a version-4 whole set: %s", got)
	}
	s.json(t, "PUT", path, incoming, `[{"spaceKey":"DEMO","key":"REQ-1","baseline":null,"holds":"TRACKER","links":[{"issueKey":"PROJ-1","relationship":"implements"}]}]`, 200, nil)
	if got := issues(); got != "PROJ-1:truetrue" {
		t.Fatalf("after the tracker's holds: %s", got)
	}
	if code, out := s.do(t, "PUT", path, incoming, `[{"spaceKey":"DEMO","key":"REQ-1","holds":"PAGE","links":[]}]`); code != 400 || !strings.Contains(out, "holds") {
		t.Fatalf("holds PAGE = %d %s", code, out)
	}
	if got := issues(); got != "PROJ-1:truetrue" {
		t.Fatalf("a refused callback wrote: %s", got)
	}
}

// TestStrictJSON checks the input rules of issue 15 on every body of the
// group (integration create and update, version, links callback, settings):
// a duplicate name (also one equal but for case), a field name in another
// case and trailing data are each a 400 naming the member, and nothing
// changes.
func TestStrictJSON(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	incoming := s.createIntegration(t, demoAdmin, "jira-1")
	ctx := context.Background()
	if err := s.reqs.Put(ctx, "demo", []*requirement.Requirement{{SpaceKey: "DEMO", Key: "REQ-1", Status: requirement.Active}}); err != nil {
		t.Fatal(err)
	}
	before := func() string {
		_, d := s.do(t, "GET", "/rest/reqs/1/integration/jira-1", demoAdmin, "")
		_, st := s.do(t, "GET", "/rest/reqs/1/admin/settings", demoAdmin, "")
		_, v := s.do(t, "GET", "/rest/reqs/1/integration/jira-1/version", demoAdmin, "")
		r, err := s.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"})
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprint(d, st, v, r.Issues)
	}
	state := before()
	type routeCase struct {
		method, path, token string
		httpapitest.StrictJSONCase
	}
	var cases []routeCase
	add := func(method, path, token, valid, name, value string) {
		for _, c := range httpapitest.StrictJSONCases(valid, name, value) {
			cases = append(cases, routeCase{method, path, token, c})
		}
	}
	add("POST", "/rest/reqs/1/integration", demoAdmin, `{"serviceId":"jira-2","rpcUrl":"https://j.example.com"}`, "rpcUrl", `"https://k.example.com"`)
	add("PUT", "/rest/reqs/1/integration/jira-1", demoAdmin, `{"label":"Jira prod","status":"DISABLED"}`, "status", `"ACTIVE"`)
	add("PUT", "/rest/reqs/1/integration/jira-1/links", incoming,
		`[{"spaceKey":"DEMO","key":"REQ-1","baseline":null,"links":[{"issueKey":"PROJ-1","relationship":"implements"}]}]`, "key", `"REQ-1"`)
	add("PUT", "/rest/reqs/1/integration/jira-1/links", incoming,
		`[{"spaceKey":"DEMO","key":"REQ-1","links":[{"issueKey":"PROJ-1","relationship":"implements"}]}]`, "relationship", `"tests"`)
	add("PUT", "/rest/reqs/1/admin/settings", demoAdmin, `{"isolateSpaces":true}`, "isolateSpaces", "false")
	cases = append(cases,
		routeCase{"PUT", "/rest/reqs/1/integration/jira-1/version", demoAdmin,
			httpapitest.StrictJSONCase{Name: "version: trailing value", Body: "5 4", Message: "unexpected data after the JSON value at byte 2"}},
		routeCase{"PUT", "/rest/reqs/1/integration/jira-1", demoAdmin,
			httpapitest.StrictJSONCase{Name: "RPCURL", Body: `{"RPCURL":"https://k.example.com"}`, Message: `unknown field "RPCURL": the name is "rpcUrl"`, Field: "RPCURL"}},
	)
	for _, c := range cases {
		rec := httpapitest.Do(s.router, c.method, c.path, c.token, "application/json", c.Body)
		httpapitest.CheckStrictJSON(t, c.StrictJSONCase, rec.Code, rec.Body.Bytes())
	}
	if got := before(); got != state {
		t.Fatalf("state changed by refused bodies:\n%s\nwas\n%s", got, state)
	}
}

// TestDeleteIntegration: DELETE /rest/reqs/1/integration/{serviceId} (wiki
// admin) removes the integration, its whole queue (NEW and DONE messages,
// those never enqueued included) and its incoming credential; copies of
// its messages still in SQS are settled by the sync run without a POST;
// the requirements keep their page links, which page saves list as
// warnings until an integration of that id exists again, and which that
// new integration gets through its reconcile. Another tenant's integration
// of the same id is untouched.
func TestDeleteIntegration(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	body := `<table><tbody><tr><th>Key</th><th>Description</th><th>Implements</th></tr><tr>` +
		`<td><ac:structured-macro ac:name="requirement"><ac:parameter ac:name="key">REQ-1</ac:parameter></ac:structured-macro></td>` +
		`<td><p>One</p></td><td><ac:structured-macro ac:name="jira"><ac:parameter ac:name="key">PROJ-1</ac:parameter>` +
		`<ac:parameter ac:name="serverId">jira-1</ac:parameter></ac:structured-macro></td></tr></tbody></table>`
	incoming := s.createIntegration(t, demoAdmin, "jira-1")
	res, err := s.wiki.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "100", SpaceKey: "DEMO", Title: "Specs", Body: body})
	if err != nil || len(res.Warnings) != 0 {
		t.Fatalf("save = %+v, %v", res, err)
	}
	published := s.write(t, 3, time.Now(), true)                    // in SQS
	pending := s.write(t, 2, time.Now().Add(-2*time.Minute), false) // never enqueued
	if err := s.outbox.MarkDone(ctx, []integration.Outcome{{Ref: integration.RefOf("demo", published[0]), LastResponse: "OK"}}); err != nil {
		t.Fatal(err)
	}
	// acme's integration of the same id, with a message of its own.
	s.createIntegration(t, acmeAdmin, "jira-1")
	acmeMsg := &outbox.Message{ID: outbox.NewID(time.Now()), ServiceID: "jira-1", State: outbox.New, CreatedAt: time.Now(),
		Type: outbox.Updated, SpaceKey: "ACME", Key: "A-1", NewHTMLExcerpt: "<p>a</p>", NewURL: "/requirements/ACME/A-1"}
	if err := s.outbox.Put(ctx, "acme", []*outbox.Message{acmeMsg}); err != nil {
		t.Fatal(err)
	}

	before, err := s.outbox.List(ctx, "demo", "jira-1", "", 100, true)
	if err != nil || len(before) != 6 { // the page's LINK, 3 published, 2 never enqueued
		t.Fatalf("demo's queue: %d, %v", len(before), err)
	}
	path := "/rest/reqs/1/integration/jira-1"
	for _, c := range []struct {
		token, path string
		want        int
	}{
		{"", path, 401},
		{"not-a-token", path, 401},
		{demoUser, path, 403},
		{incoming, path, 403}, // its own credential may not delete it
		{demoAdmin, "/rest/reqs/1/integration/nope", 404},
		{demoAdmin, "/rest/reqs/1/integration/a%20b", 404},
	} {
		if code, out := s.do(t, "DELETE", c.path, c.token, ""); code != c.want {
			t.Fatalf("DELETE %s as %q = %d %s, want %d", c.path, c.token, code, out, c.want)
		}
	}
	// acme's admin deletes acme's jira-1, never demo's.
	if code, out := s.do(t, "DELETE", path, acmeAdmin, ""); code != 204 || out != "" {
		t.Fatalf("acme DELETE = %d %q", code, out)
	}
	s.json(t, "GET", path, demoAdmin, "", 200, nil)
	if all, err := s.outbox.List(ctx, "demo", "jira-1", "", 100, true); err != nil || len(all) != len(before) {
		t.Fatalf("demo's queue after acme's delete: %d, %v", len(all), err)
	}
	if m, err := s.outbox.Get(ctx, "acme", "jira-1", acmeMsg.ID); !errors.Is(err, apperr.ErrNotFound) {
		t.Fatalf("acme's message after acme's delete: %+v, %v", m, err)
	}

	// Demo deletes its jira-1.
	if code, out := s.do(t, "DELETE", path, demoAdmin, ""); code != 204 || out != "" {
		t.Fatalf("DELETE = %d %q", code, out)
	}
	for _, p := range []string{path, path + "/queue/outbound", path + "/version"} {
		if code, out := s.do(t, "GET", p, demoAdmin, ""); code != 404 {
			t.Fatalf("GET %s after delete = %d %s", p, code, out)
		}
	}
	var list []map[string]any
	s.json(t, "GET", "/rest/reqs/1/integration", demoAdmin, "", 200, &list)
	if len(list) != 0 {
		t.Fatalf("list after delete = %v", list)
	}
	if code, out := s.do(t, "DELETE", path, demoAdmin, ""); code != 404 {
		t.Fatalf("second DELETE = %d %s", code, out)
	}
	// The incoming credential is gone: refused everywhere, as unknown.
	if code, out := s.do(t, "GET", path+"/version", incoming, ""); code != 401 {
		t.Fatalf("incoming token after delete = %d %s", code, out)
	}
	// The queue went with it: NEW, DONE and never-enqueued messages.
	if all, err := s.outbox.List(ctx, "demo", "jira-1", "", 100, true); err != nil || len(all) != 0 {
		t.Fatalf("queue after delete: %d messages, %v", len(all), err)
	}
	var left []integration.Pending
	if err := s.outbox.Pending(ctx, time.Now().Add(time.Minute), func(p []integration.Pending) (bool, error) {
		left = append(left, p...)
		return true, nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, p := range left {
		if p.Tenant == "demo" && (p.Message.ID == pending[0].ID || p.Message.ID == pending[1].ID) {
			t.Fatalf("a deleted message is still pending: %+v", p.Message)
		}
	}
	// Its envelopes in SQS are settled without a POST.
	if rep := s.run(t); rep.Posts != 0 || len(s.tracker.posts()) != 0 || rep.Settled == 0 {
		t.Fatalf("sync after delete: %+v, posts %v", rep, s.tracker.posts())
	}

	// The page's link stays on the requirement; page saves warn about it.
	r, err := s.reqs.Get(ctx, "demo", requirement.ID{SpaceKey: "DEMO", Key: "REQ-1"})
	if err != nil || len(r.Issues) != 1 || r.Issues[0].IssueKey != "PROJ-1" || r.Issues[0].ServiceID != "jira-1" || !r.Issues[0].Page {
		t.Fatalf("requirement after delete: %+v, %v", r, err)
	}
	res, err = s.wiki.SavePage(ctx, "demo", "alice", wiki.PageInput{ID: "100", SpaceKey: "DEMO", Title: "Specs", Body: body})
	if err != nil || len(res.Warnings) != 1 || res.Warnings[0].Message != "no integration 'jira-1' for issue PROJ-1" {
		t.Fatalf("save after delete = %+v, %v", res, err)
	}

	// Created again: an empty queue, and its reconcile sends the link.
	var d map[string]any
	s.json(t, "POST", "/rest/reqs/1/integration", demoAdmin, fmt.Sprintf(`{"applinkId":"jira-1","rpcUrl":%q}`, s.trackerURL), 200, &d)
	if d["countMessagesInQueue"] != 0.0 || d["incomingToken"] == incoming {
		t.Fatalf("created again: %v", d)
	}
	if rep := s.run(t); rep.Reconciled != 1 || rep.Delivered != 1 {
		t.Fatalf("run after re-creation: %+v", rep)
	}
	posts := s.tracker.posts()
	if len(posts) != 1 || len(posts[0]) != 1 || posts[0][0]["type"] != "LINK" || posts[0][0]["objectKey"] != "PROJ-1" {
		t.Fatalf("posted after re-creation: %v", posts)
	}
}

// TestCreatePurgesLeftovers: messages a deleted integration left (written
// while it was being deleted) are removed when an integration of that id
// is created, and never delivered to it.
func TestCreatePurgesLeftovers(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	ctx := context.Background()
	left := s.write(t, 2, time.Now().Add(-time.Minute), true) // no integration jira-1 yet
	s.createIntegration(t, demoAdmin, "jira-1")
	if all, err := s.outbox.List(ctx, "demo", "jira-1", "", 100, true); err != nil || len(all) != 0 {
		t.Fatalf("queue of the new integration: %d messages (%v), want none of %s, %s", len(all), err, left[0].ID, left[1].ID)
	}
	s.write(t, 1, time.Now(), true)
	if rep := s.run(t); rep.Delivered != 1 {
		t.Fatalf("run: %+v", rep)
	}
	if posts := s.tracker.posts(); len(posts) != 1 || len(posts[0]) != 1 {
		t.Fatalf("posted %v, want the new message alone", posts)
	}
}
