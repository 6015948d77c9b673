// Package outbound builds the one HTTP client reqtrace uses to call the
// other side (the wiki's deliveries to a tracker's rpcUrl, the tracker's
// calls to a wiki's applink url). The client enforces shared/netpolicy on
// every call:
//
//   - each request, the first and every redirect, is checked (scheme, host,
//     port, no user info, literal addresses) before it is sent, and at most
//     MaxRedirects redirects are followed;
//   - each connection's address is checked in the dialer's Control function,
//     after DNS resolution, so a name that resolves (or re-resolves: DNS
//     rebinding) to a refused address is refused too;
//   - no proxy is taken from the environment (HTTP_PROXY and friends): a
//     proxy would make the address checked the proxy's;
//   - a call, answer included, takes at most Timeout (HTTP_TIMEOUT);
//   - an answer's body is read up to MaxBody bytes: reading more fails with
//     a *netpolicy.TooLargeError.
//
// netpolicy.Describe turns the errors of this client into words a caller
// may see.
package outbound

import (
	"io"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"github.com/reqtrace/reqtrace/shared/config"
	"github.com/reqtrace/reqtrace/shared/netpolicy"
)

// Defaults of Options.
const (
	DefaultTimeout      = 10 * time.Second
	DefaultMaxBody      = 1 << 20
	DefaultMaxRedirects = 3
)

// Options describe a client.
type Options struct {
	// Timeout bounds a whole call (DefaultTimeout when zero or negative).
	Timeout time.Duration
	// AllowPrivate allows loopback and private targets
	// (ALLOW_PRIVATE_TARGETS=true).
	AllowPrivate bool
	// MaxBody is the longest answer read (DefaultMaxBody when zero).
	MaxBody int64
	// MaxRedirects is how many redirects a call follows
	// (DefaultMaxRedirects when zero).
	MaxRedirects int
	// Resolver resolves host names (net.DefaultResolver when nil); tests
	// point it at a fake DNS.
	Resolver *net.Resolver
}

// FromConfig returns the client of a function's configuration: HTTP_TIMEOUT
// and ALLOW_PRIVATE_TARGETS, answers of at most maxBody bytes.
func FromConfig(c config.Config, maxBody int64) *http.Client {
	return New(Options{Timeout: c.HTTPTimeout, AllowPrivate: c.AllowPrivateTargets, MaxBody: maxBody})
}

// New returns a client that calls only what the policy allows.
func New(o Options) *http.Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBody <= 0 {
		o.MaxBody = DefaultMaxBody
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	policy := netpolicy.Policy{AllowPrivate: o.AllowPrivate}
	dialer := &net.Dialer{
		Timeout:   o.Timeout,
		KeepAlive: 30 * time.Second,
		Resolver:  o.Resolver,
		// Control runs for every connection attempt, with the address
		// the name resolved to.
		Control: func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || ap.Port() == 0 {
				return &netpolicy.RefusedError{Target: address, Reason: "not an address and port to connect to"}
			}
			return policy.CheckAddr(ap.Addr())
		},
	}
	transport := &http.Transport{
		Proxy:                  nil, // never from the environment
		DialContext:            dialer.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    o.Timeout,
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	return &http.Client{
		Transport: &guard{next: transport, policy: policy, maxBody: o.MaxBody},
		Timeout:   o.Timeout,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > o.MaxRedirects {
				return netpolicy.ErrTooManyRedirects
			}
			return policy.CheckURL(req.URL)
		},
	}
}

// guard checks each request's URL before it is sent and bounds its answer.
type guard struct {
	next    http.RoundTripper
	policy  netpolicy.Policy
	maxBody int64
}

func (g *guard) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := g.policy.CheckURL(req.URL); err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	resp, err := g.next.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > g.maxBody {
		_ = resp.Body.Close()
		return nil, &netpolicy.TooLargeError{Limit: g.maxBody}
	}
	resp.Body = &limitedBody{ReadCloser: resp.Body, left: g.maxBody, limit: g.maxBody}
	return resp, nil
}

// limitedBody fails a read that goes past limit bytes.
type limitedBody struct {
	io.ReadCloser
	left, limit int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left < 0 {
		return 0, &netpolicy.TooLargeError{Limit: b.limit}
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1] // one byte more than allowed tells a longer answer
	}
	n, err := b.ReadCloser.Read(p)
	if int64(n) > b.left {
		n, b.left = int(b.left), -1
		return n, &netpolicy.TooLargeError{Limit: b.limit}
	}
	b.left -= int64(n)
	return n, err
}
