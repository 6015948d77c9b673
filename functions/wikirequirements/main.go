// Command wikirequirements is the WikiRequirements Lambda: requirement reads
// (GET /rest/reqs/1/requirement2/{spaceKey}/{key}), external properties (PUT
// /rest/reqs/1/requirement2/{spaceKey}/{key}/external), the page view (GET
// /rest/reqs/1/page/{spaceKey}/{pageId}), search (GET
// /rest/reqs/1/requirement2/{spaceKey}, planned by shared/search), the
// must-not-use routes (405, 410) and the wiki's OpenAPI
// document (GET /rest/reqs/1/openapi, anonymous).
//
// Trigger: the WikiApi HTTP API (payload 2.0). Environment: WIKI_TABLE,
// AUTH_TABLE (required); LOG_LEVEL, AUTH_CACHE_TTL, TENANT_RATE. Reads
// WIKI_TABLE; the page view writes the excerpts it gathers (requirement
// rows, index items, UPDATED outbound messages), the external properties
// route a row's external properties and their index items. Writes the rate
// limit's window counters in AUTH_TABLE.
package main

import (
	"context"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikirequirements"
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
	searcher := search.New(search.Deps{Store: searchStore, Settings: searchStore})
	router := deps.Router(auth.Wiki)
	(&wikirequirements.Handler{Requirements: requirements, Search: searcher, External: requirements, Suspects: requirements}).Register(router) // includes GET /rest/reqs/1/openapi
	lambdaapp.ServeHTTP(router)
	return nil
}
