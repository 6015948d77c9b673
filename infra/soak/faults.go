package soak

import (
	"context"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ThrottleProxy stands in front of DynamoDB Local on loopback and answers
// ProvisionedThroughputExceededException, as DynamoDB does, for a share of
// the requests it receives; the rest go through unchanged. The functions
// are pointed at it through AWS_ENDPOINT_URL_DYNAMODB, so no test code runs
// inside them.
//
// Only first attempts are throttled (the SDK's amz-sdk-request header says
// "attempt=1"): the SDK's retry of a throttled call always reaches DynamoDB
// Local. The retries and the service's backoff are exercised, and a 500
// that follows a throttle is then a defect, not an exhausted retry budget.
type ThrottleProxy struct {
	URL string

	srv     *http.Server
	proxy   *httputil.ReverseProxy
	share   atomic.Uint64 // the share in millionths, 0 = off
	mu      sync.Mutex
	rng     *rand.Rand
	injects atomic.Int64
	passed  atomic.Int64
}

// NewThrottleProxy listens on 127.0.0.1 and forwards to target.
func NewThrottleProxy(target string, seed uint64) (*ThrottleProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &ThrottleProxy{URL: "http://" + ln.Addr().String(), rng: rand.New(rand.NewPCG(seed, 0x7411))}
	p.proxy = httputil.NewSingleHostReverseProxy(u)
	p.proxy.Transport = &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	// A caller killed mid-request cancels it: not worth a log line.
	p.proxy.ErrorLog = log.New(io.Discard, "", 0)
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// SetShare sets the share (0 to 1) of first attempts answered with a
// throttling error; 0 turns the fault off.
func (p *ThrottleProxy) SetShare(share float64) {
	p.share.Store(uint64(share * 1e6))
}

// Injected counts the throttling errors answered so far.
func (p *ThrottleProxy) Injected() int64 { return p.injects.Load() }

// ServeHTTP throttles or forwards one request.
func (p *ThrottleProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p.throttle(r) {
		_, _ = io.Copy(io.Discard, r.Body)
		p.injects.Add(1)
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		w.Header().Set("x-amzn-RequestId", "soak-throttle")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",`+
			`"message":"The level of configured provisioned throughput for the table was exceeded. (injected by the soak harness)"}`)
		return
	}
	p.passed.Add(1)
	p.proxy.ServeHTTP(w, r)
}

func (p *ThrottleProxy) throttle(r *http.Request) bool {
	share := float64(p.share.Load()) / 1e6
	if share <= 0 || !firstAttempt(r.Header.Get("amz-sdk-request")) {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rng.Float64() < share
}

// firstAttempt reads the SDK's "attempt=1; max=3" header; a request without
// it (another client) counts as a first attempt.
func firstAttempt(h string) bool {
	for part := range strings.SplitSeq(h, ";") {
		if k, v, ok := strings.Cut(strings.TrimSpace(part), "="); ok && k == "attempt" {
			return v == "1"
		}
	}
	return true
}

// Close stops the proxy.
func (p *ThrottleProxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return p.srv.Shutdown(ctx)
}

// TrackerMode is how the faulty tracker proxy answers.
type TrackerMode int32

// The tracker proxy's modes.
const (
	TrackerOK   TrackerMode = iota // forward to the tracker
	Tracker500                     // 500 with a JSON body
	TrackerHTML                    // 200 with an HTML login page, as a proxy in front of a tracker may
	TrackerHang                    // hold the request for HangFor, then 504
)

func (m TrackerMode) String() string {
	return [...]string{"ok", "tracker-500", "tracker-html", "tracker-hang"}[m]
}

// TrackerProxy is the URL an integration's rpcUrl names: it forwards to the
// real tracker, or misbehaves as its mode says.
type TrackerProxy struct {
	URL     string
	HangFor time.Duration

	srv   *http.Server
	proxy *httputil.ReverseProxy
	mode  atomic.Int32
	stop  chan struct{}
	once  sync.Once
}

// NewTrackerProxy listens on 127.0.0.1 and forwards to target.
func NewTrackerProxy(target string, hangFor time.Duration) (*TrackerProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &TrackerProxy{URL: "http://" + ln.Addr().String(), HangFor: hangFor, stop: make(chan struct{})}
	p.proxy = httputil.NewSingleHostReverseProxy(u)
	p.proxy.ErrorLog = log.New(io.Discard, "", 0)
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// SetMode changes how the next requests are answered.
func (p *TrackerProxy) SetMode(m TrackerMode) { p.mode.Store(int32(m)) }

// ServeHTTP forwards or misbehaves.
func (p *TrackerProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch TrackerMode(p.mode.Load()) {
	case Tracker500:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `{"message":"injected tracker failure"}`)
	case TrackerHTML:
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = io.WriteString(w, "<!DOCTYPE html><html><body><h1>Log in</h1><form></form></body></html>")
	case TrackerHang:
		select {
		case <-time.After(p.HangFor):
		case <-r.Context().Done():
		case <-p.stop:
		}
		w.WriteHeader(http.StatusGatewayTimeout)
	default:
		p.proxy.ServeHTTP(w, r)
	}
}

// Close stops the proxy, releasing hanging requests.
func (p *TrackerProxy) Close() error {
	p.once.Do(func() { close(p.stop) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	return p.srv.Shutdown(ctx)
}
