// Command sync is the Sync Lambda, run by EventBridge every 3 minutes
// (and by `make invoke FN=Sync EVENT=events/sync-schedule.json`). It first
// recovers the pages whose last operation did not finish (a save, delete
// or reindex that failed half way or whose function was killed: the page's
// stored version is redone, wiki.Service.RecoverUnfinished), then it takes
// the dead-lettered envelopes (flagging and waking their integrations),
// re-enqueues outbound messages that never reached SQS, drains the
// outbound FIFO queue, and delivers each integration's NEW messages to its
// tracker in batches of up to 100, in the wire shape of the integration's
// API version, serving integrations concurrently (integration.Sync).
//
// Trigger: an EventBridge scheduled event. Environment: WIKI_TABLE,
// OUTBOUND_QUEUE_URL (required); OUTBOUND_DLQ_URL (the outbound queue's
// dead-letter queue; empty: not drained); ERROR_EMAIL_FROM (verified SES
// sender of API error e-mails; empty: the e-mails are logged),
// HTTP_TIMEOUT (each POST to a tracker, default 10s), LOG_LEVEL. Writes to
// WIKI_TABLE: outbox message states and last responses, the integrations'
// sweep mark, lease and last error e-mail time; the requirement rows,
// index items, messages and page items of the pages it recovers. Sends to and deletes from
// OUTBOUND_QUEUE_URL; receives from and deletes from OUTBOUND_DLQ_URL.
// docs/integrations.md describes the algorithm.
package main

import (
	"context"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sesv2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/integration"
	"github.com/reqtrace/reqtrace/shared/lambdaapp"
	"github.com/reqtrace/reqtrace/shared/mail"
	"github.com/reqtrace/reqtrace/shared/outbound"
	"github.com/reqtrace/reqtrace/shared/queue"
	"github.com/reqtrace/reqtrace/shared/wiki"
)

// recoverPerRun bounds the pages one run recovers (each is a page save's
// work); the rest wait for the next run.
const recoverPerRun = 200

func main() {
	if err := run(context.Background()); err != nil {
		lambdaapp.Exit(err)
	}
}

func run(ctx context.Context) error {
	deps, err := lambdaapp.Setup(ctx, "WIKI_TABLE", "OUTBOUND_QUEUE_URL")
	if err != nil {
		return err
	}
	db, table := deps.DynamoDB, deps.Config.WikiTable
	ob := wikitable.NewOutboxStore(db, table)
	sqsClient := sqs.NewFromConfig(deps.AWS)
	q := queue.New(sqsClient, deps.Config.OutboundQueueURL)
	var opts integration.SyncOptions
	if url := deps.Config.OutboundDLQURL; url != "" {
		opts.DeadLetters = queue.New(sqsClient, url)
	}
	var mailer integration.Mailer = mail.NewLog(deps.Logger)
	if from := deps.Config.ErrorEmailFrom; from != "" {
		mailer = mail.NewSES(sesv2.NewFromConfig(deps.AWS), from)
	}
	store := wikitable.NewIntegrationStore(db, table)
	d := integration.Deps{
		Store: store, Outbox: ob, Queue: q, ReconcileStore: store,
		Tracker:   &integration.HTTPTracker{Client: outbound.FromConfig(deps.Config, outbound.DefaultMaxBody)},
		Publisher: integration.NewPublisher(q, ob),
		Mailer:    mailer,
		Logger:    deps.Logger,
	}
	d.Reconciler = integration.NewReconciler(d, store)
	s := integration.NewSync(d, opts)
	pages := wikitable.NewWikiStore(db, table)
	wikis := wiki.New(wiki.Deps{Store: pages, Publisher: d.Publisher})
	lambda.Start(func(ctx context.Context, ev events.EventBridgeEvent) error {
		// Recovery first: the messages it writes are delivered by this run.
		rec, err := wikis.RecoverUnfinished(ctx, pages, time.Now(), recoverPerRun)
		if err != nil {
			deps.Logger.ErrorContext(ctx, "page recovery failed; the next run retries", "error", err.Error())
		} else if rec.Listed > 0 {
			deps.Logger.InfoContext(ctx, "page recovery", "listed", rec.Listed, "recovered", rec.Recovered, "failed", rec.Failed)
		}
		rep, err := s.Run(ctx)
		deps.Logger.InfoContext(ctx, "sync run", "event_id", ev.ID, "reenqueued", rep.Reenqueued,
			"received", rep.Received, "posts", rep.Posts, "delivered", rep.Delivered, "refused", rep.Refused,
			"failed_posts", rep.Failed, "skipped", rep.Skipped, "settled", rep.Settled, "mails", rep.Mails,
			"dead_lettered", rep.DeadLettered, "flagged", rep.Flagged, "reconciled", rep.Reconciled,
			"reconcile_errors", rep.ReconcileErrors)
		return err
	})
	return nil
}
