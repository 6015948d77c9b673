package lambdashim_test

import (
	"context"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/reqtrace/reqtrace/infra/gateway"
	"github.com/reqtrace/reqtrace/infra/lambdashim"
	"github.com/reqtrace/reqtrace/infra/scheduler"
)

// Example wires the three local-stack pieces: one Runner per function, a
// gateway per HTTP API routing to them, and a schedule for the sync function.
func Example() {
	ctx := context.Background()
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil))

	wiki, err := lambdashim.Start(ctx, lambdashim.Function{
		Name:      "WikiRequirements",
		Bootstrap: ".aws-sam/build/WikiRequirements/bootstrap",
		Env:       []string{"WIKI_TABLE=WikiTable", "AWS_ENDPOINT_URL_DYNAMODB=http://127.0.0.1:8000"},
		Timeout:   29 * time.Second,
		MemoryMB:  512,
		Logger:    logger,
	})
	if err != nil {
		logger.Error("start function", "err", err)
		return
	}
	defer wiki.Close()

	api, err := gateway.New("wikiapi", []gateway.Route{
		{Method: "GET", Path: "/rest/reqs/1/requirement2/{spaceKey}", Invoker: wiki},
		{Method: "GET", Path: "/rest/reqs/1/requirement2/{spaceKey}/{key}", Invoker: wiki},
	}, logger)
	if err != nil {
		logger.Error("build gateway", "err", err)
		return
	}
	go http.ListenAndServe("127.0.0.1:8080", api)

	syncFn, err := lambdashim.Start(ctx, lambdashim.Function{Name: "Sync", Bootstrap: ".aws-sam/build/Sync/bootstrap", Timeout: 10 * time.Minute})
	if err != nil {
		logger.Error("start function", "err", err)
		return
	}
	defer syncFn.Close()
	scheduler.Every(ctx, 3*time.Minute, func(ctx context.Context) error {
		_, err := syncFn.Invoke(ctx, scheduler.ScheduledEvent("Sync-Schedule", time.Now()))
		return err
	}, logger)
}
