package retrygrpc

import (
	"context"
	"errors"

	"github.com/stormguard/retry"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrNotReplayed is matched, with errors.Is, by the error of a
// client-streaming or bidi stream that failed in a way the interceptor would
// have retried, had the stream not been open already: such a stream is
// retried only while it opens, since the interceptor keeps no copy of the
// messages a client streams. The error still carries the stream's status.
var ErrNotReplayed = errors.New("retrygrpc: not retried: a client-streaming or bidi stream is retried only while it opens")

// callError is the error the interceptors return when they stopped on a
// failed attempt. It gives grpc the last attempt's status unchanged (or,
// when the caller's ctx ended, the status grpc gives a ctx's end), so that
// status.Code and status.Convert read it as they would without the
// interceptor, and gives errors.Is and errors.As retry's error: the stop
// reason (retry.ErrExhausted, retry.ErrDeadline, …) and the last attempt's
// error.
type callError struct {
	st  *status.Status
	err error
}

func (e *callError) Error() string              { return e.err.Error() }
func (e *callError) GRPCStatus() *status.Status { return e.st }
func (e *callError) Unwrap() error              { return e.err }

// result turns what Do returned into the error the interceptor returns.
func (c *call) result(tr retry.Trace, err error) error {
	if err == nil {
		return nil
	}
	switch tr.Stop() {
	case retry.StopInvalid:
		return err // an invalid Policy: no attempt was made
	case retry.StopNotRetryable:
		if c.committed {
			return err // A6: a committed stream's error is returned as it is
		}
		// The attempt's own error, with its status and text unchanged,
		// marked so that an outer retry loop does not retry it either.
		return &callError{st: status.Convert(err), err: retry.Permanent(err)}
	case retry.StopContextDone:
		if cerr := c.ctx.Err(); cerr != nil {
			return &callError{st: status.FromContextError(cerr), err: err}
		}
	case retry.StopThrottled, retry.StopBreakerOpen, retry.StopLimited:
		// Refused on the client: the last attempt, if any, says what the
		// server answered; with none, UNAVAILABLE says what grpc says of a
		// server it cannot reach.
		if last := tr.Last().Err; last != nil {
			return &callError{st: status.Convert(last), err: err}
		}
		return &callError{st: status.New(codes.Unavailable, err.Error()), err: err}
	case retry.StopDeferred:
		// An outer retry loop owns retrying: it gets an error it retries,
		// no sooner than the server asked.
		return &callError{st: status.Convert(tr.Last().Err), err: retry.RetryAfter(err, c.decision.RetryAfter)}
	}
	return &callError{st: status.Convert(tr.Last().Err), err: err}
}

// timeoutError is the error of an attempt that the interceptor's own time
// limit, Policy.AttemptTimeout or MaxElapsed, cut short while the caller's
// ctx was alive. Its status is DEADLINE_EXCEEDED, whatever grpc made of the
// end of the attempt's ctx (CANCELLED, for a ctx ended by a timer rather
// than a deadline), and it matches context.DeadlineExceeded, as a timed-out
// attempt's error does in retry.Do.
type timeoutError struct {
	st  *status.Status
	err error // grpc's
}

func newTimeoutError(err error) *timeoutError {
	st, _ := status.FromError(err)
	if st.Code() != codes.DeadlineExceeded {
		st = status.New(codes.DeadlineExceeded, "retrygrpc: attempt timed out")
	}
	return &timeoutError{st: st, err: err}
}

func (e *timeoutError) Error() string              { return e.st.Err().Error() }
func (e *timeoutError) GRPCStatus() *status.Status { return e.st }
func (e *timeoutError) Unwrap() error              { return e.err }
func (e *timeoutError) Timeout() bool              { return true }

func (e *timeoutError) Is(target error) bool { return target == context.DeadlineExceeded }

// endedByCtx reports whether err is what grpc returns when the ctx of a
// call ends: the only errors an attempt's own time limit can cause.
func endedByCtx(err error) bool {
	switch status.Code(err) {
	case codes.Canceled, codes.DeadlineExceeded:
		return true
	}
	return false
}

// notReplayedError is the error of a client-streaming or bidi stream that
// the interceptor would have retried; see ErrNotReplayed.
type notReplayedError struct{ err error }

func (e *notReplayedError) Error() string   { return ErrNotReplayed.Error() + ": " + e.err.Error() }
func (e *notReplayedError) Unwrap() []error { return []error{ErrNotReplayed, e.err} }
