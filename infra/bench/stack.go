package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/reqtrace/reqtrace/infra/localstack"
)

// startStack starts a local stack of the given functions on env's
// stand-ins and tables "<Prefix>[-suffix]-<LogicalId>", on free ports,
// without the sync schedule. A panic inside localstack.Start (its cleanup
// of a failed start dereferences the nil Stack it has just returned) is
// turned into an error, so that one missing bootstrap fails one figure,
// not the whole row.
func startStack(ctx context.Context, env *Env, suffix string, functions []string, functionLog io.Writer) (st *localstack.Stack, err error) {
	defer func() {
		if p := recover(); p != nil {
			st, err = nil, fmt.Errorf("start the local stack with %v: localstack.Start panicked while cleaning up a failed start: %v", functions, p)
		}
	}()
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
