// Command wikiintegrations is the WikiIntegrations Lambda: integration
// descriptors (GET|POST /rest/reqs/1/integration, GET|PUT|DELETE
// /rest/reqs/1/integration/{serviceId}), the outbound queue of each
// integration (GET .../queue/outbound, PUT|DELETE
// .../queue/outbound/{messageId}), the version and links callbacks of the
// trackers (.../version, .../links) and the admin settings (GET|PUT
// /rest/reqs/1/admin/settings).
//
// Trigger: the WikiApi HTTP API (payload 2.0). Environment: WIKI_TABLE,
// AUTH_TABLE, OUTBOUND_QUEUE_URL (required); HTTP_TIMEOUT (POSTs to
// trackers, default 10s), LOG_LEVEL, AUTH_CACHE_TTL, TENANT_RATE. Writes to
// WIKI_TABLE: integration items, outbox message states (and their deletion
// with an integration's), settings, requirement issue links and their jira
// search index items; to AUTH_TABLE: the hashes of the integrations'
// incoming tokens and the rate limit's window counters.
// Sends to OUTBOUND_QUEUE_URL: a reference to the oldest NEW message of an
// integration that is set ACTIVE again. docs/integrations.md describes it.
package main

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/reqtrace/reqtrace/shared/auth"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/httpapi/wikiintegrations"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/lambdaapp"
	"github.com/reqtrace/reqtrace/shared/outbound"
	"github.com/reqtrace/reqtrace/shared/queue"
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
	store := wikitable.NewIntegrationStore(db, table)
	ob := wikitable.NewOutboxStore(db, table)
	q := queue.New(sqs.NewFromConfig(deps.AWS), deps.Config.OutboundQueueURL)
	svc := integration.New(integration.Deps{
		Store: store, Outbox: ob, Links: store, ReconcileStore: store,
		Tokens:    authtable.NewAuthStore(db, deps.Config.AuthTable),
		Settings:  wikitable.NewSettingsStore(db, table),
		Tracker:   &integration.HTTPTracker{Client: outbound.FromConfig(deps.Config, outbound.DefaultMaxBody)},
		Publisher: integration.NewPublisher(q, ob),
		Logger:    deps.Logger,
		// rpcUrls: loopback and private addresses only when allowed.
		AllowPrivateTargets: deps.Config.AllowPrivateTargets,
	})
	router := deps.Router(auth.Wiki)
	(&wikiintegrations.Handler{Service: svc}).Register(router)
	lambdaapp.ServeHTTP(router)
	return nil
}
