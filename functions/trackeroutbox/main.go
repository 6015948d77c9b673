// Command trackeroutbox is the TrackerOutbox Lambda, the retrying half of
// the tracker outbox: run by EventBridge every minute (and by
// `make invoke FN=TrackerOutbox EVENT=events/tracker-outbox-schedule.json`),
// it lists the requirements whose TRACKER link set has not reached the wiki
// yet (marks in the sparse gsi1 partitions TOUTBOX#PENDING#<nn>, every tenant),
// and sends each applink's sets through the wiki's links callback
// (tracker.Service.RunOutbox). A mark goes only when the wiki answered 2xx;
// a failed send (403 of a DISABLED integration, 5xx, unreachable) keeps it
// for the next run. It has no HTTP routes.
//
// Trigger: an EventBridge scheduled event. Environment: TRACKER_TABLE
// (required), HTTP_TIMEOUT (calls to wikis), LOG_LEVEL. Writes in
// TRACKER_TABLE: outbox marks (lease, attempts, last error; deleted once
// sent). Calls each applink's wiki over HTTP.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/reqtrace/reqtrace/shared/dynamo/trackertable"
	"github.com/reqtrace/reqtrace/shared/lambdaapp"
	"github.com/reqtrace/reqtrace/shared/outbound"
	"github.com/reqtrace/reqtrace/shared/tracker"
	"github.com/reqtrace/reqtrace/shared/wikiclient"
)

func main() {
	if err := run(context.Background()); err != nil {
		lambdaapp.Exit(err)
	}
}

func run(ctx context.Context) error {
	deps, err := lambdaapp.Setup(ctx, "TRACKER_TABLE")
	if err != nil {
		return err
	}
	store := trackertable.NewTrackerStore(deps.DynamoDB, deps.Config.TrackerTable)
	svc := tracker.New(tracker.Deps{
		Applinks: store,
		Links:    store,
		Outbox:   store,
		Wiki:     wikiclient.New(outbound.FromConfig(deps.Config, wikiclient.MaxAnswer)),
		Logger:   deps.Logger,
	})
	lambda.Start(func(ctx context.Context, ev events.EventBridgeEvent) error {
		rep, err := svc.RunOutbox(ctx)
		deps.Logger.InfoContext(ctx, "tracker outbox run", "event_id", ev.ID, "marks", rep.Marks,
			"sent", rep.Sent, "failed", rep.Failed, "skipped", rep.Skipped)
		return err
	})
	return nil
}
