//go:build unix

package lambdashim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// echoBootstrap is the test function (testdata/echo) built once by TestMain.
var echoBootstrap string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lambdashim-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	echoBootstrap, err = buildBootstrap(dir, "./testdata/echo")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildBootstrap builds pkg the way the project builds functions.
func buildBootstrap(dir, pkg string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("find go: %w", err)
	}
	out := filepath.Join(dir, "bootstrap")
	cmd := exec.Command(goBin, "build", "-tags", "lambda.norpc", "-trimpath", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

// echoReply mirrors testdata/echo's Echo.
type echoReply struct {
	Method         string              `json:"method"`
	Path           string              `json:"path"`
	RawQuery       string              `json:"rawQuery"`
	Query          map[string][]string `json:"query"`
	PathParameters map[string]string   `json:"pathParameters"`
	Headers        map[string][]string `json:"headers"`
	Body           []byte              `json:"body"`
	PID            int                 `json:"pid"`
	ChildPID       int                 `json:"childPid"`
	RequestID      string              `json:"requestId"`
	FunctionARN    string              `json:"functionArn"`
	DeadlineMs     int64               `json:"deadlineMs"`
	Env            map[string]string   `json:"env"`
}

func start(t *testing.T, fn Function) *Runner {
	t.Helper()
	if fn.Name == "" {
		fn.Name = "echo"
	}
	fn.Bootstrap = echoBootstrap
	fn.Stdout = t.Output()
	fn.Stderr = t.Output()
	r, err := Start(t.Context(), fn)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		for _, p := range r.Stats().Processes {
			if !gone(p.PID) {
				t.Errorf("process %d still running after Close", p.PID)
			}
		}
	})
	return r
}

// event builds an API Gateway v2 event for the echo function.
func event(method, path, query, body string) []byte {
	ev := events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       "$default",
		RawPath:        path,
		RawQueryString: query,
		Headers:        map[string]string{"content-type": "text/plain", "x-test": "yes"},
		Body:           body,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			DomainName: "localhost",
			HTTP:       events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
		},
	}
	for kv := range strings.SplitSeq(query, "&") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if ev.QueryStringParameters == nil {
				ev.QueryStringParameters = map[string]string{}
			}
			ev.QueryStringParameters[k] = v
		}
	}
	b, _ := json.Marshal(ev)
	return b
}

// invokeEcho invokes the echo function and decodes its echo.
func invokeEcho(ctx context.Context, r *Runner, method, path, query, body string) (echoReply, error) {
	out, err := r.Invoke(ctx, event(method, path, query, body))
	if err != nil {
		return echoReply{}, err
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		return echoReply{}, fmt.Errorf("decode proxy response %q: %w", out, err)
	}
	var e echoReply
	if err := json.Unmarshal([]byte(resp.Body), &e); err != nil {
		return echoReply{}, fmt.Errorf("decode echo %q: %w", resp.Body, err)
	}
	return e, nil
}

// gone reports whether pid no longer runs (absent, or a zombie nobody reaped).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func waitGone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for _, pid := range pids {
		for !gone(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d still running", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

func TestInvokeRoundTrip(t *testing.T) {
	t.Parallel()
	r := start(t, Function{Name: "wiki-requirements"})
	tests := []struct {
		name, method, path, query, body string
		wantQuery                       map[string][]string
	}{
		{name: "get with query", method: "GET", path: "/rest/reqs/1/requirement2/SPACE", query: "q=key~'A'&limit=5",
			wantQuery: map[string][]string{"q": {"key~'A'"}, "limit": {"5"}}},
		{name: "post with body", method: "POST", path: "/rest/reqs/1/content/42", body: "<p>hello</p>",
			wantQuery: map[string][]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := invokeEcho(t.Context(), r, tt.method, tt.path, tt.query, tt.body)
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			if e.Method != tt.method || e.Path != tt.path || string(e.Body) != tt.body {
				t.Errorf("echo = %s %s %q, want %s %s %q", e.Method, e.Path, e.Body, tt.method, tt.path, tt.body)
			}
			if fmt.Sprint(e.Query) != fmt.Sprint(tt.wantQuery) {
				t.Errorf("query = %v, want %v", e.Query, tt.wantQuery)
			}
			if got := e.Headers["X-Test"]; !slices.Equal(got, []string{"yes"}) {
				t.Errorf("X-Test header = %q, want [yes]", got)
			}
			if len(e.RequestID) != 36 {
				t.Errorf("request id = %q, want a UUID", e.RequestID)
			}
			if want := ":000000000000:function:wiki-requirements"; !strings.HasSuffix(e.FunctionARN, want) {
				t.Errorf("function ARN = %q, want suffix %q", e.FunctionARN, want)
			}
		})
	}
}

func TestProcessEnvironment(t *testing.T) {
	t.Parallel()
	r := start(t, Function{Name: "env-check", MemoryMB: 256, Timeout: 2 * time.Second, Env: []string{"ECHO_FOO=bar"}})
	e, err := invokeEcho(t.Context(), r, "GET", "/", "", "")
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	taskRoot := filepath.Dir(echoBootstrap)
	want := map[string]string{
		"AWS_LAMBDA_FUNCTION_NAME":        "env-check",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "256",
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"_HANDLER":                        "bootstrap",
		"LAMBDA_TASK_ROOT":                taskRoot,
		"PWD":                             taskRoot,
		"TZ":                              "UTC",
		"ECHO_FOO":                        "bar",
		"PATH":                            os.Getenv("PATH"),
	}
	for k, v := range want {
		if e.Env[k] != v {
			t.Errorf("%s = %q, want %q", k, e.Env[k], v)
		}
	}
	if api := e.Env["AWS_LAMBDA_RUNTIME_API"]; !strings.HasPrefix(api, "127.0.0.1:") {
		t.Errorf("AWS_LAMBDA_RUNTIME_API = %q, want 127.0.0.1:...", api)
	}
	// The deadline the function sees is the 2 s timeout from when it got the event.
	if e.DeadlineMs <= 1000 || e.DeadlineMs > 2000 {
		t.Errorf("remaining time = %d ms, want in (1000, 2000]", e.DeadlineMs)
	}
}

func TestWarmProcessIsReused(t *testing.T) {
	t.Parallel()
	r := start(t, Function{})
	var pids []int
	for range 3 {
		e, err := invokeEcho(t.Context(), r, "GET", "/", "", "")
		if err != nil {
			t.Fatalf("Invoke: %v", err)
		}
		pids = append(pids, e.PID)
	}
	if pids[0] != pids[1] || pids[1] != pids[2] {
		t.Errorf("sequential invocations ran in processes %v, want one warm process", pids)
	}
	s := r.Stats()
	if len(s.Processes) != 1 {
		t.Fatalf("processes = %d, want 1", len(s.Processes))
	}
	p := s.Processes[0]
	if p.PID != pids[0] || p.Invocations != 3 || p.Errors != 0 {
		t.Errorf("stats = %+v, want pid %d, 3 invocations, 0 errors", p, pids[0])
	}
	if p.InitDuration() <= 0 || p.ColdStart() < p.InitDuration() {
		t.Errorf("init %v, cold start %v: want 0 < init <= cold start", p.InitDuration(), p.ColdStart())
	}
}

func TestConcurrentInvocationsScaleToMaxConcurrency(t *testing.T) {
	t.Parallel()
	const maxProcs, calls = 3, 7
	r := start(t, Function{MaxConcurrency: maxProcs, Timeout: 10 * time.Second})
	var wg sync.WaitGroup
	pids := make([]int, calls)
	errs := make([]error, calls)
	for i := range calls {
		wg.Go(func() {
			e, err := invokeEcho(t.Context(), r, "GET", "/sleep", "ms=300", "")
			pids[i], errs[i] = e.PID, err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	slices.Sort(pids)
	if n := len(slices.Compact(pids)); n != maxProcs {
		t.Errorf("invocations ran in %d processes, want %d", n, maxProcs)
	}
	s := r.Stats()
	total := 0
	for _, p := range s.Processes {
		total += p.Invocations
	}
	if len(s.Processes) != maxProcs || total != calls {
		t.Errorf("stats: %d processes, %d invocations; want %d, %d", len(s.Processes), total, maxProcs, calls)
	}
}

func TestFunctionErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		path         string
		wantType     string
		wantMessage  string
		wantIs       error
		wantReplaced bool
	}{
		{path: "/error", wantType: "errorString", wantMessage: "echo: error requested"},
		{path: "/panic", wantType: "string", wantMessage: "echo: panic requested", wantReplaced: true},
		{path: "/exit", wantType: "Runtime.ExitError", wantMessage: "exit status 7", wantIs: ErrProcessExited, wantReplaced: true},
		{path: "/big", wantType: "Function.ResponseSizeTooLarge", wantMessage: "6291556", wantReplaced: true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			t.Parallel()
			r := start(t, Function{})
			before, err := invokeEcho(t.Context(), r, "GET", "/", "", "")
			if err != nil {
				t.Fatalf("first Invoke: %v", err)
			}
			_, err = r.Invoke(t.Context(), event("GET", tt.path, "", ""))
			var ie *InvokeError
			if !errors.As(err, &ie) {
				t.Fatalf("Invoke error = %v, want *InvokeError", err)
			}
			if ie.Type != tt.wantType || !strings.Contains(ie.Message, tt.wantMessage) || ie.RequestID == "" {
				t.Errorf("InvokeError = %+v, want type %q, message containing %q, a request id", ie, tt.wantType, tt.wantMessage)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("errors.Is(%v, %v) = false", err, tt.wantIs)
			}
			after, err := invokeEcho(t.Context(), r, "GET", "/", "", "")
			if err != nil {
				t.Fatalf("Invoke after the error: %v", err)
			}
			if replaced := after.PID != before.PID; replaced != tt.wantReplaced {
				t.Errorf("process replaced = %v (pid %d then %d), want %v", replaced, before.PID, after.PID, tt.wantReplaced)
			}
			if tt.wantReplaced {
				waitGone(t, before.PID)
			}
		})
	}
}

func TestTimeoutKillsAndReplacesProcess(t *testing.T) {
	t.Parallel()
	const timeout = 400 * time.Millisecond
	r := start(t, Function{Timeout: timeout})
	before, err := invokeEcho(t.Context(), r, "GET", "/", "", "")
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	began := time.Now()
	_, err = r.Invoke(t.Context(), event("GET", "/sleep", "ms=10000", ""))
	elapsed := time.Since(began)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Invoke error = %v, want ErrTimeout", err)
	}
	var ie *InvokeError
	if !errors.As(err, &ie) || ie.Type != "Sandbox.Timedout" || !strings.Contains(ie.Message, "Task timed out after 0.40 seconds") {
		t.Errorf("InvokeError = %+v, want Sandbox.Timedout after 0.40 seconds", ie)
	}
	if elapsed < timeout || elapsed > timeout+2*time.Second {
		t.Errorf("timed out after %v, want about %v", elapsed, timeout)
	}
	waitGone(t, before.PID)

	after, err := invokeEcho(t.Context(), r, "GET", "/", "", "")
	if err != nil {
		t.Fatalf("Invoke after timeout: %v", err)
	}
	if after.PID == before.PID {
		t.Errorf("invocation after a timeout ran in the killed process %d", before.PID)
	}
	s := r.Stats()
	if len(s.Processes) != 2 || s.Processes[0].Exited.IsZero() || !strings.Contains(s.Processes[0].ExitReason, "timeout") {
		t.Errorf("stats = %+v, want the first process exited by timeout and a second one", s.Processes)
	}
}

func TestInitFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		env         string
		wantType    string
		wantMessage string
	}{
		{name: "exit", env: "ECHO_INIT=exit", wantType: "Runtime.ExitError", wantMessage: "exit status 3"},
		{name: "reported", env: "ECHO_INIT=report", wantType: "Echo.InitFailed", wantMessage: "missing configuration"},
		{name: "hang", env: "ECHO_INIT=hang", wantType: "Sandbox.Timedout", wantMessage: "Init timed out"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := start(t, Function{Env: []string{tt.env}, InitTimeout: 300 * time.Millisecond})
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			_, err := r.Invoke(ctx, event("GET", "/", "", ""))
			var ie *InvokeError
			if !errors.Is(err, ErrInitFailed) || !errors.As(err, &ie) {
				t.Fatalf("Invoke error = %v, want an *InvokeError wrapping ErrInitFailed", err)
			}
			if ie.Type != tt.wantType || !strings.Contains(ie.Message, tt.wantMessage) {
				t.Errorf("InvokeError = %+v, want type %q, message containing %q", ie, tt.wantType, tt.wantMessage)
			}
			// One failed cold start per invocation: no restart loop.
			if n := len(r.Stats().Processes); n > 2 {
				t.Errorf("%d processes started for one invocation, want at most 2", n)
			}
		})
	}
}

func TestCloseStopsProcessesAndTheirChildren(t *testing.T) {
	t.Parallel()
	r, err := Start(t.Context(), Function{
		Name: "echo", Bootstrap: echoBootstrap, MaxConcurrency: 2, Timeout: 30 * time.Second,
		Env: []string{"ECHO_SPAWN_CHILD=1"}, Stdout: t.Output(), Stderr: t.Output(),
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	first, err := invokeEcho(t.Context(), r, "GET", "/", "", "")
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	sleeping := make(chan error, 1)
	go func() {
		_, err := r.Invoke(t.Context(), event("GET", "/sleep", "ms=30000", ""))
		sleeping <- err
	}()
	// Wait until the sleep is running in the first process, then make the
	// second process start.
	for r.Stats().Processes[0].Invocations < 2 {
		time.Sleep(5 * time.Millisecond)
	}
	second, err := invokeEcho(t.Context(), r, "GET", "/", "", "")
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if second.PID == first.PID {
		t.Fatalf("second invocation ran in the busy process %d", first.PID)
	}

	began := time.Now()
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(began); d > time.Second {
		t.Errorf("Close took %v; processes that honour SIGTERM should stop at once", d)
	}
	for _, pid := range []int{first.PID, second.PID} {
		if !gone(pid) {
			t.Errorf("bootstrap %d still running after Close", pid)
		}
	}
	waitGone(t, first.ChildPID, second.ChildPID) // reparented children are reaped by init
	if err := <-sleeping; !errors.Is(err, ErrClosed) {
		t.Errorf("running invocation ended with %v, want ErrClosed", err)
	}
	if _, err := r.Invoke(t.Context(), event("GET", "/", "", "")); !errors.Is(err, ErrClosed) {
		t.Errorf("Invoke after Close = %v, want ErrClosed", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestCloseKillsProcessIgnoringSIGTERM(t *testing.T) {
	t.Parallel()
	const grace = 300 * time.Millisecond
	r, err := Start(t.Context(), Function{
		Name: "echo", Bootstrap: echoBootstrap, ShutdownTimeout: grace,
		Env: []string{"ECHO_IGNORE_SIGTERM=1"}, Stdout: t.Output(), Stderr: t.Output(),
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	e, err := invokeEcho(t.Context(), r, "GET", "/", "", "")
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	began := time.Now()
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if d := time.Since(began); d < grace || d > grace+time.Second {
		t.Errorf("Close took %v, want SIGKILL after the %v grace period", d, grace)
	}
	if !gone(e.PID) {
		t.Errorf("process %d survived Close", e.PID)
	}
}

func TestContextCancelStopsProcesses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	r, err := Start(ctx, Function{Name: "echo", Bootstrap: echoBootstrap, Stdout: t.Output(), Stderr: t.Output()})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	e, err := invokeEcho(t.Context(), r, "GET", "/", "", "")
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	cancel()
	waitGone(t, e.PID)
	if err := r.Close(); err != nil {
		t.Errorf("Close after cancel: %v", err)
	}
	if _, err := r.Invoke(t.Context(), event("GET", "/", "", "")); !errors.Is(err, ErrClosed) {
		t.Errorf("Invoke after cancel = %v, want ErrClosed", err)
	}
}

func TestInvokeContextEndsWait(t *testing.T) {
	t.Parallel()
	r := start(t, Function{Timeout: 5 * time.Second})
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	_, err := r.Invoke(ctx, event("GET", "/sleep", "ms=1000", ""))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Invoke = %v, want context.DeadlineExceeded", err)
	}
}

func TestInvokeRejectsLargePayload(t *testing.T) {
	t.Parallel()
	r := start(t, Function{})
	_, err := r.Invoke(t.Context(), make([]byte, MaxRequestPayload+1))
	if !errors.Is(err, ErrRequestTooLarge) {
		t.Errorf("Invoke = %v, want ErrRequestTooLarge", err)
	}
}

func TestStartValidation(t *testing.T) {
	t.Parallel()
	notExec := filepath.Join(t.TempDir(), "bootstrap")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		fn   Function
		want string
	}{
		{"no name", Function{Bootstrap: echoBootstrap}, "empty name"},
		{"no bootstrap", Function{Name: "f"}, "empty bootstrap"},
		{"missing bootstrap", Function{Name: "f", Bootstrap: "/nonexistent/bootstrap"}, "no such file"},
		{"not executable", Function{Name: "f", Bootstrap: notExec}, "not an executable"},
		{"reserved env", Function{Name: "f", Bootstrap: echoBootstrap, Env: []string{"AWS_LAMBDA_RUNTIME_API=x"}}, "reserved"},
		{"malformed env", Function{Name: "f", Bootstrap: echoBootstrap, Env: []string{"NOEQUALS"}}, "KEY=VALUE"},
		{"negative timeout", Function{Name: "f", Bootstrap: echoBootstrap, Timeout: -1}, "negative timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Start(t.Context(), tt.fn)
			if err == nil {
				r.Close()
				t.Fatalf("Start succeeded, want error containing %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

func TestRuntimeAPIRejectsUnknownCallers(t *testing.T) {
	t.Parallel()
	r := start(t, Function{})
	if _, err := invokeEcho(t.Context(), r, "GET", "/", "", ""); err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	base := "http://" + r.addr
	tests := []struct {
		name, method, path string
		want               int
	}{
		{"unknown request id", "POST", "/sandbox/1/2018-06-01/runtime/invocation/nope/response", http.StatusBadRequest},
		{"unknown request id error", "POST", "/sandbox/1/2018-06-01/runtime/invocation/nope/error", http.StatusBadRequest},
		{"init error after init", "POST", "/sandbox/1/2018-06-01/runtime/init/error", http.StatusForbidden},
		{"unknown sandbox", "GET", "/sandbox/99/2018-06-01/runtime/invocation/next", http.StatusNotFound},
		{"no sandbox prefix", "GET", "/2018-06-01/runtime/invocation/next", http.StatusNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(t.Context(), tt.method, base+tt.path, strings.NewReader("{}"))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.want)
			}
		})
	}
}

func TestKillBusyFailsTheInvocationAndReplacesTheProcess(t *testing.T) {
	t.Parallel()
	r := start(t, Function{Timeout: 20 * time.Second})
	if _, ok := r.KillBusy(); ok {
		t.Fatal("KillBusy killed a process while none was busy")
	}
	before, err := invokeEcho(t.Context(), r, "GET", "/", "", "")
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := r.Invoke(t.Context(), event("GET", "/sleep", "ms=10000", ""))
		errc <- err
	}()
	var pid int
	for deadline := time.Now().Add(10 * time.Second); ; {
		var ok bool
		if pid, ok = r.KillBusy(); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sleeping invocation never became busy")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if pid != before.PID {
		t.Errorf("killed pid %d, want the warm process %d", pid, before.PID)
	}
	err = <-errc
	var ie *InvokeError
	if !errors.Is(err, ErrProcessExited) || !errors.As(err, &ie) || ie.Type != "Runtime.ExitError" {
		t.Fatalf("Invoke error = %v, want a Runtime.ExitError wrapping ErrProcessExited", err)
	}
	waitGone(t, before.PID)
	after, err := invokeEcho(t.Context(), r, "GET", "/", "", "")
	if err != nil {
		t.Fatalf("Invoke after the kill: %v", err)
	}
	if after.PID == before.PID {
		t.Errorf("invocation after the kill ran in the killed process %d", before.PID)
	}
	if s := r.Stats(); !strings.Contains(s.Processes[0].ExitReason, "fault injection") {
		t.Errorf("exit reason %q, want it to say fault injection", s.Processes[0].ExitReason)
	}
}

func TestInvokeAsyncRetriesFunctionErrorsTwice(t *testing.T) {
	t.Parallel()
	r := start(t, Function{})
	n, err := r.InvokeAsync(t.Context(), event("GET", "/", "", ""), time.Millisecond)
	if err != nil || n != 1 {
		t.Fatalf("passing invocation: %d attempts, %v; want 1, nil", n, err)
	}
	n, err = r.InvokeAsync(t.Context(), event("GET", "/exit", "", ""), time.Millisecond)
	if !errors.Is(err, ErrProcessExited) || n != 1+AsyncRetries {
		t.Fatalf("crashing invocation: %d attempts, %v; want %d attempts ending in ErrProcessExited", n, err, 1+AsyncRetries)
	}
	n, err = r.InvokeAsync(t.Context(), event("GET", "/error", "", ""), time.Millisecond)
	var ie *InvokeError
	if !errors.As(err, &ie) || n != 1+AsyncRetries {
		t.Fatalf("failing invocation: %d attempts, %v; want %d attempts ending in a function error", n, err, 1+AsyncRetries)
	}
	if _, err := invokeEcho(t.Context(), r, "GET", "/", "", ""); err != nil {
		t.Fatalf("invocation after the crashes: %v", err)
	}
}

// TestQuitIdleCountsGoroutines: QuitIdle's SIGQUIT makes each idle process
// list its goroutines and exit; a process that leaked goroutines lists
// that many more than a fresh one, and the next invocation gets a fresh
// process.
func TestQuitIdleCountsGoroutines(t *testing.T) {
	t.Parallel()
	r := start(t, Function{Timeout: 20 * time.Second, Stderr: io.Discard})
	count := func() Goroutines {
		t.Helper()
		gs := r.QuitIdle(10 * time.Second)
		if len(gs) != 1 || gs[0].Count < 1 {
			t.Fatalf("QuitIdle = %+v, want one process that listed its goroutines", gs)
		}
		waitGone(t, gs[0].PID)
		return gs[0]
	}
	if _, err := invokeEcho(t.Context(), r, "GET", "/", "", ""); err != nil {
		t.Fatal(err)
	}
	fresh := count()
	if _, err := r.Invoke(t.Context(), event("GET", "/leak", "n=25", "")); err != nil {
		t.Fatal(err)
	}
	leaky := count()
	// The runtime's own goroutines vary by one or two.
	if leaky.PID == fresh.PID || leaky.Count < fresh.Count+25-2 || leaky.Count > fresh.Count+25+2 {
		t.Errorf("fresh process %+v, one that leaked 25 goroutines %+v: want a new process listing 25 more", fresh, leaky)
	}
	if leaky.Invocations != 1 {
		t.Errorf("invocations %d, want 1", leaky.Invocations)
	}
}
