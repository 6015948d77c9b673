// Package localstack runs the whole service on one machine without Docker or
// the SAM CLI: DynamoDB Local and moto (or endpoints already running), the
// tables and queues of template.yaml, the development tenants and tokens,
// every function's real bootstrap behind the Lambda Runtime API shim, the
// two HTTP APIs through the local gateway, and the sync schedule. `make run`,
// `make invoke` and the end-to-end tests all use it.
package localstack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/reqtrace/reqtrace/infra/devseed"
	"github.com/reqtrace/reqtrace/infra/gateway"
	"github.com/reqtrace/reqtrace/infra/lambdashim"
	"github.com/reqtrace/reqtrace/infra/localaws"
	"github.com/reqtrace/reqtrace/infra/samtemplate"
	"github.com/reqtrace/reqtrace/infra/scheduler"
	"github.com/reqtrace/reqtrace/shared/dynamo/authtable"
	"github.com/reqtrace/reqtrace/shared/dynamo/wikitable"
)

// Options configure a local stack.
type Options struct {
	// Root is the module root (template.yaml, infra/node_modules); found
	// from the working directory when empty.
	Root string
	// BuildDir holds <LogicalId>/bootstrap for every function (make build).
	BuildDir string
	// WikiAddr and TrackerAddr are listen addresses ("127.0.0.1:3000");
	// port 0 picks a free port.
	WikiAddr, TrackerAddr string
	// SyncInterval overrides the Sync function's schedule (the template's
	// rate(3 minutes)); 0 keeps it, a negative value disables every
	// schedule. The other scheduled functions (the baseline worker, the
	// tracker's outbox) keep the template's rates.
	SyncInterval time.Duration
	// DynamoDBEndpoint and SQSEndpoint reuse running stand-ins; empty
	// starts new ones.
	DynamoDBEndpoint, SQSEndpoint string
	// Prefix names the tables and queues ("reqtrace-local" by default).
	Prefix string
	// DataDir, when set, keeps DynamoDB Local's tables in that directory
	// across restarts (make run); empty keeps them in memory (tests). On a
	// start over kept tables, NEW outbox messages that were in the
	// previous run's SQS stand-in (always in memory) are queued again.
	DataDir string
	// Functions limits the functions started (all when empty).
	Functions []string
	// Logger receives the stack's own logs; FunctionLog the functions'.
	Logger      *slog.Logger
	FunctionLog io.Writer
}

// Stack is a running local stack.
type Stack struct {
	WikiURL, TrackerURL string
	// DynamoDBEndpoint and SQSEndpoint are the stand-ins in use; Prefix
	// names the tables and queues.
	DynamoDBEndpoint, SQSEndpoint, Prefix string
	Resources                             *localaws.Resources
	Config                                aws.Config
	Runners                               map[string]*lambdashim.Runner

	closers []func() error
	cancel  context.CancelFunc
}

// Start brings the stack up; Close stops everything it started.
func Start(ctx context.Context, opts Options) (_ *Stack, err error) {
	opts = withDefaults(opts)
	ctx, cancel := context.WithCancel(ctx)
	st := &Stack{Runners: map[string]*lambdashim.Runner{}, cancel: cancel}
	defer func() {
		if err != nil {
			_ = st.Close() // st, not the nil result: stop what did start
		}
	}()
	if opts.Root == "" {
		if opts.Root, err = localaws.ModuleRoot(); err != nil {
			return nil, err
		}
	}
	tmpl, err := samtemplate.Load(filepath.Join(opts.Root, "template.yaml"))
	if err != nil {
		return nil, err
	}
	if err := st.startAWS(ctx, &opts); err != nil {
		return nil, err
	}
	st.DynamoDBEndpoint, st.SQSEndpoint, st.Prefix = opts.DynamoDBEndpoint, opts.SQSEndpoint, opts.Prefix
	if st.Config, err = localaws.AWSConfig(ctx, opts.DynamoDBEndpoint, opts.SQSEndpoint); err != nil {
		return nil, err
	}
	if st.Resources, err = localaws.CreateResources(ctx, st.Config, tmpl, opts.Prefix); err != nil {
		return nil, fmt.Errorf("create tables and queues: %w", err)
	}
	if err := devseed.RequireLoopback(opts.DynamoDBEndpoint); err != nil {
		return nil, err
	}
	authStore := authtable.NewAuthStore(dynamodb.NewFromConfig(st.Config), st.Resources.Tables["AuthTable"])
	if err := devseed.Seed(ctx, authStore); err != nil {
		return nil, err
	}
	if opts.DataDir != "" {
		// The SQS stand-in starts empty: what the last run had queued but
		// not delivered is queued again from the kept outbox.
		n, err := wikitable.RequeueEnqueued(ctx, dynamodb.NewFromConfig(st.Config), st.Resources.Tables["WikiTable"])
		if err != nil {
			return nil, fmt.Errorf("requeue kept outbox messages: %w", err)
		}
		opts.Logger.Info("kept data", "dir", opts.DataDir, "outbox messages queued again", n)
	}
	if err := st.startFunctions(ctx, tmpl, opts); err != nil {
		return nil, err
	}
	if err := st.serveAPIs(tmpl, opts); err != nil {
		return nil, err
	}
	st.schedule(ctx, tmpl, opts)
	return st, nil
}

func withDefaults(o Options) Options {
	if o.Prefix == "" {
		o.Prefix = "reqtrace-local"
	}
	if o.WikiAddr == "" {
		o.WikiAddr = "127.0.0.1:3000"
	}
	if o.TrackerAddr == "" {
		o.TrackerAddr = "127.0.0.1:3001"
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.FunctionLog == nil {
		o.FunctionLog = os.Stderr
	}
	return o
}

func (st *Stack) startAWS(ctx context.Context, opts *Options) error {
	if opts.DynamoDBEndpoint == "" {
		if opts.DataDir != "" {
			if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
				return fmt.Errorf("data directory: %w", err)
			}
		}
		svc, err := localaws.StartDynamoDB(ctx, localaws.Options{Root: opts.Root, DataDir: opts.DataDir})
		if err != nil {
			return fmt.Errorf("start DynamoDB Local: %w", err)
		}
		st.closers = append(st.closers, svc.Stop)
		opts.DynamoDBEndpoint = svc.Endpoint
		opts.Logger.Info("DynamoDB Local up", "endpoint", svc.Endpoint)
	}
	if opts.SQSEndpoint == "" {
		svc, err := localaws.StartSQS(ctx, localaws.Options{Root: opts.Root})
		if err != nil {
			return fmt.Errorf("start the SQS stand-in: %w", err)
		}
		st.closers = append(st.closers, svc.Stop)
		opts.SQSEndpoint = svc.Endpoint
		opts.Logger.Info("moto SQS up", "endpoint", svc.Endpoint)
	}
	return nil
}

func (st *Stack) startFunctions(ctx context.Context, tmpl *samtemplate.Template, opts Options) error {
	want := map[string]bool{}
	for _, f := range opts.Functions {
		want[f] = true
	}
	aws := localaws.Environ(opts.DynamoDBEndpoint, opts.SQSEndpoint)
	for _, fn := range tmpl.Functions {
		if len(want) > 0 && !want[fn.LogicalID] {
			continue
		}
		bootstrap := filepath.Join(opts.BuildDir, fn.LogicalID, "bootstrap")
		if _, err := os.Stat(bootstrap); err != nil {
			return fmt.Errorf("%s: no bootstrap at %s: run `make build` first", fn.LogicalID, bootstrap)
		}
		env := append([]string(nil), aws...)
		vars := localaws.WithLocalEnv(tmpl.Env(fn.LogicalID, st.Resources.Resolve))
		names := make([]string, 0, len(vars))
		for k := range vars {
			names = append(names, k)
		}
		sort.Strings(names)
		for _, k := range names {
			env = append(env, k+"="+vars[k])
		}
		r, err := lambdashim.Start(ctx, lambdashim.Function{
			Name: fn.LogicalID, Bootstrap: bootstrap, Env: env, Timeout: fn.Timeout, MemoryMB: fn.MemorySize,
			MaxConcurrency: 8, Stdout: opts.FunctionLog, Stderr: opts.FunctionLog, Logger: opts.Logger,
		})
		if err != nil {
			return fmt.Errorf("start %s: %w", fn.LogicalID, err)
		}
		st.Runners[fn.LogicalID] = r
		st.closers = append(st.closers, r.Close)
	}
	return nil
}

func (st *Stack) serveAPIs(tmpl *samtemplate.Template, opts Options) error {
	routes := map[string][]gateway.Route{}
	for _, fn := range tmpl.Functions {
		r, ok := st.Runners[fn.LogicalID]
		if !ok {
			continue
		}
		for _, rt := range fn.Routes {
			routes[rt.API] = append(routes[rt.API], gateway.Route{Method: rt.Method, Path: rt.Path, Invoker: r})
		}
	}
	for _, api := range []struct {
		id, addr string
		url      *string
	}{{"WikiApi", opts.WikiAddr, &st.WikiURL}, {"TrackerApi", opts.TrackerAddr, &st.TrackerURL}} {
		if len(routes[api.id]) == 0 {
			continue
		}
		gw, err := gateway.New(api.id, routes[api.id], opts.Logger)
		if err != nil {
			return fmt.Errorf("%s gateway: %w", api.id, err)
		}
		ln, err := net.Listen("tcp", api.addr)
		if err != nil {
			return fmt.Errorf("%s: listen on %s: %w", api.id, api.addr, err)
		}
		srv := &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		st.closers = append(st.closers, func() error {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return srv.Shutdown(ctx)
		})
		*api.url = "http://" + ln.Addr().String()
	}
	return nil
}

func (st *Stack) schedule(ctx context.Context, tmpl *samtemplate.Template, opts Options) {
	if opts.SyncInterval < 0 {
		return
	}
	for _, fn := range tmpl.Functions {
		r, ok := st.Runners[fn.LogicalID]
		if !ok {
			continue
		}
		for _, s := range fn.Schedules {
			if !s.Enabled {
				continue
			}
			every := s.Rate
			if opts.SyncInterval > 0 && fn.LogicalID == "Sync" {
				every = opts.SyncInterval
			}
			rule := fn.LogicalID + "-" + s.Event
			opts.Logger.Info("schedule", "function", fn.LogicalID, "every", every.String())
			// EventBridge invokes asynchronously: Lambda retries a run that
			// failed or crashed twice (after about 1 and 2 minutes; here a
			// third of the interval and two thirds, at most those minutes).
			retryDelay := min(every/3, time.Minute)
			go scheduler.Every(ctx, every, func(ctx context.Context) error {
				_, err := r.InvokeAsync(ctx, scheduler.ScheduledEvent(rule, time.Now()), retryDelay)
				return err
			}, opts.Logger)
		}
	}
}

// Invoke runs function fn once with payload and returns its answer.
func (st *Stack) Invoke(ctx context.Context, fn string, payload []byte) ([]byte, error) {
	r, ok := st.Runners[fn]
	if !ok {
		names := slices.Sorted(maps.Keys(st.Runners))
		return nil, fmt.Errorf("no function %q in this stack; the functions are %s", fn, strings.Join(names, ", "))
	}
	return r.Invoke(ctx, payload)
}

// Close stops everything the stack started, newest first.
func (st *Stack) Close() error {
	st.cancel()
	var errs []error
	for i := len(st.closers) - 1; i >= 0; i-- {
		if err := st.closers[i](); err != nil {
			errs = append(errs, err)
		}
	}
	st.closers = nil
	return errors.Join(errs...)
}
