package page

import (
	"html"
	"net/url"
	"regexp"
	"strings"
	"unicode"
)

// MaxLink bounds an emitted URL.
const MaxLink = 2048

// SafeLink reports whether s may be emitted as a link (an excerpt's href or
// src, a genericUrl shown by the tracker):
// a relative reference on the wiki's host ("/requirements/DEMO/REQ-1") or
// an absolute http(s) URL with a host and no user info, without control
// characters, spaces or backslashes. The forms a reader may decode before
// following it (HTML character references, percent-encoding) must not
// reach another scheme or host either: "javascript&colon;…", "/&#47;host",
// "%2F%2Fhost" and "java%0Ascript:…" are refused.
func SafeLink(s string) bool {
	if s == "" || len(s) > MaxLink || strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r == '\\' || unicode.IsControl(r) || !unicode.IsPrint(r)
	}) {
		return false
	}
	u, err := url.Parse(s)
	if err != nil || u.User != nil || u.Opaque != "" {
		return false
	}
	if u.Scheme != "" && ((u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
		return false
	}
	if u.Scheme == "" && u.Host != "" {
		return false // //host: another host
	}
	decoded := []string{s, html.UnescapeString(s)}
	if p, err := url.PathUnescape(s); err == nil {
		decoded = append(decoded, p, html.UnescapeString(p))
	}
	for _, d := range decoded {
		if !safeDecodedLink(d) {
			return false
		}
	}
	return true
}

// linkScheme matches the scheme of a URL, as a browser reads it once it
// has dropped tabs and newlines.
var linkScheme = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*):`)

// safeDecodedLink checks one decoded form of a link the way a browser
// would read it: leading spaces and control characters dropped, tabs and
// newlines removed, '\\' read as '/'. It must not start with two slashes,
// and a scheme must be http or https.
func safeDecodedLink(s string) bool {
	s = strings.TrimLeftFunc(s, func(r rune) bool { return r <= ' ' || unicode.IsControl(r) })
	s = strings.NewReplacer("\t", "", "\n", "", "\r", "", "\\", "/").Replace(s)
	if strings.HasPrefix(s, "//") {
		return false
	}
	m := linkScheme.FindStringSubmatch(s)
	if m == nil {
		return true
	}
	scheme := strings.ToLower(m[1])
	return scheme == "http" || scheme == "https"
}
