// Command wikirequirements is the WikiRequirements Lambda: requirement reads
// (GET /rest/reqs/1/requirement2/{spaceKey}/{key}), external properties (PUT
// /rest/reqs/1/requirement2/{spaceKey}/{key}/external), the page view (GET
// /rest/reqs/1/page/{spaceKey}/{pageId}), search (GET
// /rest/reqs/1/requirement2/{spaceKey}, planned by shared/search), the diff
// (GET /rest/reqs/1/diff/{spaceKey}, shared/diff), the coverage matrix (GET
// /rest/reqs/1/coverage/{spaceKey}, shared/coverage), the CSV exports of all
// three (format=csv), the CSV downloads the web pages link to for a
// browser session (GET /diff/{spaceKey}/csv, GET /coverage/{spaceKey}/csv:
// here rather than in WikiWeb, whose templates would make it keep the whole
// S3 client), the must-not-use routes (405, 410) and the wiki's OpenAPI
// document (GET /rest/reqs/1/openapi, anonymous).
//
// Trigger: the WikiApi HTTP API (payload 2.0). Environment: WIKI_TABLE,
// AUTH_TABLE, EXPORT_BUCKET (required); LOG_LEVEL, AUTH_CACHE_TTL,
// TENANT_RATE. Reads WIKI_TABLE; the page view writes the excerpts it
// gathers (requirement rows, index items, UPDATED outbound messages), the
// external properties route a row's external properties and their index
// items. Reads tokens and the web pages' session items (SESSION#...) in
// AUTH_TABLE, writes its rate limit's window counters there, and CSV
// exports in EXPORT_BUCKET (exports/...), which it presigns GET URLs for.
package main

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/coverage"
	"github.com/reqtrace/reqtrace/shared/diff"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/export"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikirequirements"
	"github.com/reqtrace/reqtrace/shared/lambdaapp"
	"github.com/reqtrace/reqtrace/shared/s3export"
	"github.com/reqtrace/reqtrace/shared/search"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

func main() {
	if err := run(context.Background()); err != nil {
		lambdaapp.Exit(err)
	}
}

func run(ctx context.Context) error {
	deps, err := lambdaapp.Setup(ctx, "WIKI_TABLE", "AUTH_TABLE", "EXPORT_BUCKET")
	if err != nil {
		return err
	}
	requirements := wiki.New(wiki.Deps{Store: wikitable.NewWikiStore(deps.DynamoDB, deps.Config.WikiTable)})
	searchStore := wikitable.NewSearchStore(deps.DynamoDB, deps.Config.WikiTable) // also the settings reader
	// Tenant settings are cached like tokens: an admin's change is seen
	// within AUTH_CACHE_TTL.
	searcher := search.New(search.Deps{Store: searchStore, Settings: search.NewSettingsCache(searchStore, deps.Config.AuthCacheTTL)})
	differ := diff.New(diff.Deps{Store: searchStore, Matcher: searcher})
	exports := export.New(s3export.New(s3.NewFromConfig(deps.AWS), deps.Config.ExportBucket))
	// The web pages' downloads only resolve sessions; WikiWeb opens them.
	sessions := auth.NewSessions(authtable.NewSessionStore(deps.DynamoDB, deps.Config.AuthTable), deps.Auth, auth.Wiki, deps.Config.SessionTTL)
	router := deps.Router(auth.Wiki)
	(&wikirequirements.Handler{Requirements: requirements, Search: searcher, External: requirements, Diff: differ,
		Export: exports, Suspects: requirements, Coverage: coverage.New(searcher),
		Sessions: sessions, Limiter: router.Limiter}).Register(router) // includes GET /rest/reqs/1/openapi
	lambdaapp.ServeHTTP(router)
	return nil
}
