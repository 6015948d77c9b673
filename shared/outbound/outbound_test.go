package outbound_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reqtrace/reqtrace/infra/fakedns"
	"github.com/reqtrace/reqtrace/shared/netpolicy"
	"github.com/reqtrace/reqtrace/shared/outbound"
)

// server is a loopback test server counting the requests it got.
type server struct {
	*httptest.Server
	hits atomic.Int32
}

func newServer(t *testing.T, h http.HandlerFunc) *server {
	t.Helper()
	s := &server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func ok(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }

// named returns the server's URL with its address replaced by host.
func (s *server) named(host string) string {
	u, _ := url.Parse(s.URL)
	return "http://" + host + ":" + u.Port()
}

// resolver makes tracker.example.com resolve to 127.0.0.1 (a public name
// rebound to loopback) and metadata.example.com to 169.254.169.254.
var resolver = fakedns.Resolver(map[string][]netip.Addr{
	"tracker.example.com":  {netip.MustParseAddr("127.0.0.1")},
	"other.example.net":    {netip.MustParseAddr("127.0.0.1")},
	"metadata.example.com": {netip.MustParseAddr("169.254.169.254")},
})

func client(allowPrivate bool) *http.Client {
	return outbound.New(outbound.Options{Timeout: 2 * time.Second, AllowPrivate: allowPrivate, Resolver: resolver})
}

func get(c *http.Client, u string) (string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// refusal checks that err is the policy's refusal.
func refusal(t *testing.T, what string, err error) {
	t.Helper()
	var re *netpolicy.RefusedError
	if !errors.As(err, &re) || !strings.HasPrefix(netpolicy.Describe(err), "refused: ") {
		t.Errorf("%s: %v (%q), want a refusal", what, err, netpolicy.Describe(err))
	}
}

// A loopback target is refused while ALLOW_PRIVATE_TARGETS is off, by its
// address in the URL and by a name that resolves to it (checked when
// connecting, after DNS), and called when it is on.
func TestPrivateTargets(t *testing.T) {
	t.Parallel()
	srv := newServer(t, ok)
	for _, u := range []string{srv.URL, srv.named("tracker.example.com"), srv.named("localhost")} {
		_, err := get(client(false), u)
		refusal(t, u, err)
	}
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("the refused server got %d requests", n)
	}
	for _, u := range []string{srv.URL, srv.named("tracker.example.com")} {
		if body, err := get(client(true), u); err != nil || body != "ok" {
			t.Errorf("%s with private targets allowed: %q, %v", u, body, err)
		}
	}
}

// Redirects are checked like the first request: a link-local target is
// refused even when private targets are allowed, by address or by a name
// resolving to it; other schemes are refused; at most a few are followed.
func TestRedirects(t *testing.T) {
	t.Parallel()
	var loops atomic.Int32
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/to-metadata":
			http.Redirect(w, r, "http://169.254.169.254/latest/meta-data/", http.StatusFound)
		case "/to-metadata-name":
			http.Redirect(w, r, "http://metadata.example.com/latest/meta-data/", http.StatusTemporaryRedirect)
		case "/to-mapped":
			http.Redirect(w, r, "http://[::ffff:169.254.169.254]/", http.StatusFound)
		case "/to-file":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/loop":
			loops.Add(1)
			http.Redirect(w, r, "/loop", http.StatusFound)
		case "/once":
			http.Redirect(w, r, "/", http.StatusFound)
		default:
			ok(w, r)
		}
	})
	c := client(true)
	for _, path := range []string{"/to-metadata", "/to-metadata-name", "/to-mapped", "/to-file"} {
		_, err := get(c, srv.URL+path)
		refusal(t, path, err)
	}
	if _, err := get(c, srv.URL+"/loop"); !errors.Is(err, netpolicy.ErrTooManyRedirects) || netpolicy.Describe(err) != "too many redirects" {
		t.Errorf("redirect loop: %v", err)
	}
	if n := loops.Load(); n != outbound.DefaultMaxRedirects+1 {
		t.Errorf("the loop was followed %d times, want %d", n, outbound.DefaultMaxRedirects+1)
	}
	if body, err := get(c, srv.URL+"/once"); err != nil || body != "ok" {
		t.Errorf("one redirect: %q, %v", body, err)
	}
}

// A redirect to another host does not carry the bearer token.
func TestRedirectDropsCredentials(t *testing.T) {
	t.Parallel()
	var auth atomic.Value
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "tracker.example.com" || strings.HasPrefix(r.Host, "tracker.example.com:") {
			http.Redirect(w, r, "http://other.example.net:"+strings.Split(r.Host, ":")[1]+"/", http.StatusTemporaryRedirect)
			return
		}
		auth.Store(r.Header.Get("Authorization"))
		ok(w, r)
	})
	req, _ := http.NewRequest(http.MethodGet, srv.named("tracker.example.com"), nil)
	req.Header.Set("Authorization", "Bearer tracker-secret")
	resp, err := client(true).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := auth.Load(); got != "" {
		t.Errorf("the other host got Authorization %q", got)
	}
}

// Answers are read up to the limit: a longer one is an error, whether its
// length is announced or not.
func TestAnswerLimit(t *testing.T) {
	t.Parallel()
	const limit = 1000
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		n := limit
		if r.URL.Query().Has("over") {
			n++
		}
		if r.URL.Query().Has("announced") {
			w.Header().Set("Content-Length", "100000")
			_, _ = io.WriteString(w, strings.Repeat("x", 100000))
			return
		}
		for range n { // written byte by byte: no Content-Length
			_, _ = w.Write([]byte("x"))
			w.(http.Flusher).Flush()
		}
	})
	c := outbound.New(outbound.Options{AllowPrivate: true, MaxBody: limit})
	if body, err := get(c, srv.URL); err != nil || len(body) != limit {
		t.Errorf("an answer of the limit: %d bytes, %v", len(body), err)
	}
	for _, q := range []string{"?over", "?announced"} {
		_, err := get(c, srv.URL+q)
		var tl *netpolicy.TooLargeError
		if !errors.As(err, &tl) || netpolicy.Describe(err) != "the answer is larger than 1000 bytes" {
			t.Errorf("%s: %v", q, err)
		}
	}
	if got := (&netpolicy.TooLargeError{Limit: outbound.DefaultMaxBody}).Error(); got != "the answer is larger than 1 MiB" {
		t.Errorf("default limit named %q", got)
	}
}

// HTTP_PROXY and friends are ignored: a proxy would be what the address
// check sees.
func TestNoProxyFromEnvironment(t *testing.T) {
	proxy := newServer(t, ok)
	t.Setenv("HTTP_PROXY", proxy.URL)
	t.Setenv("http_proxy", proxy.URL)
	srv := newServer(t, ok)
	if body, err := get(client(true), srv.named("tracker.example.com")); err != nil || body != "ok" {
		t.Fatalf("%q, %v", body, err)
	}
	if proxy.hits.Load() != 0 || srv.hits.Load() != 1 {
		t.Errorf("proxy got %d requests, server %d", proxy.hits.Load(), srv.hits.Load())
	}
}

// A call takes at most the timeout, and says so without the transport's
// own words.
func TestTimeout(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	start := time.Now()
	_, err := get(outbound.New(outbound.Options{AllowPrivate: true, Timeout: 100 * time.Millisecond}), srv.URL)
	if netpolicy.Describe(err) != "no answer in time" || time.Since(start) > 2*time.Second {
		t.Errorf("%v (%q) after %s", err, netpolicy.Describe(err), time.Since(start))
	}
}
