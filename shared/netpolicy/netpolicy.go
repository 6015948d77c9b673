// Package netpolicy says which URLs and which addresses reqtrace may call
// when one side calls the other (a tracker's rpcUrl from the wiki, a wiki's
// applink url from the tracker). It is pure, without I/O: the domain
// packages use it to refuse a URL when it is saved, and shared/outbound to
// refuse a request, a redirect or a connection to an address after DNS
// resolution. docs/operations.md ("Security model") states the rules:
//
//   - a URL is absolute http or https, with a host, a port in 1–65535 when
//     one is given, no user info and no control characters or spaces;
//   - link-local (169.254.0.0/16, fe80::/10), unspecified (0.0.0.0/8, ::),
//     multicast and broadcast addresses are never called;
//   - loopback and private addresses (127.0.0.0/8, ::1, 10.0.0.0/8,
//     172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, fc00::/7, fec0::/10, and
//     the name localhost) are called only when the operator allows them
//     (ALLOW_PRIVATE_TARGETS=true, the local stack).
//
// IPv4 addresses embedded in IPv6 ones (IPv4-mapped, IPv4-compatible, NAT64
// 64:ff9b::/96, 6to4 2002::/16) are judged as the IPv4 address they reach.
package netpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
)

// Policy is what an operator allows: the zero Policy refuses loopback and
// private targets.
type Policy struct {
	// AllowPrivate allows loopback and private targets
	// (ALLOW_PRIVATE_TARGETS=true).
	AllowPrivate bool
}

// RefusedError is a URL or an address the policy refuses. Reason is always
// the policy's own words, never a remote answer, so it may be shown to a
// caller; Target (the address or URL part refused) is for logs and for the
// answer to whoever typed it.
type RefusedError struct {
	Target string
	Reason string
}

func (e *RefusedError) Error() string {
	if e.Target == "" {
		return e.Reason
	}
	return e.Target + ": " + e.Reason
}

func refused(target, format string, args ...any) *RefusedError {
	return &RefusedError{Target: target, Reason: fmt.Sprintf(format, args...)}
}

// The reasons an address is refused.
const (
	reasonNever   = "link-local, unspecified, multicast and broadcast addresses are never called"
	reasonPrivate = "loopback and private addresses are called only when the operator sets ALLOW_PRIVATE_TARGETS=true"
)

// ParseURL parses raw and checks it with CheckURL; control characters and
// spaces anywhere are refused first (url.Parse would read some of them).
func (p Policy) ParseURL(raw string) (*url.URL, error) {
	for _, r := range raw {
		if r <= ' ' || r == 0x7f || (r >= 0x80 && r <= 0x9f) {
			return nil, refused("", "the URL must not contain spaces or control characters")
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, refused("", "not a URL")
	}
	if err := p.CheckURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

// CheckURL checks a URL about to be called (or saved to be called): http or
// https, a host, a port in 1–65535 when one is given, no user info, and a
// host that is either a DNS name or an address CheckAddr allows. A DNS name
// is checked again, address by address, when it is resolved (shared/outbound).
func (p Policy) CheckURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return refused("", "the URL must be an absolute http or https URL")
	}
	if u.Opaque != "" || u.Host == "" {
		return refused("", "the URL must name a host")
	}
	if u.User != nil {
		return refused("", "the URL must not carry user info (credentials belong in the token)")
	}
	host, port := u.Hostname(), u.Port()
	if port != "" || strings.HasSuffix(u.Host, ":") {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 || port[0] == '0' {
			return refused("", "the port must be a number from 1 to 65535")
		}
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return refused(host, "an address with a zone is never called")
		}
		return p.CheckAddr(a)
	}
	if strings.HasPrefix(u.Host, "[") {
		return refused("", "not an IPv6 address")
	}
	return p.checkName(host)
}

// checkName checks a DNS name: ASCII letters, digits, '-' and '.', labels
// of 1 to 63 characters, at most 253 in all. A name whose labels are all
// numbers (such as 2130706433, 0x7f.1 or 127.1, which some resolvers read
// as addresses) is refused: addresses are written in dotted decimal.
// localhost and its subdomains are loopback.
func (p Policy) checkName(host string) error {
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	if name == "" || len(name) > 253 {
		return refused("", "the host name must be 1 to 253 characters")
	}
	numeric := true
	for label := range strings.SplitSeq(name, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return refused("", "invalid host name")
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return refused("", "the host name must be ASCII letters, digits, '-' and '.' (use the punycode form)")
			}
		}
		if !isNumber(label) {
			numeric = false
		}
	}
	if numeric {
		return refused(host, "write an IPv4 address in dotted decimal (a.b.c.d)")
	}
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return p.refusePrivate(host)
	}
	return nil
}

// isNumber reports whether label reads as a number in decimal, octal or
// hexadecimal (0x...).
func isNumber(label string) bool {
	s := strings.TrimPrefix(label, "0x")
	if s == "" {
		return label == "0x"
	}
	hex := s != label
	for _, c := range s {
		if !(c >= '0' && c <= '9' || hex && c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (p Policy) refusePrivate(target string) error {
	if p.AllowPrivate {
		return nil
	}
	return refused(target, "%s", reasonPrivate)
}

var (
	thisNetwork = netip.MustParsePrefix("0.0.0.0/8")
	broadcast   = netip.MustParseAddr("255.255.255.255")
	cgnat       = netip.MustParsePrefix("100.64.0.0/10")
	siteLocal   = netip.MustParsePrefix("fec0::/10")
	v4Compat    = netip.MustParsePrefix("::/96")
	nat64       = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour   = netip.MustParsePrefix("2002::/16")
)

// embeddedIPv4 returns the IPv4 address an IPv6 address reaches through
// IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96) or 6to4 (2002::/16)
// addressing.
func embeddedIPv4(a netip.Addr) (netip.Addr, bool) {
	b := a.As16()
	switch {
	case !a.Is6() || a.IsUnspecified() || a.IsLoopback():
	case v4Compat.Contains(a), nat64.Contains(a):
		return netip.AddrFrom4([4]byte(b[12:16])), true
	case sixToFour.Contains(a):
		return netip.AddrFrom4([4]byte(b[2:6])), true
	}
	return netip.Addr{}, false
}

// CheckAddr checks one address a connection is about to be made to.
func (p Policy) CheckAddr(a netip.Addr) error {
	if !a.IsValid() {
		return refused("", "not an IP address")
	}
	a = a.Unmap().WithZone("")
	if v4, ok := embeddedIPv4(a); ok {
		if err := p.CheckAddr(v4); err != nil {
			return refused(a.String(), "%s", err.(*RefusedError).Reason)
		}
	}
	switch {
	case a.IsUnspecified(), thisNetwork.Contains(a), a == broadcast, a.IsMulticast(),
		a.IsLinkLocalUnicast(), a.IsLinkLocalMulticast(), a.IsInterfaceLocalMulticast():
		return refused(a.String(), "%s", reasonNever)
	case a.IsLoopback(), a.IsPrivate(), cgnat.Contains(a), siteLocal.Contains(a):
		return p.refusePrivate(a.String())
	}
	return nil
}

// ErrTooManyRedirects is a call that was redirected more than the client
// allows.
var ErrTooManyRedirects = errors.New("too many redirects")

// TooLargeError is an answer longer than the client reads.
type TooLargeError struct{ Limit int64 }

func (e *TooLargeError) Error() string {
	if e.Limit%(1<<20) == 0 {
		return fmt.Sprintf("the answer is larger than %d MiB", e.Limit>>20)
	}
	return fmt.Sprintf("the answer is larger than %d bytes", e.Limit)
}

// Describe says why a call failed in words that may be shown to a caller:
// the policy's refusal, a timeout, an answer too large, too many redirects,
// a name that does not resolve, a refused or failed connection. It never
// repeats a transport error's text, which can hold addresses a name
// resolved to, a redirect's target or a remote certificate's names.
func Describe(err error) string {
	var re *RefusedError
	var tl *TooLargeError
	var dns *net.DNSError
	var ne net.Error
	switch {
	case err == nil:
		return ""
	case errors.As(err, &re):
		return "refused: " + re.Reason
	case errors.As(err, &tl):
		return tl.Error()
	case errors.Is(err, ErrTooManyRedirects):
		return ErrTooManyRedirects.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "no answer in time"
	case errors.Is(err, context.Canceled):
		return "the call was cancelled"
	case errors.As(err, &dns):
		return "the host name does not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	}
	return "connection failed"
}
