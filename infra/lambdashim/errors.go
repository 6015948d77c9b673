package lambdashim

import (
	"encoding/json"
	"errors"
)

// Errors that Invoke returns or wraps; test them with errors.Is.
var (
	// ErrTimeout: the invocation ran past the function timeout and its
	// process was killed.
	ErrTimeout = errors.New("function timed out")
	// ErrProcessExited: the process handling the invocation exited first.
	ErrProcessExited = errors.New("function process exited")
	// ErrInitFailed: the process started for the invocation failed its init
	// (exited, reported /runtime/init/error, or exceeded InitTimeout).
	ErrInitFailed = errors.New("function init failed")
	// ErrClosed: the Runner is closed.
	ErrClosed = errors.New("function runner closed")
	// ErrRequestTooLarge: the payload exceeds MaxRequestPayload.
	ErrRequestTooLarge = errors.New("request payload too large")
)

// InvokeError is an invocation that ended in a function error, in the shape
// Lambda reports it: the errorType and errorMessage the runtime posted to
// /invocation/{id}/error (a Go handler's error type name, "string" for a
// panic with a string), or one of the platform's own for failures around the
// handler: "Sandbox.Timedout", "Runtime.ExitError",
// "Function.ResponseSizeTooLarge". Platform failures wrap the matching
// sentinel (ErrTimeout, ErrProcessExited, ErrInitFailed, ErrClosed).
type InvokeError struct {
	// RequestID is the invocation's Lambda request id.
	RequestID string
	// Type is the errorType.
	Type string
	// Message is the errorMessage.
	Message string
	// StackTrace is the runtime's stackTrace, as sent (often a JSON array);
	// nil when none was sent.
	StackTrace json.RawMessage

	cause error
}

// Error returns "Type: Message".
func (e *InvokeError) Error() string {
	return e.Type + ": " + e.Message
}

// Unwrap returns the sentinel error of a platform failure, or nil for an error
// the function reported itself.
func (e *InvokeError) Unwrap() error {
	return e.cause
}

// errorBody is the JSON a runtime posts to .../error and /init/error.
type errorBody struct {
	Message    string          `json:"errorMessage"`
	Type       string          `json:"errorType"`
	StackTrace json.RawMessage `json:"stackTrace,omitempty"`
}

// parseErrorBody builds an InvokeError from a posted error. A body that is
// not the documented JSON still fails the invocation, with the body as
// message, as Lambda does.
func parseErrorBody(requestID string, body []byte, headerType string) *InvokeError {
	var eb errorBody
	if err := json.Unmarshal(body, &eb); err != nil {
		eb = errorBody{Message: string(body)}
	}
	if eb.Type == "" {
		eb.Type = headerType
	}
	if eb.Type == "" {
		eb.Type = "Unhandled"
	}
	return &InvokeError{RequestID: requestID, Type: eb.Type, Message: eb.Message, StackTrace: eb.StackTrace}
}
