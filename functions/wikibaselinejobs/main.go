// Command wikibaselinejobs is the WikiBaselineJobs Lambda, the background
// freeze worker of baselines: run by EventBridge every minute (and by
// `make invoke FN=WikiBaselineJobs EVENT=events/baseline-jobs-schedule.json`),
// it lists the pending freeze jobs of every tenant (gsi1 FREEZE#PENDING),
// takes the lease of each job nobody works on, writes its archived copies
// from its cursor until its deadline less 5 s, and commits the baselines it
// completes (baseline.Service.RunJobs). It has no HTTP routes.
//
// Trigger: an EventBridge scheduled event. Environment: WIKI_TABLE
// (required), LOG_LEVEL. Writes in WIKI_TABLE: archived requirement
// copies, freeze jobs (progress, lease, FAILED state), baseline records,
// the title of a baseline page, and removes finished jobs.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/reqtrace/reqtrace/shared/baseline"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
	"github.com/reqtrace/reqtrace/shared/lambdaapp"
)

func main() {
	if err := run(context.Background()); err != nil {
		lambdaapp.Exit(err)
	}
}

func run(ctx context.Context) error {
	deps, err := lambdaapp.Setup(ctx, "WIKI_TABLE")
	if err != nil {
		return err
	}
	store := wikitable.NewBaselineStore(deps.DynamoDB, deps.Config.WikiTable)
	svc := baseline.New(baseline.Deps{Store: store, Source: store})
	lambda.Start(func(ctx context.Context, ev events.EventBridgeEvent) error {
		rep, err := svc.RunJobs(ctx, 0)
		deps.Logger.InfoContext(ctx, "baseline jobs run", "event_id", ev.ID, "jobs", rep.Jobs,
			"completed", rep.Completed, "failed", rep.Failed, "copies", rep.Copies)
		return err
	})
	return nil
}
