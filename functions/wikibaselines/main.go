// Command wikibaselines is the WikiBaselines Lambda: every
// /rest/reqs/1/baseline/... route of the wiki API (list, create,
// create-instant, delete, label, pages).
//
// Trigger: the WikiApi HTTP API (payload 2.0). Environment: WIKI_TABLE,
// AUTH_TABLE (required); LOG_LEVEL, AUTH_CACHE_TTL, TENANT_RATE. Writes in
// WIKI_TABLE: baseline records and number counters, archived requirement
// copies, and the title of a baseline page. Reads tokens from AUTH_TABLE
// and writes the rate limit's window counters there.
package main

import (
	"context"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikibaselines"
	"github.com/reqtrace/reqtrace/shared/lambdaapp"
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
	store := wikitable.NewBaselineStore(deps.DynamoDB, deps.Config.WikiTable)
	router := deps.Router(auth.Wiki)
	(&wikibaselines.Handler{Baselines: baseline.New(baseline.Deps{Store: store, Source: store})}).Register(router)
	lambdaapp.ServeHTTP(router)
	return nil
}
