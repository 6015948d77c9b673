package bench

import (
	"context"
	"io"
	"log/slog"

	"github.com/reqtrace/reqtrace/infra/localstack"
)

// startStack starts a local stack of the given functions on env's
// stand-ins and tables "<Prefix>[-suffix]-<LogicalId>", on free ports,
// without the sync schedule.
func startStack(ctx context.Context, env *Env, suffix string, functions []string, functionLog io.Writer) (*localstack.Stack, error) {
	prefix := env.Prefix
	if suffix != "" {
		prefix += "-" + suffix
	}
	if functionLog == nil {
		functionLog = io.Discard
	}
	return localstack.Start(ctx, localstack.Options{
		Root: env.Root, BuildDir: env.BuildDir, WikiAddr: "127.0.0.1:0", TrackerAddr: "127.0.0.1:0", SyncInterval: -1,
		DynamoDBEndpoint: env.DynamoDBEndpoint, SQSEndpoint: env.SQSEndpoint, Prefix: prefix,
		Functions: functions, Logger: slog.New(slog.DiscardHandler), FunctionLog: functionLog,
	})
}
