package soak_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/infra/soak"
	"github.com/reqtrace/reqtrace/infra/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// soakSeed is the fixed seed of the soak make test runs; a failure names
// it, and `make soak SOAK_SEED=... SOAK_DURATION=30s` replays the run.
const soakSeed = 16016

// TestSoak30s runs a 30-second soak with faults and fails on any
// invariant violation. It asserts invariants only, never latencies: the
// machine may be loaded.
func TestSoak30s(t *testing.T) {
	if testing.Short() {
		t.Skip("a 30-second soak")
	}
	standIns := testenv.AWS(t)
	cfg, err := soak.ConfigFromEnv(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	cfg.Seed, cfg.Duration, cfg.Rate, cfg.Workers, cfg.MaxPage = soakSeed, 30*time.Second, 8, 4, 200
	var fnLog io.Writer = io.Discard
	if path := os.Getenv("SOAK_FUNCTION_LOG"); path != "" { // for a failing run: the functions' JSON logs
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fnLog = f
	}
	rep, err := soak.Run(t.Context(), cfg, soak.Env{
		BuildDir: testenv.Bootstraps(t), DynamoDBEndpoint: standIns.DynamoDBEndpoint, SQSEndpoint: standIns.SQSEndpoint,
		Prefix: testenv.Prefix("soak"), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), FunctionLog: fnLog,
	})
	if err != nil {
		t.Fatalf("soak: %v", err)
	}
	var out strings.Builder
	rep.Print(&out)
	t.Log("\n" + out.String())
	if rep.Violations > 0 {
		t.Errorf("%d invariant violations (seed %d)", rep.Violations, rep.Seed)
	}
	if rep.Requests == 0 {
		t.Error("the soak sent no request")
	}
	if dir := os.Getenv("SOAK_REPORT_DIR"); dir != "" {
		f, err := os.Create(dir + "/soak-report.json")
		if err == nil {
			_ = rep.WriteJSON(f)
			f.Close()
		}
	}
}

func TestThrottleProxyThrottlesFirstAttemptsOnly(t *testing.T) {
	t.Parallel()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "{}")
	}))
	defer backend.Close()
	p, err := soak.NewThrottleProxy(backend.URL, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	send := func(attempt string) int {
		req, _ := http.NewRequest("POST", p.URL, strings.NewReader("{}"))
		req.Header.Set("amz-sdk-request", attempt)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == 400 && !strings.Contains(string(b), "ProvisionedThroughputExceededException") {
			t.Fatalf("400 without the throttling error: %s", b)
		}
		return resp.StatusCode
	}
	if got := send("attempt=1; max=3"); got != 200 {
		t.Fatalf("share 0: status %d, want 200", got)
	}
	p.SetShare(1)
	if got := send("attempt=1; max=3"); got != 400 {
		t.Fatalf("share 1, first attempt: status %d, want 400", got)
	}
	if got := send("attempt=2; max=3"); got != 200 {
		t.Fatalf("share 1, retry: status %d, want 200 (retries are never throttled)", got)
	}
	if p.Injected() != 1 {
		t.Fatalf("Injected = %d, want 1", p.Injected())
	}
}

func TestTrackerProxyModes(t *testing.T) {
	t.Parallel()
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	defer backend.Close()
	p, err := soak.NewTrackerProxy(backend.URL, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for _, tt := range []struct {
		mode   soak.TrackerMode
		status int
		body   string
	}{
		{soak.TrackerOK, 200, `{"ok":true}`},
		{soak.Tracker500, 500, "injected"},
		{soak.TrackerHTML, 200, "<!DOCTYPE html>"},
		{soak.TrackerHang, 504, ""},
	} {
		p.SetMode(tt.mode)
		resp, err := http.Get(p.URL + "/rest/reqs/1/api")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.body) {
			t.Errorf("%v: %d %s, want %d %q", tt.mode, resp.StatusCode, b, tt.status, tt.body)
		}
	}
}

func TestConfigFromEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SOAK_RATE": "5", "SOAK_DURATION": "45s", "SOAK_SEED": "42", "SOAK_FAULTS": "false"}
	cfg, err := soak.ConfigFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Rate != 5 || cfg.Duration != 45*time.Second || cfg.Seed != 42 || cfg.Faults || cfg.MaxPage != 400 {
		t.Errorf("config = %+v", cfg)
	}
	env["SOAK_RATE"] = "fast"
	if _, err := soak.ConfigFromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok }); err == nil {
		t.Error("SOAK_RATE=fast accepted")
	}
}
