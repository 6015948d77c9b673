// Package wikiweb is the WikiWeb route group: the wiki's server-rendered,
// read-only web pages (docs/guide.md, "Web pages"). It serves the login
// that turns a wiki token into a session cookie (session.go), the page of
// a requirement at the genericUrl every requirement carries
// (/requirements/{spaceKey}/{key}, requirement.go, with its traceability
// graph, graph.go), the wiki page a baseline's pageLink names
// (/pages/viewpage.action?pageId=, requirement.go), the diff of a space
// (/diff/{spaceKey}, diff.go), the coverage matrix of a space
// (/coverage/{spaceKey}, coverage.go), a home page and the stylesheet. The
// CSV downloads the diff and coverage pages link to are WikiRequirements'
// (/diff/{spaceKey}/csv, /coverage/{spaceKey}/csv): a function that renders
// no templates links the S3 client of the exports without keeping all of
// it (docs/benchmark-analysis.md, "Bootstrap sizes"). Pages are html/template templates (templates/) over one
// layout, with no JavaScript at all.
//
// Every route is declared Anonymous on the router (pages authenticate by
// session cookie, not by bearer token); a page without a session answers
// 303 to /login. A new page (coverage, diff) is one entry of the route
// table in Register, one template in templates/ and, for a page of a
// space, one entry of spaceNav.
package wikiweb

import (
	"context"
	"net/url"
	"time"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/websession"
	"github.com/reqtrace/reqtrace/shared/requirement"
	"github.com/reqtrace/reqtrace/shared/search"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// SessionManager opens, resolves and closes browser sessions
// (auth.Sessions implements it).
type SessionManager interface {
	// Open checks a token and opens a session: its id and expiry;
	// unauthorized for a token that is not a wiki user's.
	Open(ctx context.Context, token string) (id string, expires time.Time, err error)
	// Resolve returns who a session acts as and its expiry; unauthorized
	// for an unknown or expired session.
	Resolve(ctx context.Context, id string) (auth.Principal, time.Time, error)
	// Close ends a session.
	Close(ctx context.Context, id string) error
}

var _ SessionManager = (*auth.Sessions)(nil)

// Reader is what the pages need of the wiki service (wiki.Service
// implements it).
type Reader interface {
	// Requirement returns the current row (baseline 0) or a baseline copy:
	// invalid space or key, not found.
	Requirement(ctx context.Context, tenant, space, key string, baseline int) (*requirement.Requirement, error)
	// Linked returns the current rows linked to rows, both ways.
	Linked(ctx context.Context, tenant string, rows ...*requirement.Requirement) (map[requirement.ID]*requirement.Requirement, error)
	// PageRequirements returns a page and the requirements it defines,
	// without writing anything: invalid id, not found.
	PageRequirements(ctx context.Context, tenant, id string) (*wiki.Page, []*requirement.Requirement, error)
}

var _ Reader = (*wiki.Service)(nil)

// Searcher runs searches (search.Service implements it): the baselines
// holding a copy of a requirement.
type Searcher interface {
	// Search runs one search: invalid input.
	Search(ctx context.Context, req search.Request) (*search.Result, error)
}

var _ Searcher = (*search.Service)(nil)

// Handler serves the route group. Register works on a zero Handler (the
// route-agreement test lists its routes); serving needs every field but
// Limiter.
type Handler struct {
	Sessions     SessionManager
	Requirements Reader
	Search       Searcher
	Diff         Differ
	Coverage     Coverer
	// Limiter, when set, counts each page of a session against its
	// tenant's rate (429 past it), as the router does for the API.
	Limiter httpapi.Limiter
}

// Paths of the pages other pages link to.
const (
	loginPath  = websession.LoginPath
	logoutPath = "/logout"
	// homePath is the page a login without next leads to: who is signed
	// in, and a form to open a requirement by key.
	homePath       = "/requirements"
	stylesheetPath = "/static/reqtrace.css"
	// pageViewPath is the address a Confluence wiki gives a page by id,
	// which a baseline's pageLink names (baseline.Baseline.PageLink).
	pageViewPath = "/pages/viewpage.action"
)

// Register declares the routes of WikiWeb in template.yaml: the route
// table of the web pages. Every route is Anonymous to the router: page
// routes check the session themselves (h.page), the login and logout
// check the request's origin (session.go).
func (h *Handler) Register(rt *httpapi.Router) {
	form := httpapi.Accepts("application/x-www-form-urlencoded")
	rt.HandleAnonymous("GET "+loginPath, h.loginForm)
	rt.HandleAnonymous("POST "+loginPath, h.login, form)
	rt.HandleAnonymous("POST "+logoutPath, h.logout, form)
	rt.HandleAnonymous("GET "+stylesheetPath, stylesheet)
	rt.HandleAnonymous("GET "+homePath, h.page(h.home))
	rt.HandleAnonymous("GET /requirements/{spaceKey}/{key}", h.page(h.requirement))
	rt.HandleAnonymous("GET "+pageViewPath, h.page(h.pageView))
	rt.HandleAnonymous("GET /diff/{spaceKey}", h.page(h.diffSpace))
	rt.HandleAnonymous("GET /coverage/{spaceKey}", h.page(h.coverageSpace))
}

// navItem is one link of a space's navigation bar.
type navItem struct {
	Label, Href string
	Current     bool
}

// spacePages are the pages about a whole space, in the order of the
// navigation bar of every page of that space.
var spacePages = []struct{ label, prefix string }{{"Coverage", "/coverage/"}, {"Diff", "/diff/"}}

// spaceNav returns the navigation bar of a page about space; current is
// the label of the page shown.
func spaceNav(space, current string) []navItem {
	items := make([]navItem, 0, len(spacePages))
	for _, p := range spacePages {
		items = append(items, navItem{Label: p.label, Href: p.prefix + url.PathEscape(space), Current: p.label == current})
	}
	return items
}
