// Command echo is the test bootstrap of the lambdashim and gateway tests: an
// API Gateway v2 function built like reqtrace's (httpadapter.NewV2 over a
// ServeMux, -tags lambda.norpc) that echoes the request it receives.
//
// Special paths make it misbehave on purpose:
//
//	/error          return an error (function error, process keeps running)
//	/panic          panic (function error, then the process exits)
//	/exit           exit with status 7 mid-invocation
//	/sleep?ms=N     sleep N ms ignoring the deadline, then echo
//	/big            answer more than Lambda's 6 MB response limit
//	/multi          answer with repeated headers, two cookies and status 201
//	/binary         answer bytes 0..255 as application/octet-stream
//
// Environment: ECHO_INIT=exit exits during init, ECHO_INIT=report posts to
// /runtime/init/error then exits, ECHO_INIT=hang never polls for work;
// ECHO_IGNORE_SIGTERM=1 ignores SIGTERM; ECHO_SPAWN_CHILD=1 starts a child
// process that sleeps (its pid is echoed) to test process-group cleanup.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/awslabs/aws-lambda-go-api-proxy/httpadapter"
)

// Echo is what the function answers for an ordinary request.
type Echo struct {
	Method         string              `json:"method"`
	Path           string              `json:"path"`
	RawQuery       string              `json:"rawQuery"`
	Query          map[string][]string `json:"query"`
	PathParameters map[string]string   `json:"pathParameters"`
	RouteKey       string              `json:"routeKey"`
	Headers        map[string][]string `json:"headers"`
	Body           []byte              `json:"body"`
	PID            int                 `json:"pid"`
	ChildPID       int                 `json:"childPid,omitempty"`
	RequestID      string              `json:"requestId"`
	FunctionARN    string              `json:"functionArn"`
	DeadlineMs     int64               `json:"deadlineMs"`
	Env            map[string]string   `json:"env"`
}

type eventKey struct{}

var childPID int

func main() {
	if os.Getenv("ECHO_CHILD") == "1" {
		time.Sleep(time.Hour)
		return
	}
	switch os.Getenv("ECHO_INIT") {
	case "exit":
		fmt.Fprintln(os.Stderr, "echo: init failed on purpose")
		os.Exit(3)
	case "report":
		reportInitError()
		os.Exit(4)
	case "hang":
		time.Sleep(time.Hour)
	}
	if os.Getenv("ECHO_IGNORE_SIGTERM") == "1" {
		signal.Ignore(syscall.SIGTERM)
	}
	if os.Getenv("ECHO_SPAWN_CHILD") == "1" {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), "ECHO_CHILD=1")
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "echo: start child:", err)
			os.Exit(5)
		}
		childPID = cmd.Process.Pid
	}

	adapter := httpadapter.NewV2(http.HandlerFunc(echo))
	lambda.Start(func(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
		switch ev.RawPath {
		case "/error":
			return events.APIGatewayV2HTTPResponse{}, errors.New("echo: error requested")
		case "/panic":
			panic("echo: panic requested")
		case "/exit":
			os.Exit(7)
		case "/sleep":
			ms, _ := strconv.Atoi(ev.QueryStringParameters["ms"])
			time.Sleep(time.Duration(ms) * time.Millisecond)
		case "/leak":
			// A goroutine that never ends, for the goroutine-dump test.
			n, _ := strconv.Atoi(ev.QueryStringParameters["n"])
			for range n {
				go func() { select {} }()
			}
		case "/big":
			return events.APIGatewayV2HTTPResponse{StatusCode: 200, Body: strings.Repeat("x", 7<<20)}, nil
		}
		return adapter.ProxyWithContext(context.WithValue(ctx, eventKey{}, ev), ev)
	})
}

func echo(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/multi":
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		http.SetCookie(w, &http.Cookie{Name: "one", Value: "1"})
		http.SetCookie(w, &http.Cookie{Name: "two", Value: "2", Path: "/"})
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusCreated)
		_, _ = io.WriteString(w, "multi")
		return
	case "/binary":
		b := make([]byte, 256)
		for i := range b {
			b[i] = byte(i)
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		_, _ = w.Write(b)
		return
	}
	ev, _ := r.Context().Value(eventKey{}).(events.APIGatewayV2HTTPRequest)
	body, _ := io.ReadAll(r.Body)
	e := Echo{
		Method:         r.Method,
		Path:           r.URL.Path,
		RawQuery:       r.URL.RawQuery,
		Query:          r.URL.Query(),
		PathParameters: ev.PathParameters,
		RouteKey:       ev.RouteKey,
		Headers:        r.Header,
		Body:           body,
		PID:            os.Getpid(),
		ChildPID:       childPID,
		Env:            map[string]string{},
	}
	if lc, ok := lambdacontext.FromContext(r.Context()); ok {
		e.RequestID = lc.AwsRequestID
		e.FunctionARN = lc.InvokedFunctionArn
	}
	if d, ok := r.Context().Deadline(); ok {
		e.DeadlineMs = time.Until(d).Milliseconds()
	}
	for _, k := range []string{
		"AWS_LAMBDA_RUNTIME_API", "AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
		"AWS_LAMBDA_FUNCTION_VERSION", "_HANDLER", "LAMBDA_TASK_ROOT", "TZ", "ECHO_FOO", "PATH",
	} {
		e.Env[k] = os.Getenv(k)
	}
	if wd, err := os.Getwd(); err == nil {
		e.Env["PWD"] = wd
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(e)
}

// reportInitError does what a runtime does when its init fails.
func reportInitError() {
	url := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2018-06-01/runtime/init/error"
	body := []byte(`{"errorType":"Echo.InitFailed","errorMessage":"echo: missing configuration"}`)
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		fmt.Fprintln(os.Stderr, "echo: report init error:", err)
		return
	}
	resp.Body.Close()
}
