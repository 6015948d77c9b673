package localstack_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
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
		assertError(t, call(t, "GET", st.WikiURL+"/nowhere", "demo-wiki-user", ""), 404)
		assertError(t, call(t, "POST", st.TrackerURL+"/rest/reqs/1/sync", "demo-tracker-user", ""), 404)
		a := call(t, "PATCH", st.WikiURL+"/rest/reqs/1/requirement2/DEMO/REQ-1", "demo-wiki-user", "")
		assertError(t, a, 405)
		if a.header.Get("Allow") == "" {
			t.Fatal("405 without Allow")
		}
	})
	t.Run("without a valid token, 401 comes before 404, 405 and 410", func(t *testing.T) {
		for _, token := range []string{"", "bogus"} {
			assertError(t, call(t, "GET", st.WikiURL+"/nowhere", token, ""), 401)
			assertError(t, call(t, "POST", st.TrackerURL+"/rest/reqs/1/sync", token, ""), 401)
			assertError(t, call(t, "PATCH", st.WikiURL+"/rest/reqs/1/requirement2/DEMO/REQ-1", token, ""), 401)
			assertError(t, call(t, "PUT", st.WikiURL+"/rest/reqs/1/requirement2/DEMO/REQ-1", token, ""), 401)
			assertError(t, call(t, "GET", st.WikiURL+"/rest/reqs/1/requirement3", token, ""), 401)
			assertError(t, call(t, "POST", st.WikiURL+"/rest/reqs/1/sync", token, ""), 401)
		}
	})
	// Sizes and content types are answered before the token is looked at:
	// by the function (413/415 JSON bodies) up to what an invocation can
	// carry, by the gateway beyond (as API Gateway does).
	t.Run("large and mistyped bodies answer 413 and 415 before 401", func(t *testing.T) {
		post := func(url, ctype string, body []byte) answer {
			req, _ := http.NewRequest("PUT", url, bytes.NewReader(body))
			req.Header.Set("Content-Type", ctype)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return answer{status: resp.StatusCode, header: resp.Header, body: string(b)}
		}
		page := st.WikiURL + "/rest/reqs/1/content/1"
		json2MiB := append(append([]byte(`{"title":"`), bytes.Repeat([]byte("x"), 2<<20)...), '"', '}')
		assertError(t, post(page, "application/json", json2MiB), 413)
		assertError(t, post(st.TrackerURL+"/rest/reqs/1/issuelinks/PROJ-1", "application/json", json2MiB), 413)
		assertError(t, post(page, "application/octet-stream", bytes.Repeat([]byte{0xff}, 64<<10)), 415)
		assertError(t, post(page, "text/html", []byte("<p>hi</p>")), 415)
		for _, c := range []struct {
			ctype string
			size  int
		}{{"application/json", 7 << 20}, {"application/octet-stream", 46 << 20 / 10}, {"application/json", 9 << 20}} {
			a := post(page, c.ctype, bytes.Repeat([]byte("a"), c.size))
			if a.status != 413 {
				t.Errorf("%s of %d bytes: %d %.200s, want 413", c.ctype, c.size, a.status, a.body)
			}
		}
	})
}

// TestSampleEvents invokes every API Gateway sample event of events/ (the
// ones `make invoke` documents) on its function: each reaches its handler.
func TestSampleEvents(t *testing.T) {
	st := startStack(t)
	for _, c := range []struct {
		file, fn string
		want     int
	}{
		{"wiki-content-put.json", "WikiContent", 200}, // first: the reads below find its requirements
		{"wiki-requirements-get.json", "WikiRequirements", 200},
		{"wiki-requirements-search.json", "WikiRequirements", 200},
		{"tracker-api-info.json", "TrackerApiFunction", 200},
		{"tracker-issuelinks-get.json", "TrackerLinks", 200},
	} {
		payload, err := os.ReadFile(filepath.Join("..", "..", "events", c.file))
		if err != nil {
			t.Fatal(err)
		}
		out, err := st.Invoke(t.Context(), c.fn, payload)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		var resp struct {
			StatusCode int    `json:"statusCode"`
			Body       string `json:"body"`
		}
		if err := json.Unmarshal(out, &resp); err != nil || resp.StatusCode != c.want {
			t.Errorf("%s on %s: %d %.300s (%v)", c.file, c.fn, resp.StatusCode, resp.Body, err)
		}
	}
	if _, err := st.Invoke(t.Context(), "NoSuchFunction", []byte("{}")); err == nil || !strings.Contains(err.Error(), "WikiContent") {
		t.Errorf("a wrong function name: %v, want the list of names", err)
	}
}

// TestDataDirKeepsData: a stack started on a data directory finds, after a
// restart, what the previous run stored.
func TestDataDirKeepsData(t *testing.T) {
	env := testenv.AWS(t)
	dir, prefix := t.TempDir(), testenv.Prefix("kept")
	start := func() *localstack.Stack {
		st, err := localstack.Start(context.Background(), localstack.Options{
			BuildDir: testenv.Bootstraps(t), WikiAddr: "127.0.0.1:0", TrackerAddr: "127.0.0.1:0",
			SyncInterval: -1, DataDir: dir, SQSEndpoint: env.SQSEndpoint, Prefix: prefix,
			Functions: []string{"WikiContent", "WikiRequirements"},
			Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)), FunctionLog: io.Discard,
		})
		if err != nil {
			t.Fatalf("start stack: %v", err)
		}
		return st
	}
	st := start()
	body := `{"spaceKey":"DEMO","title":"Kept","body":` + jsonString(pageBody("kept across restarts")) + `}`
	req, _ := http.NewRequest("PUT", st.WikiURL+"/rest/reqs/1/content/7", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer demo-wiki-user")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("save: %v %v", resp, err)
	}
	resp.Body.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st = start()
	defer st.Close()
	a := call(t, "GET", st.WikiURL+"/rest/reqs/1/requirement2/DEMO/REQ-001", "demo-wiki-user", "")
	if a.status != 200 || !strings.Contains(a.body, "kept across restarts") {
		t.Fatalf("after a restart: %d %s", a.status, a.body)
	}
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
