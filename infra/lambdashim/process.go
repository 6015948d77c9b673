package lambdashim

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// spawnLocked starts one bootstrap process and the goroutine that reaps it.
func (r *Runner) spawnLocked() (*process, error) {
	r.nextSandbox++
	p := &process{
		sandbox:  r.nextSandbox,
		exited:   make(chan struct{}),
		inflight: make(map[string]*invocation),
	}
	cmd := exec.Command(r.fn.Bootstrap)
	cmd.Dir = r.taskRoot
	cmd.Env = append(slices.Clip(r.env),
		"AWS_LAMBDA_RUNTIME_API="+r.addr+"/sandbox/"+strconv.Itoa(p.sandbox),
		"AWS_LAMBDA_LOG_STREAM_NAME="+logStreamName(),
	)
	cmd.Stdout = r.stdout
	p.stacks = &stackCounter{}
	cmd.Stderr = io.MultiWriter(r.stderr, p.stacks)
	// A child the bootstrap left behind may hold the output pipes open; do
	// not let it delay noticing that the bootstrap exited.
	cmd.WaitDelay = time.Second
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", r.fn.Bootstrap, err)
	}
	p.cmd = cmd
	p.pid = cmd.Process.Pid
	p.started = time.Now()
	p.initTimer = time.AfterFunc(r.fn.InitTimeout, func() { r.initTimedOut(p) })
	r.live[p.sandbox] = p
	r.all = append(r.all, p)
	r.starting++
	r.wg.Go(func() { r.monitor(p) })
	r.log.Info("lambda process started", "pid", p.pid, "sandbox", p.sandbox)
	return p, nil
}

// initTimedOut kills a process that did not poll /next within InitTimeout.
func (r *Runner) initTimedOut(p *process) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !p.ready.IsZero() {
		return
	}
	r.log.Warn("lambda process init timed out, killing it", "pid", p.pid, "initTimeout", r.fn.InitTimeout)
	r.killLocked(p, "init timeout", syscall.SIGKILL)
}

// monitor waits for p to exit, then fails what it was doing and starts a
// replacement if invocations are waiting.
func (r *Runner) monitor(p *process) {
	waitErr := p.cmd.Wait()
	// Kill whatever the bootstrap left running in its group.
	_ = signalGroup(p.pid, syscall.SIGKILL)
	exit := waitErr
	if p.cmd.ProcessState != nil {
		exit = nil // described by the state; waitErr may only be ErrWaitDelay
	}

	r.mu.Lock()
	defer r.mu.Unlock()
	p.initTimer.Stop()
	p.exitedAt = time.Now()
	p.exitMsg = exitDescription(p.cmd.ProcessState, exit)
	if p.killedFor != "" {
		p.exitMsg += " (" + p.killedFor + ")"
	}
	delete(r.live, p.sandbox)
	p.setReturning(r, false)
	r.waiters = slices.DeleteFunc(r.waiters, func(w *waiter) bool { return w.proc == p })

	if p.ready.IsZero() {
		r.starting--
		if !r.closed {
			// The invocation whose cold start this was fails, as in Lambda;
			// the next one tries a new process.
			r.failQueueHeadLocked(r.initError(p))
		}
	}
	for _, inv := range p.inflight {
		var err error
		if r.closed {
			err = &InvokeError{RequestID: inv.id, Type: "Runtime.ExitError",
				Message: fmt.Sprintf("RequestId: %s Error: function shut down", inv.id), cause: ErrClosed}
		} else {
			err = &InvokeError{RequestID: inv.id, Type: "Runtime.ExitError",
				Message: fmt.Sprintf("RequestId: %s Error: Runtime exited with error: %s", inv.id, p.exitMsg),
				cause:   ErrProcessExited}
		}
		r.finishLocked(inv, nil, err)
	}
	if err := r.scaleLocked(); err != nil {
		r.failQueueHeadLocked(err)
	}
	close(p.exited)
	if p.killedFor == "close" {
		r.log.Info("lambda process stopped", "pid", p.pid, "exit", p.exitMsg)
	} else {
		r.log.Warn("lambda process exited", "pid", p.pid, "exit", p.exitMsg, "invocations", p.invocations)
	}
}

// initError describes why p ended before polling /next.
func (r *Runner) initError(p *process) *InvokeError {
	if p.initErr != nil {
		return p.initErr
	}
	if p.killedFor == "init timeout" {
		return &InvokeError{Type: "Sandbox.Timedout",
			Message: fmt.Sprintf("Init timed out after %.2f seconds", r.fn.InitTimeout.Seconds()), cause: ErrInitFailed}
	}
	return &InvokeError{Type: "Runtime.ExitError",
		Message: "Runtime exited during init: " + p.exitMsg, cause: ErrInitFailed}
}

// exitDescription says how a process ended: "exit status 2", "signal: killed".
func exitDescription(state *os.ProcessState, waitErr error) string {
	if waitErr != nil || state == nil {
		return fmt.Sprintf("wait: %v", waitErr)
	}
	return state.String()
}

// newUUID returns a random (version 4) UUID, the shape of Lambda request ids.
func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// newTraceID returns an X-Ray trace header, not sampled: no daemon runs here.
func newTraceID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return fmt.Sprintf("Root=1-%08x-%s;Parent=%s;Sampled=0", time.Now().Unix(), h[:24], h[24:40])
}

func logStreamName() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return time.Now().UTC().Format("2006/01/02") + "/[$LATEST]" + hex.EncodeToString(b[:])
}

// stackCounter counts the lines of a process's stderr that start a
// goroutine's stack in a Go runtime dump ("goroutine 7 [select]:"), which
// a function's JSON log lines never do.
type stackCounter struct {
	mu      sync.Mutex
	partial []byte
	n       int
}

func (c *stackCounter) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	data := append(c.partial, b...)
	for {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			break
		}
		if line := data[:i]; bytes.HasPrefix(line, []byte("goroutine ")) && bytes.HasSuffix(line, []byte("]:")) {
			c.n++
		}
		data = data[i+1:]
	}
	c.partial = append(c.partial[:0], data[:min(len(data), 256)]...)
	return len(b), nil
}

func (c *stackCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}
