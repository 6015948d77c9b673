// Package soak is reqtrace's soak harness: a bounded, self-stopping load
// generator and fault injector for the local stack (infra/localstack), on
// loopback only. Run starts a stack whose functions reach DynamoDB Local
// through a throttling proxy (ThrottleProxy), connects each development
// tenant to its tracker through a faulty proxy (TrackerProxy), sends a
// seeded mix of requests at a target rate for a fixed duration while
// injecting faults (SIGKILL of a function's bootstrap while it serves a
// request or a sync run, a tracker answering 500, HTML or hanging,
// DynamoDB throttling), then stops the faults, lets one sync run pass and
// checks invariants over what the service answered. `make soak` runs it
// with the knobs of ConfigFromEnv; `make test` runs a 30-second soak.
package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/reqtrace/reqtrace/infra/localstack"
	"github.com/reqtrace/reqtrace/infra/scheduler"
)

// Config are the harness's knobs.
type Config struct {
	// Rate is the target rate of requests per second (SOAK_RATE, default 20).
	Rate float64
	// Duration is how long load and faults run (SOAK_DURATION, default 2m).
	Duration time.Duration
	// Seed chooses every operation and fault (SOAK_SEED; 0 picks one from
	// the clock; the report prints it).
	Seed uint64
	// SyncEvery is the interval of the scheduled functions (Sync, the
	// tracker's outbox, the baseline worker) during the run
	// (SOAK_SYNC_EVERY, default 2s; the template says 1 to 3 minutes).
	SyncEvery time.Duration
	// Workers bounds the requests in flight (SOAK_WORKERS, default 8): an
	// operation due while all are busy is dropped and the rate reached is
	// lower than Rate.
	Workers int
	// Faults turns fault injection on (SOAK_FAULTS, default true).
	Faults bool
	// MaxPage is the most requirements on a page (SOAK_MAX_PAGE, default 400).
	MaxPage int
	// Visibility is the outbound queue's visibility timeout during the run
	// (SOAK_VISIBILITY, default 10s; template.yaml says 120s). A sync run
	// killed after receiving messages leaves them invisible, and their
	// FIFO group blocked, for that long: the harness scales it down with
	// the schedule so that the final checks need not wait two minutes.
	Visibility time.Duration
}

// ConfigFromEnv reads the SOAK_* variables through lookup (os.LookupEnv).
func ConfigFromEnv(lookup func(string) (string, bool)) (Config, error) {
	c := Config{Rate: 20, Duration: 2 * time.Minute, SyncEvery: 2 * time.Second, Workers: 8, Faults: true, MaxPage: 400,
		Visibility: 10 * time.Second}
	var errs []error
	get := func(name string, parse func(string) error) {
		if v, ok := lookup(name); ok && v != "" {
			if err := parse(v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %w", name, v, err))
			}
		}
	}
	get("SOAK_RATE", func(v string) (err error) { c.Rate, err = strconv.ParseFloat(v, 64); return })
	get("SOAK_DURATION", func(v string) (err error) { c.Duration, err = time.ParseDuration(v); return })
	get("SOAK_SEED", func(v string) (err error) { c.Seed, err = strconv.ParseUint(v, 10, 64); return })
	get("SOAK_SYNC_EVERY", func(v string) (err error) { c.SyncEvery, err = time.ParseDuration(v); return })
	get("SOAK_WORKERS", func(v string) (err error) { c.Workers, err = strconv.Atoi(v); return })
	get("SOAK_FAULTS", func(v string) (err error) { c.Faults, err = strconv.ParseBool(v); return })
	get("SOAK_MAX_PAGE", func(v string) (err error) { c.MaxPage, err = strconv.Atoi(v); return })
	get("SOAK_VISIBILITY", func(v string) (err error) { c.Visibility, err = time.ParseDuration(v); return })
	if c.Rate <= 0 || c.Duration <= 0 || c.SyncEvery <= 0 || c.Workers <= 0 || c.MaxPage < 10 || c.Visibility < time.Second {
		errs = append(errs, errors.New("SOAK_RATE, SOAK_DURATION, SOAK_SYNC_EVERY and SOAK_WORKERS must be positive, SOAK_MAX_PAGE at least 10, SOAK_VISIBILITY at least 1s"))
	}
	return c, errors.Join(errs...)
}

// Env says where the harness runs: the bootstraps and the running
// DynamoDB Local and SQS stand-in it builds its stack on.
type Env struct {
	// BuildDir holds <LogicalId>/bootstrap (make build, testenv.Bootstraps).
	BuildDir string
	// DynamoDBEndpoint and SQSEndpoint are running stand-ins on loopback.
	DynamoDBEndpoint, SQSEndpoint string
	// Prefix names the stack's tables and queues.
	Prefix string
	// Logger receives the harness's progress; FunctionLog the functions'
	// output (both discarded when nil).
	Logger      *slog.Logger
	FunctionLog io.Writer
}

// harness is one run.
type harness struct {
	cfg      Config
	log      *slog.Logger
	st       *localstack.Stack
	throttle *ThrottleProxy
	tenants  []*tenantState
	client   *http.Client

	mu      sync.Mutex
	records []record
	kills   []killEvent
	faults  map[string]int
	dropped int
	retries int

	loadStart, loadEnd time.Time
	fdStart            map[int]int
	// goroutinesFresh is, per function, the most goroutines an idle
	// process listed after the setup (QuitIdle), before the load.
	goroutinesFresh map[string]int
	syncBusy        atomic.Bool
}

// record is one request or scheduled invocation the harness made.
type record struct {
	kind       string
	status     int // HTTP status; 0 for a transport error; 200/-1 for an invocation that passed/failed
	start, end time.Time
	err        string
	target     string
}

type killEvent struct {
	fn  string
	pid int
	at  time.Time
}

// Run runs one soak and returns its report. An error means the harness
// itself could not run (the stack did not start, a tenant could not be
// connected); invariant violations are in the report.
func Run(ctx context.Context, cfg Config, env Env) (*Report, error) {
	if cfg.Seed == 0 {
		cfg.Seed = uint64(time.Now().UnixNano())
	}
	logger := env.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	fnLog := env.FunctionLog
	if fnLog == nil {
		fnLog = io.Discard
	}
	throttle, err := NewThrottleProxy(env.DynamoDBEndpoint, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("throttling proxy: %w", err)
	}
	defer throttle.Close()
	st, err := localstack.Start(ctx, localstack.Options{
		BuildDir: env.BuildDir, WikiAddr: "127.0.0.1:0", TrackerAddr: "127.0.0.1:0",
		SyncInterval: -1, DynamoDBEndpoint: throttle.URL, SQSEndpoint: env.SQSEndpoint,
		Prefix: env.Prefix, Logger: slog.New(slog.DiscardHandler), FunctionLog: fnLog,
	})
	if err != nil {
		return nil, fmt.Errorf("start the local stack: %w", err)
	}
	defer st.Close()
	h := &harness{cfg: cfg, log: logger, st: st, throttle: throttle, faults: map[string]int{},
		client: &http.Client{Timeout: 90 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	defer h.client.CloseIdleConnections()
	if err := shortenVisibility(ctx, st, cfg.Visibility); err != nil {
		return nil, err
	}
	logger.Info("soak: stack up", "wiki", st.WikiURL, "tracker", st.TrackerURL, "seed", cfg.Seed)
	if err := h.setup(ctx); err != nil {
		return nil, err
	}
	for _, tn := range h.tenants {
		defer tn.proxy.Close()
	}
	h.goroutinesFresh = map[string]int{}
	for fn, gs := range h.quitIdle() {
		for _, g := range gs {
			h.goroutinesFresh[fn] = max(h.goroutinesFresh[fn], g.Count)
		}
	}
	h.load(ctx)
	logger.Info("soak: load done, checking invariants")
	rep := h.check(ctx)
	return rep, nil
}

// shortenVisibility sets the outbound queue's visibility timeout.
func shortenVisibility(ctx context.Context, st *localstack.Stack, d time.Duration) error {
	q, ok := st.Resources.Queues["OutboundQueue"]
	if !ok {
		return errors.New("no OutboundQueue in template.yaml")
	}
	_, err := sqs.NewFromConfig(st.Config).SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &q,
		Attributes: map[string]string{string(sqstypes.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(d / time.Second))}})
	if err != nil {
		return fmt.Errorf("shorten the outbound queue's visibility timeout: %w", err)
	}
	return nil
}

// load runs the operations, the schedule and the faults for cfg.Duration.
func (h *harness) load(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Duration)
	defer cancel()
	h.loadStart = time.Now()
	var bg sync.WaitGroup
	bg.Go(func() { h.schedule(ctx) })
	if h.cfg.Faults {
		bg.Go(func() { h.injectFaults(ctx) })
	}
	bg.Go(func() {
		// Function processes that survive the run are compared with this
		// sample: after a warm-up, so that first-use allocations (SDK
		// connections, caches) are not counted as growth.
		select {
		case <-ctx.Done():
		case <-time.After(h.cfg.Duration / 5):
			h.fdStart = h.sampleFDs()
		}
	})

	sem := make(chan struct{}, h.cfg.Workers)
	var ops sync.WaitGroup
	every := time.Duration(float64(time.Second) / h.cfg.Rate)
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for i := uint64(0); ; i++ {
		select {
		case <-ctx.Done():
			h.loadEnd = time.Now()
			ops.Wait()
			bg.Wait()
			h.quiesce()
			return
		case <-ticker.C:
		}
		// Each operation draws from its own stream: the same seed gives the
		// same operations in the same order, whatever the timing.
		rng := rand.New(rand.NewPCG(h.cfg.Seed, i+1))
		select {
		case sem <- struct{}{}:
			ops.Go(func() {
				defer func() { <-sem }()
				h.operate(context.WithoutCancel(ctx), rng)
			})
		default:
			h.mu.Lock()
			h.dropped++
			h.mu.Unlock()
		}
	}
}

// quiesce stops every fault.
func (h *harness) quiesce() {
	h.throttle.SetShare(0)
	for _, tn := range h.tenants {
		tn.proxy.SetMode(TrackerOK)
	}
}

// scheduledFunctions are the functions the template schedules, invoked
// here at SyncEvery instead of their rates.
var scheduledFunctions = []string{"Sync", "TrackerOutbox", "WikiBaselineJobs"}

// schedule invokes the scheduled functions every SyncEvery, as EventBridge
// would, with Lambda's retries of asynchronous invocations.
func (h *harness) schedule(ctx context.Context) {
	t := time.NewTicker(h.cfg.SyncEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, fn := range scheduledFunctions {
			if _, ok := h.st.Runners[fn]; ok {
				h.invokeScheduled(context.WithoutCancel(ctx), fn, 2)
			}
		}
	}
}

// invokeScheduled invokes fn with a scheduled event as Lambda runs an
// asynchronous invocation (lambdashim.InvokeAsync): a run that ends in a
// function error, a crash included, is tried again up to retries times
// (Lambda: 2, after about 1 and 2 minutes; here after 200 and 400 ms). It
// reports whether an attempt passed.
func (h *harness) invokeScheduled(ctx context.Context, fn string, retries int) bool {
	start := time.Now()
	if fn == "Sync" {
		h.syncBusy.Store(true)
		defer h.syncBusy.Store(false)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	payload := scheduler.ScheduledEvent(fn+"-Schedule", time.Now())
	var attempts int
	var err error
	if retries > 0 {
		attempts, err = h.st.Runners[fn].InvokeAsync(ctx, payload, 200*time.Millisecond)
	} else {
		attempts, err = 1, func() error { _, err := h.st.Invoke(ctx, fn, payload); return err }()
	}
	rec := record{kind: "invoke:" + fn, status: 200, start: start, end: time.Now()}
	if err != nil {
		rec.status, rec.err = -1, err.Error()
	}
	h.mu.Lock()
	h.records = append(h.records, rec)
	h.retries += attempts - 1
	h.mu.Unlock()
	return err == nil
}

func (h *harness) add(r record) {
	h.mu.Lock()
	h.records = append(h.records, r)
	h.mu.Unlock()
}

// injectFaults injects one fault at a random moment every 0.5 to 2.5 s.
func (h *harness) injectFaults(ctx context.Context) {
	rng := rand.New(rand.NewPCG(h.cfg.Seed, 0xfa017))
	fns := slices.Sorted(maps.Keys(h.st.Runners))
	for {
		wait := 500*time.Millisecond + time.Duration(rng.Int64N(int64(2*time.Second)))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		switch k := rng.IntN(10); {
		case k < 4:
			h.kill(rng, fns)
		case k < 7:
			tn := h.tenants[rng.IntN(len(h.tenants))]
			mode := TrackerMode(1 + rng.IntN(3))
			d := time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))
			tn.proxy.SetMode(mode)
			h.fault(mode.String())
			go func() {
				select {
				case <-time.After(d):
				case <-ctx.Done():
				}
				tn.proxy.SetMode(TrackerOK)
			}()
		default:
			d := 2*time.Second + time.Duration(rng.Int64N(int64(2*time.Second)))
			h.throttle.SetShare(0.2)
			h.fault("dynamodb-throttle-window")
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
			h.throttle.SetShare(0)
		}
	}
}

// kill SIGKILLs the bootstrap of a function that is serving an invocation:
// the Sync function while a sync run goes, when one does and the draw says
// so, otherwise the first busy function in a random order.
func (h *harness) kill(rng *rand.Rand, fns []string) {
	order := slices.Clone(fns)
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	if rng.IntN(3) == 0 && h.syncBusy.Load() {
		order = append([]string{"Sync"}, order...)
	}
	for _, fn := range order {
		if pid, ok := h.st.Runners[fn].KillBusy(); ok {
			h.mu.Lock()
			h.kills = append(h.kills, killEvent{fn: fn, pid: pid, at: time.Now()})
			h.mu.Unlock()
			h.fault("kill:" + fn)
			h.fault("kill")
			return
		}
	}
	h.fault("kill-skipped (nothing busy)")
}

func (h *harness) fault(kind string) {
	h.mu.Lock()
	h.faults[kind]++
	h.mu.Unlock()
}
