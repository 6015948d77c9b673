package localstack_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/reqtrace/reqtrace/infra/localstack"
	"github.com/reqtrace/reqtrace/infra/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// StartStack runs the whole local stack on free ports against this test
// binary's DynamoDB Local and moto, with tables under a unique prefix.
func startStack(t *testing.T) *localstack.Stack {
	t.Helper()
	env := testenv.AWS(t) // shared stand-ins; the stack makes its own tables
	st, err := localstack.Start(context.Background(), localstack.Options{
		BuildDir: testenv.Bootstraps(t), WikiAddr: "127.0.0.1:0", TrackerAddr: "127.0.0.1:0",
		SyncInterval: -1, DynamoDBEndpoint: env.DynamoDBEndpoint, SQSEndpoint: env.SQSEndpoint,
		Prefix: testenv.Prefix("stack"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		FunctionLog: io.Discard,
	})
	if err != nil {
		t.Fatalf("start stack: %v", err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("close stack: %v", err)
		}
	})
	return st
}

type answer struct {
	status int
	header http.Header
	body   string
}

func call(t *testing.T, method, url, token, body string) answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
}

func TestGatewayRunsRealBootstraps(t *testing.T) {
	st := startStack(t)

	t.Run("anonymous tracker api answers 200", func(t *testing.T) {
		a := call(t, "GET", st.TrackerURL+"/rest/reqs/1/api", "", "")
		if a.status != 200 {
			t.Fatalf("status %d: %s", a.status, a.body)
		}
		var info struct {
			Versions struct{ Min, Max int } `json:"versions"`
		}
		if err := json.Unmarshal([]byte(a.body), &info); err != nil || info.Versions.Max != 5 {
			t.Fatalf("body %s (%v)", a.body, err)
		}
	})
	t.Run("wiki route without a token answers 401 JSON", func(t *testing.T) {
		a := call(t, "GET", st.WikiURL+"/rest/reqs/1/requirement2/DEMO/REQ-1", "", "")
		assertError(t, a, 401)
	})
	t.Run("wiki route with a dev token reaches its handler", func(t *testing.T) {
		a := call(t, "GET", st.WikiURL+"/rest/reqs/1/requirement2/DEMO/REQ-1", "demo-wiki-user", "")
		assertError(t, a, 404)
		if !strings.Contains(a.body, "REQ-1") {
			t.Fatalf("404 does not come from the handler: %s", a.body)
		}
	})
	t.Run("tracker token on the wiki answers 401", func(t *testing.T) {
		assertError(t, call(t, "GET", st.WikiURL+"/rest/reqs/1/requirement2/DEMO/REQ-1", "demo-tracker-user", ""), 401)
	})
	t.Run("openapi documents are anonymous", func(t *testing.T) {
		for _, base := range []string{st.WikiURL, st.TrackerURL} {
			a := call(t, "GET", base+"/rest/reqs/1/openapi", "", "")
			if a.status != 200 || !strings.HasPrefix(a.body, "openapi: 3") {
				t.Fatalf("%s: %d %.80s", base, a.status, a.body)
			}
		}
	})
	t.Run("unknown routes answer JSON errors through $default", func(t *testing.T) {
		assertError(t, call(t, "GET", st.WikiURL+"/nowhere", "", ""), 404)
		assertError(t, call(t, "POST", st.TrackerURL+"/rest/reqs/1/sync", "", ""), 404)
		a := call(t, "PATCH", st.WikiURL+"/rest/reqs/1/requirement2/DEMO/REQ-1", "", "")
		assertError(t, a, 405)
		if a.header.Get("Allow") == "" {
			t.Fatal("405 without Allow")
		}
	})
}

func assertError(t *testing.T, a answer, status int) {
	t.Helper()
	var body struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	}
	if a.status != status {
		t.Fatalf("status %d, want %d: %s", a.status, status, a.body)
	}
	if err := json.Unmarshal([]byte(a.body), &body); err != nil || body.Status != status || body.Message == "" {
		t.Fatalf("not a JSON error body: %s", a.body)
	}
}

// A failed start stops what it started and reports the error (it used to
// panic on the cleanup).
func TestFailedStartCleansUp(t *testing.T) {
	env := testenv.AWS(t)
	_, err := localstack.Start(context.Background(), localstack.Options{
		BuildDir: t.TempDir(), WikiAddr: "127.0.0.1:0", TrackerAddr: "127.0.0.1:0", SyncInterval: -1,
		DynamoDBEndpoint: env.DynamoDBEndpoint, SQSEndpoint: env.SQSEndpoint, Prefix: testenv.Prefix("fail"),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), FunctionLog: io.Discard,
	})
	if err == nil || !strings.Contains(err.Error(), "no bootstrap") {
		t.Fatalf("start with no bootstraps: %v", err)
	}
}
