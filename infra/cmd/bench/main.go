// Command bench measures reqtrace against its performance targets and
// writes the figures to docs/benchmarks.json and, rendered from that JSON,
// docs/benchmarks.md; `make bench`
// runs it after `make deps build`:
//
//	go run ./infra/cmd/bench -build-dir .build -out docs/benchmarks.md
//
// It starts DynamoDB Local and moto on free loopback ports (infra/localaws),
// creates the tables and queues of template.yaml, seeds the data sets,
// measures each row (infra/bench) and stops everything it started. A row
// that cannot be measured is reported as such; the command fails only when
// the stand-ins cannot start or the report cannot be written. Both files
// are replaced whole: the Markdown is rendered from the JSON alone.
//
// Flags: -build-dir (bootstraps, default .build), -out (default
// docs/benchmarks.md; the JSON goes beside it), -quick (small sizes, to check the bench itself),
// -profile-dir (CPU profiles of the in-process measurements), -log (file
// for the stand-ins' and functions' output, default discarded), -timeout
// (whole run, default 30m).
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/reqtrace/reqtrace/infra/bench"
	"github.com/reqtrace/reqtrace/infra/localaws"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// config are the command's flags.
type config struct {
	buildDir, out, profileDir, logFile string
	quick                              bool
	timeout                            time.Duration
}

func parseFlags(args []string) (config, error) {
	var c config
	fl := flag.NewFlagSet("bench", flag.ContinueOnError)
	fl.StringVar(&c.buildDir, "build-dir", ".build", "directory holding <LogicalId>/bootstrap (make build)")
	fl.StringVar(&c.out, "out", "docs/benchmarks.md", "report to write")
	fl.StringVar(&c.profileDir, "profile-dir", "", "write CPU profiles of the in-process measurements here")
	fl.StringVar(&c.logFile, "log", "", "append the stand-ins' and functions' output to this file")
	fl.BoolVar(&c.quick, "quick", false, "small sizes, to check the bench itself (figures say nothing about the targets)")
	fl.DurationVar(&c.timeout, "timeout", 30*time.Minute, "bound of the whole run")
	if err := fl.Parse(args); err != nil {
		return c, err
	}
	if fl.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fl.Args())
	}
	return c, nil
}

func run(ctx context.Context, args []string) error {
	cfg, err := parseFlags(args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	root, err := localaws.ModuleRoot()
	if err != nil {
		return err
	}
	buildDir, err := filepath.Abs(cfg.buildDir)
	if err != nil {
		return err
	}
	var standIns io.Writer = io.Discard
	if cfg.logFile != "" {
		f, err := os.OpenFile(cfg.logFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		standIns = f
	}

	start := time.Now()
	log.Info("starting DynamoDB Local and moto")
	env, stopEnv, err := bench.StartEnv(ctx, bench.StartOptions{Root: root, BuildDir: buildDir,
		Prefix: "bench" + strconv.Itoa(os.Getpid()), Log: standIns})
	defer func() {
		if err := stopEnv(); err != nil {
			log.Warn("stopping the stand-ins", "error", err)
		}
	}()
	if err != nil {
		return err
	}
	env.ProfileDir = cfg.profileDir
	machine := bench.DescribeMachine(ctx)

	sizes, command := bench.Full, "make bench"
	if cfg.quick {
		sizes, command = bench.Quick, "go run ./infra/cmd/bench -quick"
	}
	rows := bench.Run(ctx, env, sizes, standIns, log)
	machine.LoadAfter = bench.LoadAverage()
	report := &bench.Report{Command: command, Machine: machine, Rows: rows, Results: bench.Results(rows),
		Runtime: time.Since(start)}
	for _, r := range rows {
		log.Info("row", "id", r.ID, "verdict", r.Verdict(), "elapsed", r.Elapsed.Round(time.Second), "error", r.Err)
	}
	return writeReport(cfg.out, report)
}

// writeReport writes the report as JSON next to path (benchmarks.json
// beside benchmarks.md), then the Markdown rendered from that JSON, each
// atomically.
func writeReport(path string, r *bench.Report) error {
	doc, err := r.JSON()
	if err != nil {
		return err
	}
	if err := writeFile(jsonPath(path), doc); err != nil {
		return err
	}
	var b bytes.Buffer
	if err := bench.Render(doc, &b); err != nil {
		return err
	}
	return writeFile(path, b.Bytes())
}

// jsonPath is the JSON report beside the Markdown one.
func jsonPath(md string) string {
	return strings.TrimSuffix(md, filepath.Ext(md)) + ".json"
}

// writeFile replaces path with b atomically.
func writeFile(path string, b []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
