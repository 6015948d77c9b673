// Package websession is the session check of the wiki's web routes
// (docs/guide.md, "In a browser"): the session cookie, the check every
// page makes (a session, or 303 to the login with the page as next) and
// the security headers of their answers. It renders nothing, so that a
// function without templates (WikiRequirements, which serves the pages'
// CSV downloads) checks sessions exactly as WikiWeb's pages do:
// html/template would make that function's linker keep every exported
// method of its clients (docs/benchmark-analysis.md, "Bootstrap sizes").
package websession

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
)

// CookieName is the session cookie. Its value is the session's id: a
// random value whose hash names the session item; the token is never in
// it.
const CookieName = "reqtrace_session"

// LoginPath is the login form, where a route without a session leads.
const LoginPath = "/login"

// Resolver finds who a session acts as (auth.Sessions implements it).
type Resolver interface {
	// Resolve returns who a session acts as and its expiry; unauthorized
	// for an unknown or expired session.
	Resolve(ctx context.Context, id string) (auth.Principal, time.Time, error)
}

var _ Resolver = (*auth.Sessions)(nil)

// Check resolves the request's session and counts the request against
// its tenant's rate (limiter may be nil: no limit). Without a valid
// session (none, unknown, expired, its token revoked) it answers 303 to
// the login form with the route as next, clearing a stale cookie, and
// returns nil, nil. An error is for the caller to answer in its own form
// (an HTML page, JSON): a failed lookup (p nil), or 429 past the tenant's
// rate (p set, the caller may say who is signed in).
func Check(w http.ResponseWriter, r *http.Request, sessions Resolver, limiter httpapi.Limiter) (p *auth.Principal, err error) {
	c, err := r.Cookie(CookieName)
	if err == nil {
		who, _, err := sessions.Resolve(r.Context(), c.Value)
		if err == nil {
			return &who, throttle(r, who, limiter)
		}
		if e := apperr.As(err); e == nil || e.Code != apperr.Unauthorized {
			return nil, err
		}
		http.SetCookie(w, Cleared(r))
	}
	SecurityHeaders(w.Header())
	http.Redirect(w, r, LoginPath+"?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
	return nil, nil
}

// throttle applies the tenant's rate to a session's request, as the
// router does to a token's (the web routes are anonymous to the router).
func throttle(r *http.Request, p auth.Principal, limiter httpapi.Limiter) error {
	if limiter == nil {
		return nil
	}
	if wait, ok := limiter.Allow(r.Context(), p.Tenant, auth.Wiki); !ok {
		return httpapi.Throttled(wait)
	}
	return nil
}

// Cookie is the session cookie holding id until expires; an empty id
// deletes it. It is HttpOnly (no script reads it, there is none anyway),
// SameSite=Strict (no other site's page sends it, so no other site can
// post a form with it or start a download with it), and Secure when the
// page was asked over https (API Gateway always; the local stack's http
// does not).
func Cookie(r *http.Request, id string, expires time.Time) *http.Cookie {
	c := &http.Cookie{Name: CookieName, Value: id, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: Scheme(r) == "https"}
	if id == "" {
		c.MaxAge = -1
		return c
	}
	c.Expires = expires
	c.MaxAge = max(1, int(time.Until(expires).Seconds()))
	return c
}

// Cleared is the session cookie deleted: after a logout, or when the
// browser sent a session that is no more.
func Cleared(r *http.Request) *http.Cookie { return Cookie(r, "", time.Time{}) }

// Scheme is how the browser reached the page: API Gateway (and the local
// gateway) say it in X-Forwarded-Proto.
func Scheme(r *http.Request) string {
	if p := strings.ToLower(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto"))); p == "https" || p == "http" {
		return p
	}
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

// contentSecurityPolicy is sent with every answer of a web route: no
// script of any kind, styles from the served stylesheet only (the graph is
// inline SVG styled by classes), forms posting to the wiki itself, never
// framed. Images of excerpts may come from the wiki or any https host (the
// sanitizer keeps http(s) and relative image sources).
const contentSecurityPolicy = "default-src 'none'; script-src 'none'; style-src 'self'; img-src 'self' https:; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// SecurityHeaders are the headers of every answer of a web route
// (docs/guide.md, "In a browser"): pages, redirects and refusals.
func SecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// DownloadSuffix ends the address of the CSV download of a page over a
// space: the coverage page /coverage/DEMO links to /coverage/DEMO/csv, with
// the page's parameters. WikiWeb renders the pages; WikiRequirements, which
// holds the exports of the API's format=csv, serves the downloads.
const DownloadSuffix = "/csv"
