// Package lambdashim runs a Lambda function's real bootstrap executable on
// this machine behind an implementation of the AWS Lambda Runtime API
// (2018-06-01), so the local stack and the tests exercise the binary that is
// deployed, without Docker or the SAM CLI.
//
// One Runner serves one function. It listens on a loopback port and starts
// bootstrap processes on demand, up to Function.MaxConcurrency: each process
// is one execution environment that handles one invocation at a time, as in
// Lambda. The first process starts with the Runner; another starts when an
// invocation arrives and every process is busy or still starting (a cold
// start). Invocations are handed to processes polling
// /runtime/invocation/next; the function timeout is enforced by killing the
// process, and a process that dies is replaced by the next invocation that
// needs one.
//
// Every process sees its own Runtime API endpoint, as in Lambda, but all of
// them share the Runner's single listener: AWS_LAMBDA_RUNTIME_API is
// "127.0.0.1:PORT/sandbox/N" and the runtime client appends
// "/2018-06-01/runtime/...". That is how the process that calls is known
// without one port per process. aws-lambda-go builds its URLs this way; a
// runtime that parsed the variable strictly as host:port would not work.
//
// Where it differs from Lambda on purpose:
//   - an invocation that finds MaxConcurrency processes busy waits in a
//     queue (bounded by the caller's context) instead of being throttled;
//   - memory is not limited: MemoryMB only sets AWS_LAMBDA_FUNCTION_MEMORY_SIZE;
//   - processes are not frozen between invocations nor recycled when idle.
package lambdashim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Limits and defaults taken from Lambda.
const (
	// MaxRequestPayload is the largest payload Invoke accepts (6 MiB, the
	// limit of synchronous Lambda invocations).
	MaxRequestPayload = 6 << 20
	// MaxResponsePayload is the largest response a function may return;
	// Lambda reports it as 6291556 bytes.
	MaxResponsePayload = 6<<20 + 100

	defaultTimeout         = 3 * time.Second
	defaultInitTimeout     = 10 * time.Second
	defaultShutdownTimeout = 2 * time.Second
	defaultMemoryMB        = 128
	defaultMaxConcurrency  = 4
	accountID              = "000000000000"
	defaultRegion          = "us-east-1"
)

// Function describes the function a Runner runs. Zero values take Lambda's
// defaults where Lambda has one.
type Function struct {
	// Name is the function name (AWS_LAMBDA_FUNCTION_NAME, the ARN). Required.
	Name string
	// Bootstrap is the path of the executable, built for this machine with
	// -tags lambda.norpc. Its directory becomes LAMBDA_TASK_ROOT and the
	// working directory. Required.
	Bootstrap string
	// Env holds extra KEY=VALUE variables, added after os.Environ(). Keys the
	// shim sets itself (see Start) are rejected, as Lambda rejects reserved keys.
	Env []string
	// Timeout is the function timeout (default 3s, Lambda's default).
	Timeout time.Duration
	// InitTimeout bounds the time from process start to its first
	// /invocation/next call (default 10s, Lambda's init limit).
	InitTimeout time.Duration
	// ShutdownTimeout is how long Close waits after SIGTERM before SIGKILL
	// (default 2s).
	ShutdownTimeout time.Duration
	// MemoryMB is reported in AWS_LAMBDA_FUNCTION_MEMORY_SIZE (default 128);
	// it is not enforced.
	MemoryMB int
	// MaxConcurrency is the most processes run at once (default 4).
	MaxConcurrency int
	// Stdout and Stderr receive the processes' output (default os.Stdout and
	// os.Stderr). Writes from different processes are serialized.
	Stdout, Stderr io.Writer
	// Logger receives the shim's own events: process start and exit,
	// timeouts (default: discarded).
	Logger *slog.Logger
}

// reservedEnv are the variables the shim sets for every process; Function.Env
// may not set them.
var reservedEnv = []string{
	"AWS_LAMBDA_RUNTIME_API", "AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE",
	"AWS_LAMBDA_FUNCTION_VERSION", "AWS_LAMBDA_LOG_GROUP_NAME", "AWS_LAMBDA_LOG_STREAM_NAME",
	"AWS_LAMBDA_INITIALIZATION_TYPE", "_HANDLER", "LAMBDA_TASK_ROOT", "TZ",
}

// Runner runs one function's bootstrap processes and serves their Runtime
// API. It is safe for concurrent use. Close it to stop the processes.
type Runner struct {
	fn       Function
	taskRoot string
	env      []string // os.Environ, fn.Env and the shim's variables, without the per-process ones
	arn      string
	addr     string // host:port of the listener
	srv      *http.Server
	stdout   io.Writer
	stderr   io.Writer
	log      *slog.Logger

	stopCtx   func() bool
	closeOnce sync.Once
	closeErr  error
	wg        sync.WaitGroup // the HTTP server and one monitor per process

	mu          sync.Mutex
	closed      bool
	nextSandbox int
	live        map[int]*process // processes not yet exited, by sandbox number
	all         []*process       // every process ever started, for Stats
	starting    int              // live processes that have not yet polled /next
	returning   int              // live processes that answered and will poll /next again
	waiters     []*waiter        // idle processes polling /next, oldest first
	queue       []*invocation    // invocations waiting for a process, oldest first
}

// process is one bootstrap process: one execution environment.
type process struct {
	sandbox   int
	pid       int
	cmd       *exec.Cmd
	started   time.Time
	ready     time.Time // first /next: end of init
	firstResp time.Time // first response or error posted
	exitedAt  time.Time
	exitMsg   string
	exited    chan struct{} // closed once the process has been reaped
	inflight  map[string]*invocation
	initErr   *InvokeError // reported through /runtime/init/error
	initTimer *time.Timer
	killedFor string // why the shim killed it: "timeout", "init timeout", "close"
	returning bool   // answered its invocation, /next not yet called again

	invocations int
	errors      int
	stacks      *stackCounter // goroutine stacks its stderr printed
}

// waiter is one /invocation/next call waiting for work.
type waiter struct {
	proc *process
	ch   chan *invocation // buffered: the assignment never blocks
}

// invocation is one call of the function.
type invocation struct {
	id       string
	payload  []byte
	traceID  string
	proc     *process // set while a process handles it
	deadline time.Time
	timer    *time.Timer
	done     bool
	result   chan result // buffered: finishing never blocks
}

type result struct {
	body []byte
	err  error
}

// Start validates fn, listens on 127.0.0.1:0, starts the first bootstrap
// process and returns the Runner. Canceling ctx has the effect of Close.
//
// Each process gets os.Environ(), then fn.Env, then AWS_LAMBDA_RUNTIME_API,
// AWS_LAMBDA_FUNCTION_NAME, AWS_LAMBDA_FUNCTION_MEMORY_SIZE,
// AWS_LAMBDA_FUNCTION_VERSION=$LATEST, AWS_LAMBDA_LOG_GROUP_NAME,
// AWS_LAMBDA_LOG_STREAM_NAME, AWS_LAMBDA_INITIALIZATION_TYPE=on-demand,
// _HANDLER=bootstrap, LAMBDA_TASK_ROOT and TZ=UTC. Each process runs in its
// own process group, so a Ctrl-C in the terminal reaches only the parent,
// which decides when to stop them.
func Start(ctx context.Context, fn Function) (*Runner, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start function %s: %w", fn.Name, err)
	}
	fn, err := withDefaults(fn)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start function %s: %w", fn.Name, err)
	}
	region := lookupEnv(fn.Env, "AWS_REGION")
	if region == "" {
		region = os.Getenv("AWS_REGION")
	}
	if region == "" {
		region = defaultRegion
	}
	r := &Runner{
		fn:       fn,
		taskRoot: filepath.Dir(fn.Bootstrap),
		arn:      "arn:aws:lambda:" + region + ":" + accountID + ":function:" + fn.Name,
		addr:     ln.Addr().String(),
		stdout:   fn.Stdout,
		stderr:   fn.Stderr,
		log:      fn.Logger.With("function", fn.Name),
		stopCtx:  func() bool { return false },
		live:     make(map[int]*process),
	}
	// Files are written by the processes directly; other writers are shared
	// by several copying goroutines and need a lock.
	var outMu sync.Mutex
	if _, ok := r.stdout.(*os.File); !ok {
		r.stdout = &lockedWriter{mu: &outMu, w: r.stdout}
	}
	if _, ok := r.stderr.(*os.File); !ok {
		r.stderr = &lockedWriter{mu: &outMu, w: r.stderr}
	}
	r.env = append(os.Environ(), fn.Env...)
	r.env = append(r.env,
		"AWS_LAMBDA_FUNCTION_NAME="+fn.Name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE="+strconv.Itoa(fn.MemoryMB),
		"AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
		"AWS_LAMBDA_LOG_GROUP_NAME=/aws/lambda/"+fn.Name,
		"AWS_LAMBDA_INITIALIZATION_TYPE=on-demand",
		"_HANDLER=bootstrap",
		"LAMBDA_TASK_ROOT="+r.taskRoot,
		"TZ=UTC",
	)
	r.srv = &http.Server{
		Handler:           r.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(r.log.Handler(), slog.LevelDebug),
	}
	r.wg.Go(func() { _ = r.srv.Serve(ln) })

	r.mu.Lock()
	_, err = r.spawnLocked()
	r.mu.Unlock()
	if err != nil {
		_ = r.Close()
		return nil, err
	}
	r.stopCtx = context.AfterFunc(ctx, func() { _ = r.Close() })
	return r, nil
}

func withDefaults(fn Function) (Function, error) {
	if fn.Name == "" {
		return fn, errors.New("start function: empty name")
	}
	if fn.Bootstrap == "" {
		return fn, fmt.Errorf("start function %s: empty bootstrap path", fn.Name)
	}
	abs, err := filepath.Abs(fn.Bootstrap)
	if err != nil {
		return fn, fmt.Errorf("start function %s: %w", fn.Name, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return fn, fmt.Errorf("start function %s: %w", fn.Name, err)
	}
	if !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0 {
		return fn, fmt.Errorf("start function %s: %s is not an executable file", fn.Name, abs)
	}
	fn.Bootstrap = abs
	for _, kv := range fn.Env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return fn, fmt.Errorf("start function %s: env entry %q is not KEY=VALUE", fn.Name, kv)
		}
		if slices.Contains(reservedEnv, k) {
			return fn, fmt.Errorf("start function %s: env key %s is reserved", fn.Name, k)
		}
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"timeout", &fn.Timeout, defaultTimeout},
		{"init timeout", &fn.InitTimeout, defaultInitTimeout},
		{"shutdown timeout", &fn.ShutdownTimeout, defaultShutdownTimeout},
	} {
		if *d.v < 0 {
			return fn, fmt.Errorf("start function %s: negative %s", fn.Name, d.name)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if fn.MemoryMB < 0 || fn.MaxConcurrency < 0 {
		return fn, fmt.Errorf("start function %s: negative memory or concurrency", fn.Name)
	}
	if fn.MemoryMB == 0 {
		fn.MemoryMB = defaultMemoryMB
	}
	if fn.MaxConcurrency == 0 {
		fn.MaxConcurrency = defaultMaxConcurrency
	}
	if fn.Stdout == nil {
		fn.Stdout = os.Stdout
	}
	if fn.Stderr == nil {
		fn.Stderr = os.Stderr
	}
	if fn.Logger == nil {
		fn.Logger = slog.New(slog.DiscardHandler)
	}
	return fn, nil
}

// Invoke runs the function once with payload (a JSON event) and returns its
// response. It blocks until the function answers, fails or times out, or ctx
// is done. Like a synchronous Lambda invocation, the deadline given to the
// function is the function timeout from the moment a process takes the
// invocation; waiting for a free process is bounded only by ctx.
//
// Errors:
//   - *InvokeError when the function reported an error (POST .../error or a
//     panic) or failed: it timed out (wraps ErrTimeout; the process is
//     killed), its process exited (ErrProcessExited), it could not start
//     (ErrInitFailed), or the response was too large;
//   - ErrClosed (possibly inside an *InvokeError) when the Runner is closed;
//   - ErrRequestTooLarge when payload exceeds MaxRequestPayload;
//   - ctx.Err() when ctx ends first: an invocation already taken by a
//     process still runs to its end, as in Lambda.
func (r *Runner) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	if len(payload) > MaxRequestPayload {
		return nil, fmt.Errorf("invoke %s: %d bytes: %w", r.fn.Name, len(payload), ErrRequestTooLarge)
	}
	inv := &invocation{
		id:      newUUID(),
		payload: payload,
		traceID: newTraceID(),
		result:  make(chan result, 1),
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, fmt.Errorf("invoke %s: %w", r.fn.Name, ErrClosed)
	}
	if len(r.waiters) > 0 {
		w := r.waiters[0]
		r.waiters = r.waiters[1:]
		r.assignLocked(inv, w.proc)
		w.ch <- inv
	} else {
		r.queue = append(r.queue, inv)
		if err := r.scaleLocked(); err != nil {
			r.queue = slices.DeleteFunc(r.queue, func(q *invocation) bool { return q == inv })
			r.mu.Unlock()
			return nil, fmt.Errorf("invoke %s: %w", r.fn.Name, err)
		}
	}
	r.mu.Unlock()

	select {
	case res := <-inv.result:
		return res.body, res.err
	case <-ctx.Done():
		r.mu.Lock()
		r.queue = slices.DeleteFunc(r.queue, func(q *invocation) bool { return q == inv })
		r.mu.Unlock()
		return nil, fmt.Errorf("invoke %s: %w", r.fn.Name, ctx.Err())
	}
}

// scaleLocked starts processes while more invocations wait than processes are
// about to poll /next (starting, or back from answering), up to
// MaxConcurrency: busy processes do not count, so an invocation that finds
// every process busy causes a cold start, as in Lambda.
func (r *Runner) scaleLocked() error {
	for !r.closed && len(r.queue) > r.starting+r.returning && len(r.live) < r.fn.MaxConcurrency {
		if _, err := r.spawnLocked(); err != nil {
			return err
		}
	}
	return nil
}

// assignLocked gives inv to p and starts the function timeout.
func (r *Runner) assignLocked(inv *invocation, p *process) {
	inv.proc = p
	inv.deadline = time.Now().Add(r.fn.Timeout)
	inv.timer = time.AfterFunc(r.fn.Timeout, func() { r.timedOut(inv, p) })
	p.inflight[inv.id] = inv
	p.invocations++
}

// unassignLocked puts back at the head of the queue an invocation whose
// process went away before receiving it.
func (r *Runner) unassignLocked(inv *invocation) {
	if inv.done {
		return
	}
	p := inv.proc
	delete(p.inflight, inv.id)
	p.invocations--
	inv.timer.Stop()
	inv.proc = nil
	r.queue = slices.Insert(r.queue, 0, inv)
	if err := r.scaleLocked(); err != nil {
		r.failQueueHeadLocked(err)
	}
}

// finishLocked completes inv once; later results are dropped.
func (r *Runner) finishLocked(inv *invocation, body []byte, err error) {
	if inv.done {
		return
	}
	inv.done = true
	if p := inv.proc; p != nil {
		delete(p.inflight, inv.id)
		if err != nil {
			p.errors++
		}
		inv.timer.Stop()
	}
	inv.result <- result{body: body, err: err}
}

func (r *Runner) failQueueHeadLocked(err error) {
	if len(r.queue) == 0 {
		return
	}
	inv := r.queue[0]
	r.queue = r.queue[1:]
	var ie *InvokeError
	if errors.As(err, &ie) {
		c := *ie
		c.RequestID = inv.id
		err = &c
	}
	r.finishLocked(inv, nil, err)
}

// timedOut ends inv with a timeout and kills its process, as Lambda does.
func (r *Runner) timedOut(inv *invocation, p *process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if inv.done || inv.proc != p {
		return
	}
	r.finishLocked(inv, nil, &InvokeError{
		RequestID: inv.id,
		Type:      "Sandbox.Timedout",
		Message:   fmt.Sprintf("RequestId: %s Error: Task timed out after %.2f seconds", inv.id, r.fn.Timeout.Seconds()),
		cause:     ErrTimeout,
	})
	r.log.Warn("invocation timed out, killing process", "requestId", inv.id, "pid", p.pid, "timeout", r.fn.Timeout)
	r.killLocked(p, "timeout", syscall.SIGKILL)
}

func (r *Runner) killLocked(p *process, why string, sig syscall.Signal) {
	if !p.exitedAt.IsZero() {
		return
	}
	if p.killedFor == "" {
		p.killedFor = why
	}
	if err := signalGroup(p.pid, sig); err != nil {
		r.log.Warn("signal process group", "pid", p.pid, "signal", sig.String(), "err", err)
	}
}

// Close stops the Runner: queued and running invocations fail with ErrClosed,
// every process group gets SIGTERM, then SIGKILL after
// Function.ShutdownTimeout, and Close returns once all of them have been
// reaped and the listener is closed. Calling Close again returns the first
// result.
func (r *Runner) Close() error {
	r.closeOnce.Do(func() { r.closeErr = r.shutdown() })
	return r.closeErr
}

func (r *Runner) shutdown() error {
	r.stopCtx()
	r.mu.Lock()
	r.closed = true
	for _, inv := range r.queue {
		r.finishLocked(inv, nil, fmt.Errorf("invoke %s: %w", r.fn.Name, ErrClosed))
	}
	r.queue = nil
	procs := make([]*process, 0, len(r.live))
	for _, p := range r.live {
		procs = append(procs, p)
		r.killLocked(p, "close", syscall.SIGTERM)
	}
	r.mu.Unlock()

	allExited := make(chan struct{})
	go func() {
		for _, p := range procs {
			<-p.exited
		}
		close(allExited)
	}()
	grace := time.NewTimer(r.fn.ShutdownTimeout)
	defer grace.Stop()
	select {
	case <-allExited:
	case <-grace.C:
		r.mu.Lock()
		for _, p := range procs {
			r.killLocked(p, "close", syscall.SIGKILL)
		}
		r.mu.Unlock()
		<-allExited
	}
	err := r.srv.Close()
	r.wg.Wait()
	if err != nil {
		return fmt.Errorf("close function %s: %w", r.fn.Name, err)
	}
	return nil
}

// Stats describes the processes of a Runner.
type Stats struct {
	// Processes lists every process started, running or exited, oldest first.
	Processes []ProcessStats
	// Queued counts invocations waiting for a process.
	Queued int
}

// Running counts the processes that have not exited.
func (s Stats) Running() int {
	n := 0
	for _, p := range s.Processes {
		if p.Exited.IsZero() {
			n++
		}
	}
	return n
}

// ProcessStats describes one bootstrap process (one execution environment).
type ProcessStats struct {
	// PID is the process id (also its process group id).
	PID int
	// Started is when the process was started.
	Started time.Time
	// Ready is when it first polled /invocation/next (end of init); zero
	// until then.
	Ready time.Time
	// FirstResponse is when it first answered an invocation (response or
	// error); zero until then.
	FirstResponse time.Time
	// Invocations counts invocations given to it; Errors those that ended in
	// an error (function error, timeout, crash).
	Invocations, Errors int
	// Exited is when it was reaped (zero while it runs); ExitReason says how
	// it ended ("exit status 2", "signal: killed (timeout)").
	Exited     time.Time
	ExitReason string
}

// InitDuration is the time from process start to its first poll of
// /invocation/next, Lambda's "Init Duration"; zero if it never got there.
func (p ProcessStats) InitDuration() time.Duration {
	if p.Ready.IsZero() {
		return 0
	}
	return p.Ready.Sub(p.Started)
}

// ColdStart is the time from process start to its first answer, what the
// first caller of a new environment waits beyond the handler itself; zero if
// it never answered.
func (p ProcessStats) ColdStart() time.Duration {
	if p.FirstResponse.IsZero() {
		return 0
	}
	return p.FirstResponse.Sub(p.Started)
}

// Stats returns a snapshot of the Runner's processes.
func (r *Runner) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Stats{Processes: make([]ProcessStats, 0, len(r.all)), Queued: len(r.queue)}
	for _, p := range r.all {
		s.Processes = append(s.Processes, ProcessStats{
			PID:           p.pid,
			Started:       p.started,
			Ready:         p.ready,
			FirstResponse: p.firstResp,
			Invocations:   p.invocations,
			Errors:        p.errors,
			Exited:        p.exitedAt,
			ExitReason:    p.exitMsg,
		})
	}
	return s
}

// lockedWriter serializes writes of several processes to one writer.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func lookupEnv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, _ := strings.Cut(kv, "="); k == key {
			v = val
		}
	}
	return v
}

// KillBusy sends SIGKILL to one process that is serving an invocation, the
// way an execution environment dies in Lambda (out of memory, a host
// failure): fault injection for soak tests. It returns the process id and
// true, or false when no process is busy. The invocation fails with
// ErrProcessExited (Runtime.ExitError), which an API Gateway answers with
// 502 and an asynchronous invocation retries; the next invocation gets a
// fresh process.
func (r *Runner) KillBusy() (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var busy []*process
	for _, p := range r.live {
		if len(p.inflight) > 0 && p.exitedAt.IsZero() && p.killedFor == "" {
			busy = append(busy, p)
		}
	}
	if len(busy) == 0 || r.closed {
		return 0, false
	}
	slices.SortFunc(busy, func(a, b *process) int { return a.sandbox - b.sandbox })
	p := busy[0]
	r.killLocked(p, "fault injection", syscall.SIGKILL)
	return p.pid, true
}

// Goroutines is what QuitIdle learned of one process.
type Goroutines struct {
	PID, Invocations int
	// Count is how many goroutines the process's dump listed (those of
	// the runtime included); -1 when it printed none before the timeout.
	Count int
}

// QuitIdle sends SIGQUIT to every live process that serves no invocation:
// the Go runtime prints every goroutine's stack to stderr and exits. It
// waits up to timeout for each to exit and returns how many goroutines
// each listed: for soak tests, a leak of goroutines shows as a count that
// grows with the invocations a process served. The Runner starts fresh
// processes for later invocations.
func (r *Runner) QuitIdle(timeout time.Duration) []Goroutines {
	r.mu.Lock()
	var idle []*process
	for _, p := range r.live {
		if len(p.inflight) == 0 && p.exitedAt.IsZero() && p.killedFor == "" && !p.ready.IsZero() {
			idle = append(idle, p)
		}
	}
	out := make([]Goroutines, 0, len(idle))
	for _, p := range idle {
		r.killLocked(p, "goroutine dump", syscall.SIGQUIT)
		out = append(out, Goroutines{PID: p.pid, Invocations: p.invocations})
	}
	r.mu.Unlock()
	for i, p := range idle {
		select {
		case <-p.exited:
		case <-time.After(timeout):
		}
		g := &out[i]
		g.Count = p.stacks.count()
		if g.Count == 0 {
			g.Count = -1
		}
	}
	return out
}

// AsyncRetries is how many times Lambda retries an asynchronous invocation
// (an EventBridge schedule, an S3 or SNS event) that ended in a function
// error, a crash or a timeout included.
const AsyncRetries = 2

// InvokeAsync runs the function as Lambda runs an asynchronous invocation:
// when an attempt ends in an *InvokeError (the function's own error, its
// process killed or timed out) it is tried again, up to AsyncRetries
// times, after retryDelay and then twice retryDelay (Lambda waits about one
// and then two minutes), each time on whatever process is free, a fresh one
// if the last died. It returns the number of attempts and the last
// attempt's error. ErrClosed, a refused payload and the end of ctx are not
// retried.
func (r *Runner) InvokeAsync(ctx context.Context, payload []byte, retryDelay time.Duration) (int, error) {
	for attempt := 1; ; attempt++ {
		_, err := r.Invoke(ctx, payload)
		var ie *InvokeError
		if err == nil || !errors.As(err, &ie) || errors.Is(err, ErrClosed) || attempt > AsyncRetries {
			return attempt, err
		}
		r.log.Warn("asynchronous invocation failed, retrying", "requestId", ie.RequestID, "attempt", attempt, "error", ie.Error())
		select {
		case <-time.After(retryDelay * time.Duration(attempt)):
		case <-ctx.Done():
			return attempt, fmt.Errorf("invoke %s: %w", r.fn.Name, ctx.Err())
		}
	}
}
