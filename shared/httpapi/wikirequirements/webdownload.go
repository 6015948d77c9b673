package wikirequirements

// The CSV downloads of the web pages (docs/guide.md, "In a browser"): GET
// /coverage/{spaceKey}/csv and GET /diff/{spaceKey}/csv, which the
// coverage and diff pages of WikiWeb link to, answer what the API's
// format=csv answers (303 to the export, export.go) for the browser's
// session instead of a bearer token. They live here, not in WikiWeb,
// because a function that renders html/template keeps every exported
// method of the S3 client the exports need (docs/benchmark-analysis.md,
// "Bootstrap sizes"); this one renders none.
//
// The session is checked as WikiWeb's pages check it (websession.Check):
// the cookie, its item's expiry and its token, the tenant's rate; without
// a session, 303 to the login with the download as next. Every answer
// carries the pages' security headers; refusals are the API's JSON errors.

import (
	"net/http"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/httpapi"
	"github.com/reqtrace/reqtrace/shared/httpapi/websession"
)

// registerDownloads declares the web pages' CSV downloads: anonymous to
// the router, which knows bearer tokens only; each checks the session.
func (h *Handler) registerDownloads(rt *httpapi.Router) {
	rt.HandleAnonymous("GET /coverage/{spaceKey}"+websession.DownloadSuffix, h.withSession(h.coverageDownload))
	rt.HandleAnonymous("GET /diff/{spaceKey}"+websession.DownloadSuffix, h.withSession(h.diffDownload))
}

// withSession runs a download for the request's session: without one it
// answers 303 to the login (websession.Check).
func (h *Handler) withSession(download httpapi.HandlerFunc) httpapi.AnonymousFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		websession.SecurityHeaders(w.Header())
		p, err := websession.Check(w, r, h.Sessions, h.Limiter)
		if err != nil || p == nil {
			return err
		}
		return download(w, r, *p)
	}
}

// coverageDownload answers the whole matrix of the coverage page as CSV:
// the parameters of GET /rest/reqs/1/coverage/{spaceKey}, which the page's
// link carries (columns, q).
func (h *Handler) coverageDownload(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	req, err := parseCoverage(r, p.Tenant)
	if err != nil {
		return err
	}
	return h.exportCoverage(w, r, p, req)
}

// diffDownload answers the whole diff of the diff page as CSV: the
// parameters of GET /rest/reqs/1/diff/{spaceKey}, which the page's link
// carries (from, to, q).
func (h *Handler) diffDownload(w http.ResponseWriter, r *http.Request, p auth.Principal) error {
	req, err := parseDiff(r, p.Tenant)
	if err != nil {
		return err
	}
	return h.exportDiff(w, r, p, req)
}
