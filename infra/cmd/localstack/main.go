// Command localstack runs reqtrace locally: `make run` starts it in the
// foreground (wiki API on 127.0.0.1:3000, tracker API on :3001, the sync
// function every 3 minutes) until Ctrl-C or SIGTERM, which stops every child
// process. With -invoke it runs one function once with an event file
// (`make invoke FN=Sync EVENT=events/sync-schedule.json`) and prints its
// answer.
//
// Environment: WIKI_PORT, TRACKER_PORT (ports), SYNC_INTERVAL (a Go duration
// overriding the template's rate(3 minutes)).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/reqtrace/reqtrace/infra/localstack"
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	opts := localstack.Options{
		BuildDir:    *buildDir,
		WikiAddr:    "127.0.0.1:" + envOr("WIKI_PORT", "3000"),
		TrackerAddr: "127.0.0.1:" + envOr("TRACKER_PORT", "3001"),
		Logger:      logger,
	}
	if s := os.Getenv("SYNC_INTERVAL"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return fmt.Errorf("SYNC_INTERVAL: want a positive Go duration such as 30s, got %q", s)
		}
		opts.SyncInterval = d
	}
	if *invoke != "" {
		return invokeOnce(ctx, opts, *invoke, *event)
	}
	st, err := localstack.Start(ctx, opts)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := ready(ctx, st.TrackerURL+"/rest/reqs/1/api"); err != nil {
		return err
	}
	fmt.Printf("reqtrace is up\n  wiki API     %s\n  tracker API  %s\n  tokens       demo-wiki-admin, demo-wiki-user, demo-tracker-admin, demo-tracker-user (and acme-...)\nCtrl-C stops everything.\n", st.WikiURL, st.TrackerURL)
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

// ready waits until url answers 200: the readiness rule of CONTRACT.md §1.
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
