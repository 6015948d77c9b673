package lambdashim

import (
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// Runtime API headers (https://docs.aws.amazon.com/lambda/latest/dg/runtimes-api.html).
const (
	headerRequestID       = "Lambda-Runtime-Aws-Request-Id"
	headerDeadlineMs      = "Lambda-Runtime-Deadline-Ms"
	headerFunctionARN     = "Lambda-Runtime-Invoked-Function-Arn"
	headerTraceID         = "Lambda-Runtime-Trace-Id"
	headerErrorType       = "Lambda-Runtime-Function-Error-Type"
	trailerErrorBody      = "Lambda-Runtime-Function-Error-Body"
	headerExtensionID     = "Lambda-Extension-Identifier"
	sandboxPrefix         = "/sandbox/{sandbox}"
	runtimePrefix         = sandboxPrefix + "/2018-06-01/runtime"
	extensionPrefix       = sandboxPrefix + "/2020-01-01/extension"
	responseTooLargeError = "Exceeded maximum allowed payload size (6291556 bytes)."
)

// routes serves the Runtime API of every process, each under its
// /sandbox/N prefix, plus the two Extensions API calls aws-lambda-go makes
// for lambda.WithEnableSIGTERM, so that option does not log a failure here.
func (r *Runner) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+runtimePrefix+"/invocation/next", r.withProcess(r.next))
	mux.HandleFunc("POST "+runtimePrefix+"/invocation/{id}/response", r.withProcess(r.response))
	mux.HandleFunc("POST "+runtimePrefix+"/invocation/{id}/error", r.withProcess(r.invocationError))
	mux.HandleFunc("POST "+runtimePrefix+"/init/error", r.withProcess(r.initErrorReport))
	mux.HandleFunc("POST "+extensionPrefix+"/register", r.withProcess(r.registerExtension))
	mux.HandleFunc("GET "+extensionPrefix+"/event/next", r.withProcess(r.extensionNext))
	return mux
}

// withProcess resolves the calling process from the /sandbox/N prefix.
func (r *Runner) withProcess(h func(http.ResponseWriter, *http.Request, *process)) http.HandlerFunc {
	return func(w http.ResponseWriter, req *http.Request) {
		n, err := strconv.Atoi(req.PathValue("sandbox"))
		r.mu.Lock()
		p := r.live[n]
		r.mu.Unlock()
		if err != nil || p == nil {
			apiError(w, http.StatusNotFound, "UnknownSandbox", "no running process for "+req.URL.Path)
			return
		}
		h(w, req, p)
	}
}

// next hands the process its next invocation, waiting for one if needed.
func (r *Runner) next(w http.ResponseWriter, req *http.Request, p *process) {
	r.mu.Lock()
	if p.ready.IsZero() {
		p.ready = time.Now()
		p.initTimer.Stop()
		r.starting--
	}
	p.setReturning(r, false)
	if r.closed {
		r.mu.Unlock()
		<-req.Context().Done() // the process is being stopped
		return
	}
	var inv *invocation
	var wt *waiter
	if len(r.queue) > 0 {
		inv = r.queue[0]
		r.queue = r.queue[1:]
		r.assignLocked(inv, p)
	} else {
		wt = &waiter{proc: p, ch: make(chan *invocation, 1)}
		r.waiters = append(r.waiters, wt)
	}
	r.mu.Unlock()

	if inv == nil {
		select {
		case inv = <-wt.ch:
		case <-req.Context().Done():
			// The process went away (or dropped the connection) while idle.
			r.mu.Lock()
			r.waiters = slices.DeleteFunc(r.waiters, func(x *waiter) bool { return x == wt })
			select {
			case inv := <-wt.ch: // assigned just now: give it to another process
				r.unassignLocked(inv)
			default:
			}
			r.mu.Unlock()
			return
		}
	}
	h := w.Header()
	h.Set(headerRequestID, inv.id)
	h.Set(headerDeadlineMs, strconv.FormatInt(inv.deadline.UnixMilli(), 10))
	h.Set(headerFunctionARN, r.arn)
	h.Set(headerTraceID, inv.traceID)
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	// A failed write means the process is dying: its exit, or else the
	// timeout, ends the invocation.
	_, _ = w.Write(inv.payload)
}

// response completes an invocation with the function's result.
func (r *Runner) response(w http.ResponseWriter, req *http.Request, p *process) {
	body, err := io.ReadAll(io.LimitReader(req.Body, MaxResponsePayload+1))
	id := req.PathValue("id")
	r.mu.Lock()
	defer r.mu.Unlock()
	inv := p.inflight[id]
	if inv == nil {
		apiError(w, http.StatusBadRequest, "InvalidRequestID", "no invocation "+id+" in progress")
		return
	}
	defer r.answeredLocked(p)
	switch {
	case err != nil:
		r.finishLocked(inv, nil, &InvokeError{RequestID: id, Type: "Runtime.ExitError",
			Message: "reading the response: " + err.Error(), cause: ErrProcessExited})
		apiError(w, http.StatusBadRequest, "InvalidResponse", err.Error())
	case len(body) > MaxResponsePayload:
		r.finishLocked(inv, nil, &InvokeError{RequestID: id, Type: "Function.ResponseSizeTooLarge",
			Message: "Response payload size exceeded maximum allowed payload size (6291556 bytes)."})
		apiError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge", responseTooLargeError)
	case req.Trailer.Get(headerErrorType) != "":
		// A streamed response that failed midway reports the error in trailers.
		errBody, _ := base64.StdEncoding.DecodeString(req.Trailer.Get(trailerErrorBody))
		r.finishLocked(inv, nil, parseErrorBody(id, errBody, req.Trailer.Get(headerErrorType)))
		accepted(w)
	default:
		r.finishLocked(inv, body, nil)
		accepted(w)
	}
}

// invocationError completes an invocation with a function error.
func (r *Runner) invocationError(w http.ResponseWriter, req *http.Request, p *process) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, MaxResponsePayload))
	id := req.PathValue("id")
	r.mu.Lock()
	defer r.mu.Unlock()
	inv := p.inflight[id]
	if inv == nil {
		apiError(w, http.StatusBadRequest, "InvalidRequestID", "no invocation "+id+" in progress")
		return
	}
	r.finishLocked(inv, nil, parseErrorBody(id, body, req.Header.Get(headerErrorType)))
	r.answeredLocked(p)
	accepted(w)
}

// initErrorReport records an init failure; the process is then stopped, as
// Lambda resets an environment whose init failed.
func (r *Runner) initErrorReport(w http.ResponseWriter, req *http.Request, p *process) {
	body, _ := io.ReadAll(io.LimitReader(req.Body, MaxResponsePayload))
	r.mu.Lock()
	defer r.mu.Unlock()
	if !p.ready.IsZero() {
		apiError(w, http.StatusForbidden, "InvalidStateTransition", "init already completed")
		return
	}
	ie := parseErrorBody("", body, req.Header.Get(headerErrorType))
	ie.cause = ErrInitFailed
	p.initErr = ie
	accepted(w)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	r.killLocked(p, "init error", syscall.SIGKILL)
}

// registerExtension accepts the internal extension aws-lambda-go registers to
// receive SIGTERM; Close sends SIGTERM anyway.
func (r *Runner) registerExtension(w http.ResponseWriter, req *http.Request, p *process) {
	_, _ = io.Copy(io.Discard, io.LimitReader(req.Body, 1<<16))
	w.Header().Set(headerExtensionID, newUUID())
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{
		"functionName":    r.fn.Name,
		"functionVersion": "$LATEST",
		"handler":         "bootstrap",
	})
}

// extensionNext never delivers an event: the extension registered for none.
func (r *Runner) extensionNext(w http.ResponseWriter, req *http.Request, p *process) {
	<-req.Context().Done()
}

// answeredLocked records that p posted a result; once nothing else is in
// flight it is expected back on /next.
func (r *Runner) answeredLocked(p *process) {
	if p.firstResp.IsZero() {
		p.firstResp = time.Now()
	}
	if len(p.inflight) == 0 {
		p.setReturning(r, true)
	}
}

func (p *process) setReturning(r *Runner, v bool) {
	if p.returning == v {
		return
	}
	p.returning = v
	if v {
		r.returning++
	} else {
		r.returning--
	}
}

func accepted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(errorBody{Type: typ, Message: msg})
	_, _ = w.Write(b)
}
