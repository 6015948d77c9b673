package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
)

// Access says who may call a route.
type Access int

// The access rules (docs/architecture.md, "Requests").
const (
	// Anonymous routes need no token (a token, when sent, is still checked).
	Anonymous Access = iota
	// Member routes need a person of the router's application.
	Member
	// Reader routes need a person of the application or a Link credential
	// (the wiki's integration incomingToken reads and searches like a user).
	Reader
	// Admin routes need an administrator of the application.
	Admin
	// AdminOrOwnLink routes need an administrator, or the Link credential
	// whose scope is the route's {serviceId} or {applinkId} path value.
	AdminOrOwnLink
	// LinkOnly routes need a Link credential (the other application calling).
	LinkOnly
)

// HandlerFunc is the handler of an authenticated route: p is the caller,
// authenticated and allowed by the route's access rule before the handler
// runs. A returned error is answered by WriteError.
type HandlerFunc func(w http.ResponseWriter, r *http.Request, p auth.Principal) error

// AnonymousFunc is the handler of an Anonymous route, which runs with or
// without a caller (Caller tells which). A returned error is answered by
// WriteError.
type AnonymousFunc func(w http.ResponseWriter, r *http.Request) error

// Route is one declared route, for the route-agreement test and OpenAPI.
type Route struct {
	Method string
	Path   string
	Access Access
}

// Router is a route group: a net/http ServeMux whose routes carry access
// rules, answering JSON for every error including unknown routes and methods.
type Router struct {
	app    auth.App
	authn  *auth.Authenticator
	mux    *http.ServeMux
	routes []Route
	// access lists the access rules of each declared path, for the answer
	// to a method no route of the path takes.
	access map[string][]Access
	// Limiter, when set, limits each tenant's requests to the router's
	// application (429 with Retry-After past the limit).
	Limiter Limiter
	// Logger is the base logger; slog.Default when nil.
	Logger *slog.Logger
}

// Limiter decides whether a tenant may make one more request to an
// application now (shared/ratelimit: one limit for every instance).
type Limiter interface {
	// Allow counts one request of tenant to app; when the tenant is past
	// its limit it answers false and how long to wait.
	Allow(ctx context.Context, tenant string, app auth.App) (wait time.Duration, ok bool)
}

// NewRouter returns a Router for app that authenticates with authn.
func NewRouter(app auth.App, authn *auth.Authenticator) *Router {
	return &Router{app: app, authn: authn, mux: http.NewServeMux(), access: map[string][]Access{}}
}

// Handle declares "METHOD /path/{param}" with an access rule other than
// Anonymous: the router checks the body (size, content type), then
// authenticates the caller, applies the rule and hands the principal to h
// (413, 415, 401 or 403 without running h otherwise).
func (rt *Router) Handle(pattern string, access Access, h HandlerFunc, opts ...RouteOption) {
	if access == Anonymous {
		panic("httpapi: declare Anonymous routes with HandleAnonymous: " + pattern)
	}
	rt.handle(pattern, access, func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		if p == nil {
			return missingToken()
		}
		return h(w, r, *p)
	}, opts)
}

// HandleAnonymous declares "METHOD /path/{param}" that needs no token (a
// token, when sent, is still checked).
func (rt *Router) HandleAnonymous(pattern string, h AnonymousFunc, opts ...RouteOption) {
	rt.handle(pattern, Anonymous, func(w http.ResponseWriter, r *http.Request, _ *auth.Principal) error {
		return h(w, r)
	}, opts)
}

// A RouteOption adjusts how a route's request is checked before it runs.
type RouteOption func(*routeConfig)

type routeConfig struct {
	// accepts are the media types a non-empty body may have; nil accepts
	// any (the size limit still holds).
	accepts []string
}

// Accepts sets the media types a non-empty body of the route may have (415
// otherwise, before authentication). By default POST, PUT and PATCH routes
// accept application/json and other methods any body; Accepts() with no
// type accepts any body (a route that answers the same whatever is sent).
func Accepts(mediaTypes ...string) RouteOption {
	return func(c *routeConfig) { c.accepts = mediaTypes }
}

func (rt *Router) handle(pattern string, access Access, h func(http.ResponseWriter, *http.Request, *auth.Principal) error, opts []RouteOption) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		panic("httpapi: pattern needs a method: " + pattern)
	}
	var cfg routeConfig
	switch method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		cfg.accepts = []string{"application/json"}
	}
	for _, o := range opts {
		o(&cfg)
	}
	rt.routes = append(rt.routes, Route{Method: method, Path: path, Access: access})
	rt.access[path] = append(rt.access[path], access)
	rt.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := checkBody(r, cfg.accepts)
		var p *auth.Principal
		if err == nil {
			r, p, err = rt.authenticate(r, access)
		}
		if err == nil {
			err = h(w, r, p)
		}
		if err != nil {
			WriteError(w, r, err)
		}
	}))
}

// checkBody answers 413 for a body over MaxBody and 415 for a non-empty
// body whose media type the route does not take, before the caller is
// authenticated: an anonymous caller learns nothing but the limits, and a
// large body costs no token lookup. The body read here is put back for the
// handler.
func checkBody(r *http.Request, accepts []string) error {
	body, err := ReadBody(r)
	if err != nil {
		return err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	if len(body) == 0 || accepts == nil {
		return nil
	}
	return requireContentType(r, accepts...)
}

// Routes lists the declared routes in declaration order.
func (rt *Router) Routes() []Route { return slices.Clone(rt.routes) }

// Caller returns the principal of a request that sent a valid token. It is
// for Anonymous routes, whose answer may depend on who calls; the handlers
// of the other routes receive their principal.
func Caller(r *http.Request) (auth.Principal, bool) {
	return auth.FromContext(r.Context())
}

func missingToken() error {
	return apperr.Unauthorizedf("missing bearer token: send Authorization: Bearer <token>")
}

// authenticate resolves the caller once: the principal (nil on an
// Anonymous route called without a token) and the request carrying it.
func (rt *Router) authenticate(r *http.Request, access Access) (*http.Request, *auth.Principal, error) {
	token, hasToken := bearer(r)
	if access == Anonymous && !hasToken {
		return r, nil, nil
	}
	if !hasToken {
		return r, nil, missingToken()
	}
	if token == "" {
		// The header's value is never repeated: it may be a token.
		return r, nil, apperr.Unauthorizedf("the Authorization header must be \"Bearer <token>\": the Bearer scheme and one space before the token")
	}
	p, err := rt.authn.Authenticate(r.Context(), token)
	if err != nil {
		return r, nil, err
	}
	if p.App != rt.app {
		return r, nil, apperr.Unauthorizedf("this token belongs to the %s, not the %s", p.App, rt.app)
	}
	if p.Disabled {
		// The incoming credential of a DISABLED integration: known, but
		// refused on every route until the integration is ACTIVE again.
		return r, nil, apperr.Forbiddenf("integration '%s' is DISABLED", p.Scope)
	}
	ctx := auth.WithPrincipal(r.Context(), p)
	ctx = withLogAttrs(ctx, Logger(ctx), "tenant", p.Tenant, "user", p.User)
	noteCaller(ctx, p.Tenant, p.User)
	r = r.WithContext(ctx)
	if rt.Limiter != nil {
		if wait, ok := rt.Limiter.Allow(ctx, p.Tenant, rt.app); !ok {
			return r, nil, Throttled(wait)
		}
	}
	if !allowed(p, access, r) {
		return r, nil, apperr.Forbiddenf("this route needs %s", describe(access))
	}
	return r, &p, nil
}

func allowed(p auth.Principal, access Access, r *http.Request) bool {
	switch access {
	case Anonymous, Reader:
		return true
	case Member:
		return p.Kind == auth.User
	case Admin:
		return p.Kind == auth.User && p.Admin
	case AdminOrOwnLink:
		if p.Kind == auth.User {
			return p.Admin
		}
		scope := r.PathValue("serviceId") + r.PathValue("applinkId")
		return p.Kind == auth.Link && scope != "" && p.Scope == scope
	case LinkOnly:
		return p.Kind == auth.Link
	}
	return false
}

func describe(a Access) string {
	switch a {
	case Member:
		return "a user of this application"
	case Admin:
		return "an administrator"
	case AdminOrOwnLink:
		return "an administrator or this link's own credential"
	case LinkOnly:
		return "an application link credential"
	}
	return "a valid token"
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	if h == "" {
		return "", false
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", true // present but unusable: answered 401
	}
	return strings.TrimSpace(token), true
}

// ServeHTTP serves a request through the middleware chain: request id,
// logging, panic recovery, then the route (JSON 404/405 when none matches).
func (rt *Router) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	serve(rt.logger(), w, r, func(w http.ResponseWriter, r *http.Request) {
		// url.Query drops pairs it cannot decode; a parameter that silently
		// vanished (q=%ZZ would search everything) must be a 400 instead.
		vals, err := url.ParseQuery(r.URL.RawQuery)
		if err == nil {
			err = checkQueryText(vals)
		}
		if err != nil {
			WriteError(w, r, apperr.Invalidf("malformed query string: %v", err))
			return
		}
		if _, pattern := rt.mux.Handler(r); pattern == "" {
			rt.noRoute(w, r)
			return
		}
		rt.mux.ServeHTTP(w, r)
	})
}

// checkQueryText refuses parameter names and values that are not valid
// UTF-8 or hold control characters other than tab and line breaks (JSON
// bodies are held to UTF-8 too): q=%FF or a NUL inside a key would
// otherwise be searched for as if it were text.
func checkQueryText(vals url.Values) error {
	bad := func(s string) bool {
		return !utf8.ValidString(s) || strings.ContainsFunc(s, func(c rune) bool {
			return unicode.IsControl(c) && c != '\t' && c != '\n' && c != '\r'
		})
	}
	for name, vs := range vals {
		if bad(name) {
			return fmt.Errorf("a parameter name is not valid UTF-8 or holds a control character")
		}
		for _, v := range vs {
			if bad(v) {
				return fmt.Errorf("parameter %s is not valid UTF-8 or holds a control character", name)
			}
		}
	}
	return nil
}

func (rt *Router) logger() *slog.Logger {
	if rt.Logger != nil {
		return rt.Logger
	}
	return slog.Default()
}

// noRoute answers 405 with Allow when the path exists for other methods, 404
// otherwise; always JSON. A caller without a valid token learns neither:
// it is answered 401 first (on a path whose every route is anonymous, only
// a bad token is).
func (rt *Router) noRoute(w http.ResponseWriter, r *http.Request) {
	var allow []string
	var pattern string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch} {
		probe := r.Clone(context.WithoutCancel(r.Context()))
		probe.Method = m
		if _, p := rt.mux.Handler(probe); p != "" {
			allow = append(allow, m)
			_, pattern, _ = strings.Cut(p, " ")
		}
	}
	need := Reader
	if len(allow) > 0 && !slices.ContainsFunc(rt.access[pattern], func(a Access) bool { return a != Anonymous }) {
		need = Anonymous // a token, when sent, is still checked
	}
	if _, _, err := rt.authenticate(r, need); err != nil {
		WriteError(w, r, err)
		return
	}
	if len(allow) > 0 {
		WriteError(w, r, MethodNotAllowed(allow, "method %s is not allowed here", r.Method))
		return
	}
	WriteError(w, r, apperr.NotFoundf("no route for %s %s", r.Method, r.URL.Path))
}
