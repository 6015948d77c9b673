// Command wikicontent is the WikiContent Lambda: pages pushed by the wiki
// (PUT, GET and DELETE /rest/reqs/1/content/{contentId}), indexed fully on
// every save; the status-only reindex (POST
// /rest/reqs/1/helpers/reindex/{contentId}); and the deprecated POST
// /rest/reqs/1/sync (410).
//
// Trigger: the WikiApi HTTP API (payload 2.0). Environment: WIKI_TABLE,
// AUTH_TABLE, OUTBOUND_QUEUE_URL (required); LOG_LEVEL, AUTH_CACHE_TTL,
// TENANT_RATE. Writes to WIKI_TABLE: pages, requirement rows
// and their reverse dependency stubs, search index items, the spaces
// registry, and outbound messages in the same transactions as the changes
// they report; then sends references to those messages to the outbound SQS
// queue (the sync function enqueues any that did not get there). Reads
// integration ids from WIKI_TABLE and tokens from AUTH_TABLE, and writes
// the rate limit's window counters there.
// docs/indexing.md describes the write path.
package main

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikicontent"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/lambdaapp"
	"github.com/reqtrace/reqtrace/shared/queue"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

func main() {
	if err := run(context.Background()); err != nil {
		lambdaapp.Exit(err)
	}
}

func run(ctx context.Context) error {
	deps, err := lambdaapp.Setup(ctx, "WIKI_TABLE", "AUTH_TABLE", "OUTBOUND_QUEUE_URL")
	if err != nil {
		return err
	}
	db, table := deps.DynamoDB, deps.Config.WikiTable
	pages := wiki.New(wiki.Deps{
		Store:     wikitable.NewWikiStore(db, table),
		Publisher: integration.NewPublisher(queue.New(sqs.NewFromConfig(deps.AWS), deps.Config.OutboundQueueURL), wikitable.NewOutboxStore(db, table)),
	})
	router := deps.Router(auth.Wiki)
	(&wikicontent.Handler{Pages: pages}).Register(router)
	lambdaapp.ServeHTTP(router)
	return nil
}
