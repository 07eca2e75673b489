package retryhttp

import (
	"context"
	"errors"
)

var (
	// errAttemptTimeout is the cause with which an attempt's ctx ends when
	// its time runs out. It matches context.DeadlineExceeded, as the ctx
	// error of a timed-out attempt does in retry.Do.
	errAttemptTimeout error = timeoutError{}

	errReleased   = errors.New("retryhttp: attempt released")
	errNoResponse = errors.New("retryhttp: Base returned neither a response nor an error")
)

type timeoutError struct{}

func (timeoutError) Error() string        { return "retryhttp: attempt timed out" }
func (timeoutError) Timeout() bool        { return true }
func (timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// timeoutAware wraps an error for RoundTrip to return, so that it answers
// Timeout() as its cause does: http.Client's *url.Error and os.IsTimeout ask
// only the error they wrap, and neither retry's give-up error nor its
// Permanent mark has that method.
func timeoutAware(err error) error {
	if err == nil {
		return nil
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

// statusError is the error of an attempt that got a status worth retrying.
// Do sees it; the caller does only if its ctx ends, since otherwise RoundTrip
// returns the response itself.
type statusError struct{ code int }

func (e *statusError) Error() string { return statusText(e.code) }

// statusErrors holds the statusError of every code from 0 to 599, made once
// so that a retried status costs no allocation. They are never modified.
var statusErrors = func() (errs [600]statusError) {
	for code := range errs {
		errs[code].code = code
	}
	return errs
}()

// errStatus returns the error for an attempt answered with status code.
func errStatus(code int) error {
	if code >= 0 && code < len(statusErrors) {
		return &statusErrors[code]
	}
	return &statusError{code: code}
}
