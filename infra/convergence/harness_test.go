package convergence_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reqtrace/reqtrace/infra/localstack"
	"github.com/reqtrace/reqtrace/infra/scheduler"
	"github.com/reqtrace/reqtrace/infra/testenv"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
)

// httpTimeout is the HTTP_TIMEOUT every function of the stacks started here
// gets (the functions inherit the test process's environment): a hanging
// tracker then costs seconds, not the default 10 s. It stays long enough
// for a tracker to apply a batch on a busy machine (make test runs other
// packages' tests against the same DynamoDB Local).
const httpTimeout = 5 * time.Second

// authCacheTTL is the AUTH_CACHE_TTL of the functions: how long a warm
// function may keep answering for a token whose principal changed (a
// DISABLED integration's incomingToken). The default is 30 s; the tests
// shorten it so they can wait for it.
const authCacheTTL = 2 * time.Second

func TestMain(m *testing.M) {
	if os.Getenv("HTTP_TIMEOUT") == "" {
		os.Setenv("HTTP_TIMEOUT", httpTimeout.String())
	}
	if os.Getenv("AUTH_CACHE_TTL") == "" {
		os.Setenv("AUTH_CACHE_TTL", authCacheTTL.String())
	}
	testenv.Main(m)
}

// logBuffer collects the functions' output (JSON log lines) so tests can
// look for what a function logged, e.g. an API error e-mail.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// env is one running stack and what the tests need of it.
type env struct {
	st    *localstack.Stack
	logs  *logBuffer
	auth  *authtable.AuthStore
	mu    sync.Mutex
	count int
}

// startStack runs the whole local stack (every function of template.yaml,
// both gateways, no schedule: the tests invoke Sync and TrackerOutbox
// themselves) on free ports against this test binary's DynamoDB Local and
// moto, with tables under a unique prefix.
func startStack(t *testing.T) *env {
	t.Helper()
	standIns := testenv.AWS(t) // the shared stand-ins; the stack makes its own tables
	logs := &logBuffer{}
	st, err := localstack.Start(context.Background(), localstack.Options{
		BuildDir: testenv.Bootstraps(t), WikiAddr: "127.0.0.1:0", TrackerAddr: "127.0.0.1:0",
		SyncInterval: -1, DynamoDBEndpoint: standIns.DynamoDBEndpoint, SQSEndpoint: standIns.SQSEndpoint,
		Prefix: testenv.Prefix("conv"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		FunctionLog: logs,
	})
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close stack: %v", err)
		}
	})
	return &env{st: st, logs: logs, auth: authtable.NewAuthStore(dynamodb.NewFromConfig(st.Config), st.Resources.Tables["AuthTable"])}
}

// tenant is one tenant of the stack with a person token per role.
type tenant struct {
	name                                         string
	wikiAdmin, wikiUser, trackerAdmin, trackUser string
}

// newTenant creates a fresh tenant (name prefix + a counter) with its four
// person tokens, as the admin command does.
func (e *env) newTenant(t *testing.T, prefix string) *tenant {
	t.Helper()
	e.mu.Lock()
	e.count++
	name := fmt.Sprintf("%s-%d", prefix, e.count)
	e.mu.Unlock()
	ctx := context.Background()
	if err := e.auth.PutTenant(ctx, name, name); err != nil {
		t.Fatalf("create tenant %s: %v", name, err)
	}
	tn := &tenant{name: name}
	for _, tok := range []struct {
		dst   *string
		app   auth.App
		admin bool
		role  string
	}{
		{&tn.wikiAdmin, auth.Wiki, true, "wiki-admin"}, {&tn.wikiUser, auth.Wiki, false, "wiki-user"},
		{&tn.trackerAdmin, auth.Tracker, true, "tracker-admin"}, {&tn.trackUser, auth.Tracker, false, "tracker-user"},
	} {
		*tok.dst = name + "-" + tok.role + "-" + auth.NewToken()[:12]
		p := auth.Principal{Tenant: name, App: tok.app, Kind: auth.User, User: name + "-" + tok.role, Admin: tok.admin}
		if err := e.auth.PutToken(ctx, auth.HashToken(*tok.dst), p); err != nil {
			t.Fatalf("create token: %v", err)
		}
	}
	return tn
}

// invoke runs function fn once with a scheduled event, as EventBridge does.
func (e *env) invoke(ctx context.Context, fn string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	_, err := e.st.Invoke(ctx, fn, scheduler.ScheduledEvent(fn+"-Schedule", time.Now()))
	return err
}

func (e *env) has(fn string) bool { _, ok := e.st.Runners[fn]; return ok }

// answer is one HTTP answer.
type answer struct {
	status int
	header http.Header
	body   string
}

func (a answer) String() string {
	body := a.body
	if len(body) > 600 {
		body = body[:600] + "..."
	}
	return fmt.Sprintf("%d %s", a.status, body)
}

var client = &http.Client{Timeout: 2 * time.Minute}

// do sends one request; body may be a string (sent as is) or any value
// (sent as JSON), nil for none.
func do(method, url, token string, body any) (answer, error) {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			return answer{}, err
		}
		rd = bytes.NewReader(js)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return answer{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, fmt.Errorf("%s %s: %w", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}, nil
}

// call is do for tests: a transport error fails t.
func call(t testing.TB, method, url, token string, body any) answer {
	t.Helper()
	a, err := do(method, url, token, body)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func want(t testing.TB, a answer, status int, what string) answer {
	t.Helper()
	if a.status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, a.status, status, a)
	}
	return a
}

func decode[T any](t testing.TB, a answer) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(a.body), &v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, a, err)
	}
	return v
}
