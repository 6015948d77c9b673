// Package httpapitest holds the test doubles and request helpers shared by
// the route-group tests: an in-memory token store with the development
// tokens, a function that sends one request through a handler, and the
// record of a committed baseline (baseline.go). It imports no reqtrace HTTP
// code, so every package's tests (httpapi's own included) can use it.
package httpapitest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/reqtrace/reqtrace/infra/devseed"
	"github.com/reqtrace/reqtrace/shared/apperr"
	"github.com/reqtrace/reqtrace/shared/auth"
)

// Tokens is an in-memory auth.Store keyed by plain token, for handler tests
// that do not need the real AuthTable.
type Tokens map[string]auth.Principal

var _ auth.Store = Tokens(nil)

// LookupToken returns the principal of the token whose hash is hash.
func (t Tokens) LookupToken(_ context.Context, hash string) (auth.Principal, error) {
	for tok, p := range t {
		if auth.HashToken(tok) == hash {
			return p, nil
		}
	}
	return auth.Principal{}, apperr.ErrNotFound
}

// PutToken is a no-op: tests declare their tokens up front.
func (t Tokens) PutToken(context.Context, string, auth.Principal) error { return nil }

// DeleteToken is a no-op.
func (t Tokens) DeleteToken(context.Context, string) error { return nil }

// LinkToken is the wiki integration credential DevTokens adds: a Link
// principal of tenant demo scoped to the integration "jira-1".
const LinkToken = "demo-link"

// DevTokens returns the development tokens of the local stack (README)
// (infra/devseed: demo-wiki-admin, demo-wiki-user, ..., acme-tracker-user)
// plus LinkToken.
func DevTokens() Tokens {
	t := Tokens{LinkToken: {Tenant: "demo", App: auth.Wiki, Kind: auth.Link, User: "link:jira-1", Scope: "jira-1"}}
	for _, d := range devseed.Tokens() {
		t[d.Token] = d.Principal
	}
	return t
}

// Do sends one request through h: a bearer token when token is not empty,
// and body with content type ctype when ctype is not empty.
func Do(h http.Handler, method, path, token, ctype, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
