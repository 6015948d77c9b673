package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/infra/gateway"
	"github.com/reqtrace/reqtrace/infra/lambdashim"
)

// echoBootstrap is lambdashim's test function, built once by TestMain.
var echoBootstrap string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gateway-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	echoBootstrap = filepath.Join(dir, "bootstrap")
	cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", echoBootstrap, "../lambdashim/testdata/echo")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build echo bootstrap: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// echoReply is the part of testdata/echo's answer these tests read.
type echoReply struct {
	Method         string              `json:"method"`
	Path           string              `json:"path"`
	Query          map[string][]string `json:"query"`
	PathParameters map[string]string   `json:"pathParameters"`
	RouteKey       string              `json:"routeKey"`
	Headers        map[string][]string `json:"headers"`
	Body           []byte              `json:"body"`
}

// TestEndToEnd runs HTTP requests through the gateway, the Runtime API shim
// and a real bootstrap built with httpadapter.NewV2, as the local stack does.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	fn, err := lambdashim.Start(t.Context(), lambdashim.Function{
		Name: "echo", Bootstrap: echoBootstrap, Timeout: 5 * time.Second,
		Stdout: t.Output(), Stderr: t.Output(),
	})
	if err != nil {
		t.Fatalf("start function: %v", err)
	}
	t.Cleanup(func() { fn.Close() })
	var routes []gateway.Route
	for _, key := range []string{
		"GET /rest/reqs/1/requirement2/{spaceKey}",
		"GET /rest/reqs/1/requirement2/{spaceKey}/{key}",
		"POST /upload/{proxy+}",
		"GET /multi",
		"GET /binary",
		"GET /error",
	} {
		method, path, _ := strings.Cut(key, " ")
		routes = append(routes, gateway.Route{Method: method, Path: path, Invoker: fn})
	}
	g, err := gateway.New("wikiapi", routes, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)

	do := func(t *testing.T, method, path string, body []byte, header http.Header) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, srv.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, vs := range header {
			req.Header[k] = vs
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	echo := func(t *testing.T, b []byte) echoReply {
		t.Helper()
		var e echoReply
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("decode echo %q: %v", b, err)
		}
		return e
	}

	t.Run("route with parameter, query, headers, cookies", func(t *testing.T) {
		resp, b := do(t, "GET", "/rest/reqs/1/requirement2/SPACE?q=key~A&q=key~B&limit=5", nil, http.Header{
			"X-Multi": {"1", "2"}, "Cookie": {"session=abc; theme=dark"}, "Authorization": {"Bearer t"},
		})
		if resp.StatusCode != 200 {
			t.Fatalf("status = %d (%s)", resp.StatusCode, b)
		}
		e := echo(t, b)
		if e.Method != "GET" || e.Path != "/rest/reqs/1/requirement2/SPACE" || e.RouteKey != "GET /rest/reqs/1/requirement2/{spaceKey}" {
			t.Errorf("echo = %s %s via %q", e.Method, e.Path, e.RouteKey)
		}
		if e.PathParameters["spaceKey"] != "SPACE" || len(e.PathParameters) != 1 {
			t.Errorf("pathParameters = %v", e.PathParameters)
		}
		if !slices.Equal(e.Query["q"], []string{"key~A", "key~B"}) || !slices.Equal(e.Query["limit"], []string{"5"}) {
			t.Errorf("query = %v", e.Query)
		}
		if !slices.Equal(e.Headers["X-Multi"], []string{"1", "2"}) || !slices.Equal(e.Headers["Authorization"], []string{"Bearer t"}) {
			t.Errorf("headers = %v", e.Headers)
		}
		if got := strings.Join(e.Headers["Cookie"], "; "); got != "session=abc; theme=dark" {
			t.Errorf("cookies = %q", got)
		}
		if resp.Header.Get("Apigw-Requestid") == "" {
			t.Error("no Apigw-Requestid")
		}
	})

	t.Run("most specific route", func(t *testing.T) {
		resp, b := do(t, "GET", "/rest/reqs/1/requirement2/SPACE/REQ-001", nil, nil)
		if resp.StatusCode != 200 {
			t.Fatalf("status = %d (%s)", resp.StatusCode, b)
		}
		e := echo(t, b)
		if e.RouteKey != "GET /rest/reqs/1/requirement2/{spaceKey}/{key}" || e.PathParameters["key"] != "REQ-001" {
			t.Errorf("route %q, params %v", e.RouteKey, e.PathParameters)
		}
	})

	t.Run("binary request body", func(t *testing.T) {
		body := make([]byte, 256)
		for i := range body {
			body[i] = byte(i)
		}
		resp, b := do(t, "POST", "/upload/a/b.bin", body, http.Header{"Content-Type": {"application/octet-stream"}})
		if resp.StatusCode != 200 {
			t.Fatalf("status = %d (%s)", resp.StatusCode, b)
		}
		e := echo(t, b)
		if !bytes.Equal(e.Body, body) || e.PathParameters["proxy"] != "a/b.bin" {
			t.Errorf("body %v, params %v", e.Body, e.PathParameters)
		}
	})

	t.Run("status, repeated headers and cookies in the response", func(t *testing.T) {
		resp, b := do(t, "GET", "/multi", nil, nil)
		if resp.StatusCode != 201 || string(b) != "multi" {
			t.Errorf("got %d %q, want 201 multi", resp.StatusCode, b)
		}
		// httpadapter joins repeated headers with "," and moves cookies to cookies.
		if got := resp.Header.Values("X-Multi"); !slices.Equal(got, []string{"a,b"}) {
			t.Errorf("X-Multi = %q", got)
		}
		var names []string
		for _, c := range resp.Cookies() {
			names = append(names, c.Name+"="+c.Value)
		}
		if !slices.Equal(names, []string{"one=1", "two=2"}) {
			t.Errorf("cookies = %v", names)
		}
	})

	t.Run("binary response body", func(t *testing.T) {
		resp, b := do(t, "GET", "/binary", nil, nil)
		if resp.StatusCode != 200 || len(b) != 256 || b[255] != 255 || resp.Header.Get("Content-Type") != "application/octet-stream" {
			t.Errorf("got %d, %d bytes, %q", resp.StatusCode, len(b), resp.Header.Get("Content-Type"))
		}
	})

	tests := []struct {
		name, method, path string
		wantStatus         int
		wantBody           string
	}{
		{"function error", "GET", "/error", 500, `{"message":"Internal Server Error"}`},
		{"unknown route", "GET", "/nope", 404, `{"message":"Not Found"}`},
		{"other method", "DELETE", "/rest/reqs/1/requirement2/SPACE", 404, `{"message":"Not Found"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := do(t, tt.method, tt.path, nil, nil)
			if resp.StatusCode != tt.wantStatus || string(b) != tt.wantBody {
				t.Errorf("got %d %s, want %d %s", resp.StatusCode, b, tt.wantStatus, tt.wantBody)
			}
		})
	}
}
