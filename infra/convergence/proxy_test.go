package convergence_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// mode is what a faultProxy does with a request.
type mode string

const (
	pass      mode = "pass"      // forward to the real application
	fail500   mode = "500"       // answer 500 with a JSON error
	htmlLogin mode = "html"      // answer 200 with an HTML login page (a proxy's SSO)
	noResults mode = "noresults" // answer 200 with JSON that has no results
	hang      mode = "hang"      // say nothing until the caller gives up
)

// faultProxy stands in front of one application (a tracker as a wiki
// integration's rpcUrl, or a wiki as a tracker applink's url) on loopback
// and can be switched to fail the way real outages do.
type faultProxy struct {
	srv   *httptest.Server
	rp    *httputil.ReverseProxy
	maxHg time.Duration

	closeOnce sync.Once

	done chan struct{} // closed by close: hanging handlers return

	mu   sync.Mutex
	m    mode
	hits []hit
}

// hit is one request the proxy received.
type hit struct {
	at     time.Time
	method string
	path   string
	mode   mode
}

func newFaultProxy(target string, maxHang time.Duration) *faultProxy {
	u, err := url.Parse(target)
	if err != nil {
		panic(err)
	}
	p := &faultProxy{rp: httputil.NewSingleHostReverseProxy(u), m: pass, maxHg: maxHang, done: make(chan struct{})}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	return p
}

func (p *faultProxy) URL() string { return p.srv.URL }

func (p *faultProxy) set(m mode) {
	p.mu.Lock()
	p.m = m
	p.mu.Unlock()
}

func (p *faultProxy) mode() mode {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.m
}

// hitsSince returns the requests received at or after since.
func (p *faultProxy) hitsSince(since time.Time) []hit {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []hit
	for _, h := range p.hits {
		if !h.at.Before(since) {
			out = append(out, h)
		}
	}
	return out
}

func (p *faultProxy) close() {
	p.set(pass)
	p.closeOnce.Do(func() { close(p.done) })
	p.srv.CloseClientConnections()
	p.srv.Close()
}

func (p *faultProxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	m := p.m
	p.hits = append(p.hits, hit{at: time.Now(), method: r.Method, path: r.URL.Path, mode: m})
	p.mu.Unlock()
	switch m {
	case fail500:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprint(w, `{"status":500,"message":"injected outage"}`)
	case htmlLogin:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!DOCTYPE html><html><head><title>Log in</title></head><body><form action="/login" method="post"><input name="user"><input type="password" name="password"></form></body></html>`)
	case noResults:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"ok":true}`)
	case hang:
		// Read the body first: only then does the server notice that the
		// caller gave up and cancel r.Context().
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-p.done:
		case <-time.After(p.maxHg):
		}
		w.WriteHeader(http.StatusGatewayTimeout)
	default:
		p.rp.ServeHTTP(w, r)
	}
}
