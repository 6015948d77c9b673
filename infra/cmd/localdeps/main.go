// Command localdeps starts the local AWS stand-ins — DynamoDB Local and
// moto_server for SQS — on free loopback ports, announces them as
//
//	export REQTRACE_TEST_DYNAMODB_ENDPOINT=http://127.0.0.1:N REQTRACE_TEST_SQS_ENDPOINT=http://127.0.0.1:M
//
// on stdout, or in the file named by -env-file (written atomically, so a
// non-empty file means both are ready, and removed on exit), and keeps
// them running until SIGINT or SIGTERM. `make test` runs it once so that
// every test binary (through infra/testenv) shares one pair of
// stand-ins instead of starting its own.
//
// It exits non-zero if a stand-in cannot start or dies while running.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/reqtrace/reqtrace/infra/localaws"
	"github.com/reqtrace/reqtrace/infra/testenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "localdeps:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	flags := flag.NewFlagSet("localdeps", flag.ContinueOnError)
	flags.SetOutput(stderr)
	envFile := flags.String("env-file", "", "write the export line to this file instead of stdout")
	dynamoPort := flags.Int("dynamodb-port", 0, "DynamoDB Local port (0: a free one)")
	sqsPort := flags.Int("sqs-port", 0, "moto_server port (0: a free one)")
	verbose := flags.Bool("v", false, "copy the stand-ins' output to stderr")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flags.Args())
	}
	var log io.Writer
	if *verbose {
		log = stderr
	}

	var (
		wg             sync.WaitGroup
		dynamo, queue  *localaws.Service
		ddbErr, sqsErr error
	)
	wg.Go(func() { dynamo, ddbErr = localaws.StartDynamoDB(ctx, localaws.Options{Port: *dynamoPort, Log: log}) })
	wg.Go(func() { queue, sqsErr = localaws.StartSQS(ctx, localaws.Options{Port: *sqsPort, Log: log}) })
	wg.Wait()
	defer func() {
		for _, s := range []*localaws.Service{dynamo, queue} {
			if s != nil {
				err = errors.Join(err, s.Stop())
			}
		}
	}()
	if err := errors.Join(ddbErr, sqsErr); err != nil {
		return err
	}

	line := fmt.Sprintf("export %s=%s %s=%s\n",
		testenv.DynamoDBEndpointEnv, dynamo.Endpoint, testenv.SQSEndpointEnv, queue.Endpoint)
	if *envFile == "" {
		if _, err := io.WriteString(stdout, line); err != nil {
			return err
		}
	} else {
		if err := writeAtomic(*envFile, line); err != nil {
			return err
		}
		defer os.Remove(*envFile)
		fmt.Fprintf(stderr, "localdeps: DynamoDB Local at %s, moto_server at %s; endpoints in %s\n", dynamo.Endpoint, queue.Endpoint, *envFile)
	}

	select {
	case <-ctx.Done():
		return nil
	case <-dynamo.Done():
		return errors.New("DynamoDB Local exited")
	case <-queue.Done():
		return errors.New("moto_server exited")
	}
}

// writeAtomic writes data to path through a temporary file and a rename,
// so a reader never sees a partial file.
func writeAtomic(path, data string) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".localdeps-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
