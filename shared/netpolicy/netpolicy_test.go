package netpolicy_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/reqtrace/reqtrace/shared/netpolicy"
)

// verdict is what a policy says of a URL.
type verdict int

const (
	allowed      verdict = iota
	privateOnly          // allowed only with AllowPrivate
	neverAllowed         // refused whatever the policy
)

var urls = []struct {
	url  string
	want verdict
}{
	{"https://tracker.example.com", allowed},
	{"http://tracker.example.com:8080/base/", allowed},
	{"HTTPS://Tracker.Example.COM/", allowed},
	{"https://tracker.example.com.", allowed},
	{"https://93.184.215.14/", allowed},
	{"https://[2606:2800:21f:cb07:6820:80da:af6b:8b2c]:443/", allowed},
	{"https://xn--bcher-kva.example/", allowed},
	{"https://tracker.example.com:65535", allowed},
	{"https://1.example.com", allowed},

	// Loopback and private ranges: refused unless allowed.
	{"http://127.0.0.1:3001", privateOnly},
	{"http://127.8.9.10/", privateOnly},
	{"http://[::1]:3000/", privateOnly},
	{"http://localhost:3000", privateOnly},
	{"http://LOCALHOST./", privateOnly},
	{"http://wiki.localhost/", privateOnly},
	{"http://10.1.2.3/", privateOnly},
	{"http://172.16.0.1/", privateOnly},
	{"http://172.31.255.255/", privateOnly},
	{"http://192.168.1.1/", privateOnly},
	{"http://100.64.0.1/", privateOnly},
	{"http://100.127.255.254/", privateOnly},
	{"http://[fc00::1]/", privateOnly},
	{"http://[fd12:3456::1]/", privateOnly},
	{"http://[fec0::1]/", privateOnly},
	{"http://[::ffff:127.0.0.1]/", privateOnly},
	{"http://[::ffff:10.0.0.1]/", privateOnly},
	{"http://[64:ff9b::a00:1]/", privateOnly},
	{"http://[2002:7f00:1::]/", privateOnly},
	{"http://[::127.0.0.1]/", privateOnly},

	// Near the private ranges but public.
	{"http://172.32.0.1/", allowed},
	{"http://100.128.0.1/", allowed},
	{"http://11.0.0.1/", allowed},
	{"http://[64:ff9b::808:808]/", allowed},

	// Never: link-local, unspecified, multicast, broadcast.
	{"http://169.254.169.254/latest/meta-data/", neverAllowed},
	{"http://169.254.0.1/", neverAllowed},
	{"http://[fe80::1]/", neverAllowed},
	{"http://[fe80::1%25eth0]/", neverAllowed},
	{"http://[::ffff:169.254.169.254]/", neverAllowed},
	{"http://[::ffff:a9fe:a9fe]/", neverAllowed},
	{"http://[64:ff9b::a9fe:a9fe]/", neverAllowed},
	{"http://[2002:a9fe:a9fe::]/", neverAllowed},
	{"http://0.0.0.0:3000/", neverAllowed},
	{"http://0.1.2.3/", neverAllowed},
	{"http://[::]/", neverAllowed},
	{"http://224.0.0.1/", neverAllowed},
	{"http://239.255.255.250/", neverAllowed},
	{"http://[ff02::1]/", neverAllowed},
	{"http://255.255.255.255/", neverAllowed},

	// Addresses in other spellings than dotted decimal.
	{"http://2130706433/", neverAllowed},
	{"http://0x7f.1/", neverAllowed},
	{"http://127.1/", neverAllowed},
	{"http://0177.0.0.1/", neverAllowed},
	{"http://0xa9fea9fe/", neverAllowed},
	{"http://169.254.169.254.0/", neverAllowed},

	// Not an http(s) URL with a host, a port in range, no user info.
	{"", neverAllowed},
	{"tracker.example.com", neverAllowed},
	{"/rest/reqs/1/api", neverAllowed},
	{"//tracker.example.com/", neverAllowed},
	{"ftp://tracker.example.com/", neverAllowed},
	{"file:///etc/passwd", neverAllowed},
	{"javascript:alert(1)", neverAllowed},
	{"gopher://127.0.0.1:6379/_INFO", neverAllowed},
	{"http:tracker.example.com", neverAllowed},
	{"http:///path", neverAllowed},
	{"https://user:secret@tracker.example.com/", neverAllowed},
	{"https://user@tracker.example.com/", neverAllowed},
	{"https://tracker.example.com:0/", neverAllowed},
	{"https://tracker.example.com:65536/", neverAllowed},
	{"https://tracker.example.com:99999999999999999999/", neverAllowed},
	{"https://tracker.example.com:/", neverAllowed},
	{"https://tracker.example.com:080/", neverAllowed},
	{"https://tracker.example.com:http/", neverAllowed},
	{"https://[::1/", neverAllowed},
	{"https://[tracker.example.com]/", neverAllowed},

	// Control characters, spaces and odd host names.
	{"https://tracker.example.com/\x00", neverAllowed},
	{"https://tracker.example.com/a\tb", neverAllowed},
	{"https://tracker.example.com/a b", neverAllowed},
	{"https://tracker.example.com\r\nHost: evil/", neverAllowed},
	{"https://tracker.example.com/\u0085", neverAllowed},
	{"\x7fhttps://tracker.example.com/", neverAllowed},
	{"https://bücher.example/", neverAllowed},
	{"https://tracker_1.example.com/", neverAllowed},
	{"https://-tracker.example.com/", neverAllowed},
	{"https://tracker..example.com/", neverAllowed},
	{"https://" + strings.Repeat("a", 64) + ".example.com/", neverAllowed},
	{"https://tracker.example.com%2F@127.0.0.1/", neverAllowed},
}

func TestParseURL(t *testing.T) {
	t.Parallel()
	strict, open := netpolicy.Policy{}, netpolicy.Policy{AllowPrivate: true}
	for _, tc := range urls {
		_, errStrict := strict.ParseURL(tc.url)
		_, errOpen := open.ParseURL(tc.url)
		want := [2]bool{tc.want == allowed, tc.want != neverAllowed}
		if got := [2]bool{errStrict == nil, errOpen == nil}; got != want {
			t.Errorf("%q: allowed (strict, private allowed) = %v, want %v (%v; %v)", tc.url, got, want, errStrict, errOpen)
		}
		for _, err := range []error{errStrict, errOpen} {
			var re *netpolicy.RefusedError
			if err != nil && (!errors.As(err, &re) || re.Reason == "") {
				t.Errorf("%q: %v is not a RefusedError with a reason", tc.url, err)
			}
		}
	}
}

// The refusal of a private address names the setting that allows it, and
// that of a link-local one says it is never allowed.
func TestReasons(t *testing.T) {
	t.Parallel()
	_, err := netpolicy.Policy{}.ParseURL("http://127.0.0.1:3000")
	if err == nil || !strings.Contains(err.Error(), "ALLOW_PRIVATE_TARGETS=true") || !strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("private: %v", err)
	}
	_, err = netpolicy.Policy{AllowPrivate: true}.ParseURL("http://169.254.169.254/")
	if err == nil || !strings.Contains(err.Error(), "never") {
		t.Errorf("link-local: %v", err)
	}
}

func TestCheckAddr(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		addr   string
		strict bool // allowed by the zero policy
		open   bool // allowed with AllowPrivate
	}{
		{"93.184.215.14", true, true},
		{"127.0.0.1", false, true},
		{"::1", false, true},
		{"::ffff:192.168.0.1", false, true},
		{"100.64.1.1", false, true},
		{"169.254.169.254", false, false},
		{"fe80::1%eth0", false, false},
		{"0.0.0.0", false, false},
		{"::", false, false},
		{"255.255.255.255", false, false},
		{"ff05::2", false, false},
		{"2001:db8::1", true, true},
	} {
		a := netip.MustParseAddr(tc.addr)
		if got := (netpolicy.Policy{}.CheckAddr(a) == nil); got != tc.strict {
			t.Errorf("%s strict: allowed %v", tc.addr, got)
		}
		if got := (netpolicy.Policy{AllowPrivate: true}.CheckAddr(a) == nil); got != tc.open {
			t.Errorf("%s private allowed: allowed %v", tc.addr, got)
		}
	}
	if (netpolicy.Policy{AllowPrivate: true}).CheckAddr(netip.Addr{}) == nil {
		t.Error("the zero address is allowed")
	}
}

// Describe never repeats a transport error's text.
func TestDescribe(t *testing.T) {
	t.Parallel()
	secret := "10.9.8.7 internal.corp"
	wrap := func(err error) error {
		return &url.Error{Op: "Get", URL: "http://" + secret, Err: &net.OpError{Op: "dial", Net: "tcp", Err: err}}
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{wrap(&netpolicy.RefusedError{Target: secret, Reason: "r"}), "refused: r"},
		{wrap(&netpolicy.TooLargeError{Limit: 1 << 20}), "the answer is larger than 1 MiB"},
		{wrap(context.DeadlineExceeded), "no answer in time"},
		{wrap(&net.DNSError{Name: secret, Err: "no such host", IsNotFound: true}), "the host name does not resolve"},
		{wrap(syscall.ECONNREFUSED), "connection refused"},
		{wrap(syscall.ECONNRESET), "connection reset"},
		{wrap(context.Canceled), "the call was cancelled"},
		{fmt.Errorf("x: %w", netpolicy.ErrTooManyRedirects), "too many redirects"},
		{wrap(errors.New("x509: certificate is valid for " + secret)), "connection failed"},
		{nil, ""},
	} {
		if got := netpolicy.Describe(tc.err); got != tc.want || strings.Contains(got, "internal") {
			t.Errorf("Describe(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// FuzzParseURL checks, for any string, that a URL the strict policy
// accepts is accepted with private targets allowed too, is an absolute
// http(s) URL with a host, no user info, no control characters or spaces,
// a port in range, and a host that is not a refused address; and that
// parsing what it accepted again gives the same verdict.
func FuzzParseURL(f *testing.F) {
	for _, tc := range urls {
		f.Add(tc.url)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		strict, open := netpolicy.Policy{}, netpolicy.Policy{AllowPrivate: true}
		u, err := strict.ParseURL(raw)
		uo, erro := open.ParseURL(raw)
		if err != nil {
			var re *netpolicy.RefusedError
			if !errors.As(err, &re) || re.Reason == "" {
				t.Fatalf("%q: error %v is not a RefusedError with a reason", raw, err)
			}
			if erro == nil && uo.Hostname() != "" {
				// Allowed only with private targets: the strict policy
				// must have refused it for its host.
				if !strings.Contains(err.Error(), "ALLOW_PRIVATE_TARGETS") {
					t.Fatalf("%q: open policy allows what the strict one refuses for %v", raw, err)
				}
			}
			return
		}
		if erro != nil {
			t.Fatalf("%q: strict policy allows what the open one refuses (%v)", raw, erro)
		}
		if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" || u.User != nil || u.Opaque != "" {
			t.Fatalf("%q accepted as %#v", raw, u)
		}
		if strings.ContainsFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }) {
			t.Fatalf("%q accepted with a control character or space", raw)
		}
		if p := u.Port(); p != "" {
			var n int
			if _, err := fmt.Sscan(p, &n); err != nil || n < 1 || n > 65535 {
				t.Fatalf("%q accepted with port %q", raw, p)
			}
		}
		if a, err := netip.ParseAddr(u.Hostname()); err == nil {
			a = a.Unmap()
			if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsUnspecified() || a.IsMulticast() {
				t.Fatalf("%q accepted with address %s", raw, a)
			}
		} else if h := strings.ToLower(strings.TrimSuffix(u.Hostname(), ".")); h == "localhost" || strings.HasSuffix(h, ".localhost") {
			t.Fatalf("%q accepted with host %s", raw, h)
		}
		if _, err := strict.ParseURL(u.String()); err != nil {
			t.Fatalf("%q accepted, its re-encoding %q refused: %v", raw, u.String(), err)
		}
	})
}
