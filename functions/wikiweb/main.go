// Command wikiweb is the WikiWeb Lambda: the wiki's read-only web pages
// (shared/httpapi/wikiweb): the login that turns a wiki token into a
// session cookie (GET and POST /login, POST /logout), the requirement page
// at every requirement's genericUrl (GET /requirements/{spaceKey}/{key}),
// the page a baseline's pageLink names (GET /pages/viewpage.action), the
// diff and coverage pages of a space (GET /diff/{spaceKey}, GET
// /coverage/{spaceKey}), the home page (GET /requirements) and the
// stylesheet. The pages' CSV downloads are WikiRequirements': this
// function links no S3 client, which html/template's reflection would make
// it keep whole (docs/benchmark-analysis.md, "Bootstrap sizes").
//
// Trigger: the WikiApi HTTP API (payload 2.0), beside the JSON API at the
// same base URL. Environment: WIKI_TABLE, AUTH_TABLE (required);
// LOG_LEVEL, AUTH_CACHE_TTL, TENANT_RATE, SESSION_TTL (default 8h). Reads
// WIKI_TABLE only; writes session items (SESSION#...) and the rate limit's
// window counters in AUTH_TABLE.
package main

import (
	"context"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/coverage"
	"github.com/reqtrace/reqtrace/shared/diff"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikiweb"
	"github.com/reqtrace/reqtrace/shared/lambdaapp"
	"github.com/reqtrace/reqtrace/shared/search"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

func main() {
	if err := run(context.Background()); err != nil {
		lambdaapp.Exit(err)
	}
}

func run(ctx context.Context) error {
	deps, err := lambdaapp.Setup(ctx, "WIKI_TABLE", "AUTH_TABLE")
	if err != nil {
		return err
	}
	requirements := wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(deps.DynamoDB, deps.Config.WikiTable)})
	searchStore := wikitable.NewSearchStore(deps.DynamoDB, deps.Config.WikiTable) // also the settings reader
	// Tenant settings are cached like tokens: an admin's change is seen
	// within AUTH_CACHE_TTL.
	searcher := search.New(search.Deps{Store: searchStore, Settings: search.NewSettingsCache(searchStore, deps.Config.AuthCacheTTL)})
	sessions := auth.NewSessions(authtable.NewSessionStore(deps.DynamoDB, deps.Config.AuthTable), deps.Auth, auth.Wiki, deps.Config.SessionTTL)
	router := deps.Router(auth.Wiki)
	(&wikiweb.Handler{
		Sessions: sessions, Requirements: requirements, Limiter: router.Limiter,
		Search: searcher, Diff: diff.New(diff.Deps{Store: searchStore, Matcher: searcher}),
		Coverage: coverage.New(searcher),
	}).Register(router)
	lambdaapp.ServeHTTP(router)
	return nil
}
