package retryhttp

import (
	"context"
	"errors"
	"net/http"

	"github.com/stormguard/retry"
)

// StatusError is the error of an attempt answered with a status of 400 or
// more, or with a response of any status that [Transport.CheckResponse]
// failed. The Policy's Classifier finds it in Attempt.Err, and decides on
// the status, the header (Retry-After, say) and Err; the response's body
// stays with the Transport. A caller sees one only when the Transport
// defers to an outer retry loop (see [Transport.RoundTrip]); otherwise
// RoundTrip returns the response itself, as net/http does for any status.
type StatusError struct {
	StatusCode int
	Header     http.Header // the response's header; do not modify it
	Err        error       // what CheckResponse returned; nil if it passed the response or is not set
}

// Error returns the status as net/http names it, "503 Service
// Unavailable", never the server's own reason phrase; then Err's text, if
// CheckResponse failed the response.
func (e *StatusError) Error() string {
	if e.Err != nil {
		return statusText(e.StatusCode) + ": " + e.Err.Error()
	}
	return statusText(e.StatusCode)
}

// Unwrap returns Err.
func (e *StatusError) Unwrap() error { return e.Err }

var (
	// errAttemptTimeout is the cause with which an attempt's ctx ends when
	// its time runs out. It matches context.DeadlineExceeded, as the ctx
	// error of a timed-out attempt does in retry.Do.
	errAttemptTimeout error = timeoutError{}

	errReleased   = errors.New("retryhttp: attempt released")
	errPanicked   = errors.New("retryhttp: Base or a hook panicked")
	errNoResponse = errors.New("retryhttp: Base returned neither a response nor an error")
)

type timeoutError struct{}

func (timeoutError) Error() string        { return "retryhttp: attempt timed out" }
func (timeoutError) Timeout() bool        { return true }
func (timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// attemptTimeoutError is the error of an attempt that its own time limit
// ended, when Base said more than that its ctx ended: its message keeps what
// Base said, and it matches both errAttemptTimeout (and so
// context.DeadlineExceeded) and Base's error.
type attemptTimeoutError struct{ err error }

func (e *attemptTimeoutError) Error() string   { return errAttemptTimeout.Error() + ": " + e.err.Error() }
func (e *attemptTimeoutError) Timeout() bool   { return true }
func (e *attemptTimeoutError) Unwrap() []error { return []error{errAttemptTimeout, e.err} }

// timeoutAware wraps an error for RoundTrip to return, so that it answers
// Timeout() as its cause does: http.Client's *url.Error and os.IsTimeout ask
// only the error they wrap, and neither retry's StopError nor its Permanent
// mark has that method.
func timeoutAware(err error) error {
	if err == nil {
		return nil
	}
	if se, ok := err.(*retry.StopError); ok {
		if e := refusedError(se); e != nil {
			return e
		}
	}
	return &roundTripError{err}
}

type roundTripError struct{ err error }

func (e *roundTripError) Error() string { return e.err.Error() }
func (e *roundTripError) Unwrap() error { return e.err }

func (e *roundTripError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.err, &t) && t.Timeout()
}
