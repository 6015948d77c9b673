// Command soak runs reqtrace's soak harness (infra/soak) once: it starts
// DynamoDB Local and the SQS stand-in on loopback ports, the local stack
// of `make run` on top of them, sends load and injects faults for
// SOAK_DURATION, checks the invariants, prints the report and writes it to
// -out (soak-report.json). It exits 1 when an invariant was violated.
//
// Knobs (environment): SOAK_RATE, SOAK_DURATION, SOAK_SEED,
// SOAK_SYNC_EVERY, SOAK_WORKERS, SOAK_FAULTS, SOAK_MAX_PAGE; see
// docs/operations.md, "Reliability".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/reqtrace/reqtrace/infra/localaws"
	"github.com/reqtrace/reqtrace/infra/soak"
)

var errViolations = errors.New("invariants violated")

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

func run() error {
	buildDir := flag.String("build-dir", ".build", "directory holding <LogicalId>/bootstrap (make build)")
	out := flag.String("out", "soak-report.json", "where to write the JSON report")
	functionLog := flag.String("function-log", ".build/soak-functions.log", "where the functions' output goes")
	flag.Parse()
	cfg, err := soak.ConfigFromEnv(os.LookupEnv)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, nil))

	root, err := localaws.ModuleRoot()
	if err != nil {
		return err
	}
	ddb, err := localaws.StartDynamoDB(ctx, localaws.Options{Root: root})
	if err != nil {
		return fmt.Errorf("start DynamoDB Local: %w", err)
	}
	defer ddb.Stop()
	sqs, err := localaws.StartSQS(ctx, localaws.Options{Root: root})
	if err != nil {
		return fmt.Errorf("start the SQS stand-in: %w", err)
	}
	defer sqs.Stop()

	var fnLog io.Writer = io.Discard
	if *functionLog != "" {
		f, err := os.Create(*functionLog)
		if err != nil {
			return err
		}
		defer f.Close()
		fnLog = f
	}
	rep, err := soak.Run(ctx, cfg, soak.Env{BuildDir: *buildDir, DynamoDBEndpoint: ddb.Endpoint, SQSEndpoint: sqs.Endpoint,
		Prefix: "reqtrace-soak", Logger: logger, FunctionLog: fnLog})
	if err != nil {
		return err
	}
	rep.Print(os.Stdout)
	f, err := os.Create(*out)
	if err != nil {
		return err
	}
	if err := rep.WriteJSON(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fmt.Printf("report written to %s\n", *out)
	if rep.Violations > 0 {
		return fmt.Errorf("%d %w (seed %d)", rep.Violations, errViolations, rep.Seed)
	}
	return nil
}
