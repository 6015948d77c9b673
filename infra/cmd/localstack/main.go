// Command localstack runs reqtrace locally: `make run` starts it in the
// foreground (wiki API on 127.0.0.1:3000, tracker API on :3001, the sync
// function every 3 minutes) until Ctrl-C or SIGTERM, which stops every child
// process. With -invoke it runs one function once with an event file
// (`make invoke FN=Sync EVENT=events/sync-schedule.json`) and prints its
// answer. While `make run` is up it records its stand-ins in
// <build-dir>/localstack.json, and -invoke runs against that stack's tables
// and queue (so a sync run delivers what is queued there); otherwise -invoke
// starts a fresh, empty stack of its own.
//
// Environment: WIKI_PORT, TRACKER_PORT (ports), SYNC_INTERVAL (a Go duration
// overriding the Sync function's rate(3 minutes); the other schedules keep
// their rates).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/reqtrace/reqtrace/infra/localaws"
	"github.com/reqtrace/reqtrace/infra/localstack"
	"github.com/reqtrace/reqtrace/infra/samtemplate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "localstack:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("localstack", flag.ContinueOnError)
	buildDir := fs.String("build-dir", ".build", "directory with <LogicalId>/bootstrap")
	invoke := fs.String("invoke", "", "invoke this function once and exit")
	event := fs.String("event", "", "event file for -invoke")
	dataDir := fs.String("data-dir", "", "keep DynamoDB Local's tables in this directory across restarts (empty: in memory)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	// JSON, like the functions' own lines (and CloudWatch's), so that one
	// filter reads every line: make run 2>&1 | jq -c 'select(.level != "INFO")'.
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	opts := localstack.Options{
		BuildDir:    *buildDir,
		WikiAddr:    "127.0.0.1:" + envOr("WIKI_PORT", "3000"),
		TrackerAddr: "127.0.0.1:" + envOr("TRACKER_PORT", "3001"),
		Logger:      logger,
		DataDir:     *dataDir,
	}
	if s := os.Getenv("SYNC_INTERVAL"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return fmt.Errorf("SYNC_INTERVAL: want a positive Go duration such as 30s, got %q", s)
		}
		opts.SyncInterval = d
	}
	if *invoke != "" {
		if running, ok := localstack.Running(*buildDir); ok {
			logger.Info("invoking against the running make run stack", "prefix", running.Prefix)
			opts.DynamoDBEndpoint, opts.SQSEndpoint, opts.Prefix = running.DynamoDB, running.SQS, running.Prefix
		}
		return invokeOnce(ctx, opts, *invoke, *event)
	}
	// A port in use is found now, not after DynamoDB Local, moto and nine
	// functions have started.
	for _, addr := range []string{opts.WikiAddr, opts.TrackerAddr} {
		if err := portFree(addr); err != nil {
			return err
		}
	}
	st, err := localstack.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := ready(ctx, st.TrackerURL+"/rest/reqs/1/api"); err != nil {
		return err
	}
	remove, err := localstack.Record(*buildDir, localstack.State{DynamoDB: st.DynamoDBEndpoint, SQS: st.SQSEndpoint, Prefix: st.Prefix, PID: os.Getpid()})
	if err != nil {
		return err
	}
	defer remove()
	data := "in memory: everything is lost when it stops"
	if *dataDir != "" {
		data = *dataDir + " (kept across restarts; `make run FRESH=1` starts empty)"
	}
	fmt.Printf("reqtrace is up\n  wiki API     %s\n  tracker API  %s\n  tokens       demo-wiki-admin, demo-wiki-user, demo-tracker-admin, demo-tracker-user (and acme-...)\n  data         %s\nCtrl-C stops everything.\n", st.WikiURL, st.TrackerURL, data)
	<-ctx.Done()
	fmt.Println("stopping...")
	return nil
}

func invokeOnce(ctx context.Context, opts localstack.Options, fn, eventFile string) error {
	if eventFile == "" {
		return errors.New("-invoke needs -event <file>")
	}
	payload, err := os.ReadFile(eventFile)
	if err != nil {
		return err
	}
	if err := knownFunction(fn); err != nil {
		return err
	}
	opts.Functions = []string{fn}
	opts.SyncInterval = -1
	opts.WikiAddr, opts.TrackerAddr = "127.0.0.1:0", "127.0.0.1:0"
	st, err := localstack.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer st.Close()
	out, err := st.Invoke(ctx, fn, payload)
	if err != nil {
		return fmt.Errorf("invoke %s: %w", fn, err)
	}
	fmt.Println(string(out))
	return nil
}

// ready waits until url answers 200: the readiness rule of the local stack (README).
func ready(ctx context.Context, url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer 200 within 30s", url)
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

// portFree fails with advice when addr cannot be listened on.
func portFree(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("cannot listen on %s (%v): is another make run up? Stop it, or choose other ports with WIKI_PORT and TRACKER_PORT", addr, err)
	}
	return l.Close()
}

// knownFunction fails, listing the template's functions, when fn is not
// one of them: before anything starts.
func knownFunction(fn string) error {
	root, err := localaws.ModuleRoot()
	if err != nil {
		return err
	}
	tmpl, err := samtemplate.Load(filepath.Join(root, "template.yaml"))
	if err != nil {
		return err
	}
	var names []string
	for _, f := range tmpl.Functions {
		if f.LogicalID == fn {
			return nil
		}
		names = append(names, f.LogicalID)
	}
	slices.Sort(names)
	return fmt.Errorf("no function %q in template.yaml; FN is one of %s", fn, strings.Join(names, ", "))
}
