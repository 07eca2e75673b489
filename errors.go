package retry

import (
	"errors"
	"strconv"
	"time"
)

// Why Do gave up. The error Do returns matches one of these with errors.Is,
// and matches the last attempt's error too.
var (
	// ErrGaveUp is matched by every error of a Do that gave up on an error
	// it would have retried, or was refused an attempt: ErrExhausted,
	// ErrDeadline, ErrBudgetExhausted, ErrThrottled, ErrBreakerOpen and
	// ErrLimited.
	// Test it to serve a fallback.
	ErrGaveUp = errors.New("retry: gave up")

	// ErrExhausted means every attempt that MaxAttempts allows has failed.
	ErrExhausted = errors.New("retry: attempts exhausted")

	// ErrDeadline means the next wait would pass MaxElapsed or the ctx
	// deadline, so Do returned at once instead of sleeping into a certain
	// failure. When the ctx deadline was the one in the way, the error
	// matches context.DeadlineExceeded too.
	ErrDeadline = errors.New("retry: next wait would pass the deadline")

	// ErrBudgetExhausted means the Policy's Budget refused a retry: too many
	// recent attempts against the same service have failed.
	ErrBudgetExhausted = errors.New("retry: retry budget exhausted")

	// ErrThrottled means the Policy's Throttle refused an attempt, which
	// was not sent: the service has been rejecting many recent attempts.
	ErrThrottled = errors.New("retry: throttled")

	// ErrBreakerOpen means the Policy's Breaker refused an attempt, which
	// was not sent: the service has been failing, and the breaker is open,
	// or half-open with its probes taken (a retry is never a probe). It is
	// marked [Permanent], so that an outer Do with the DefaultClassifier
	// does not retry a call that a breaker refused.
	ErrBreakerOpen = Permanent(errors.New("retry: circuit breaker open"))

	// ErrLimited means the Policy's Limiter refused an attempt, which was
	// not sent: as many attempts to the service as it allows were in
	// flight, and no slot came free in its queue in time.
	ErrLimited = errors.New("retry: limited")

	// ErrInvalidPolicy is matched by every error of Policy.Validate; Do
	// returns such an error without calling op.
	ErrInvalidPolicy = errors.New("retry: invalid policy")
)

// StopReason says why [Do] returned. [Trace.Stop] gives it for every call,
// and a [StopError] carries it. It is a closed set of values, so that code
// can switch on it; the Classifier's free text is in [Attempt.Reason].
type StopReason uint8

// The reasons Do returns for. The zero value is StopNone: no Do has filled
// the Trace.
const (
	StopNone StopReason = iota
	// StopSuccess: an attempt succeeded; Do returns nil.
	StopSuccess
	// StopNotRetryable: the Classifier would not retry the last error, which
	// Do returns as it is.
	StopNotRetryable
	// StopExhausted: MaxAttempts were used up ([ErrExhausted]).
	StopExhausted
	// StopDeadline: the next wait would pass MaxElapsed or the ctx deadline
	// ([ErrDeadline]).
	StopDeadline
	// StopBudget: the Budget refused a retry ([ErrBudgetExhausted]).
	StopBudget
	// StopContextDone: the caller's ctx ended, before an attempt or during
	// a wait; the error matches ctx.Err() and context.Cause(ctx).
	StopContextDone
	// StopDeferred: Do ran inside another Do's op and left retrying to that
	// loop after one attempt (see [Policy.RetryNested]).
	StopDeferred
	// StopInvalid: the Policy or the call was invalid; op was never called.
	StopInvalid
	// StopPanicked: op or a hook panicked; only [Policy.OnDone] sees it.
	StopPanicked
	// StopThrottled: the Throttle refused an attempt, which was not sent
	// ([ErrThrottled]).
	StopThrottled
	// StopBreakerOpen: the Breaker refused an attempt, which was not sent
	// ([ErrBreakerOpen]).
	StopBreakerOpen
	// StopStale: the call failed for good, and an integration answered it
	// with a response it had stored instead (retryhttp's stale-if-error,
	// RFC 5861): Do never stops for it, but the Trace that integration
	// reports, to its own OnDone and trace, ends with it.
	StopStale
	// StopLimited: the Limiter refused an attempt, which was not sent
	// ([ErrLimited]).
	StopLimited
)

var stopText = [...]string{
	StopNone:         "none",
	StopSuccess:      "ok",
	StopNotRetryable: "not retried",
	StopExhausted:    "attempts exhausted",
	StopDeadline:     "deadline",
	StopBudget:       "retry budget exhausted",
	StopContextDone:  "context done",
	StopDeferred:     "deferred to outer retry loop",
	StopInvalid:      "invalid",
	StopPanicked:     "panicked",
	StopThrottled:    "throttled",
	StopBreakerOpen:  "circuit breaker open",
	StopStale:        "served stale",
	StopLimited:      "limited",
}

// String returns a short text for logs: "ok", "attempts exhausted", …
func (s StopReason) String() string {
	if int(s) < len(stopText) {
		return stopText[s]
	}
	return "StopReason(" + strconv.Itoa(int(s)) + ")"
}

// GaveUp reports whether s is a reason that [ErrGaveUp] matches: Do gave up
// on an error it would have retried (StopExhausted, StopDeadline,
// StopBudget), or was refused an attempt (StopThrottled, StopBreakerOpen,
// StopLimited).
// These are the failures a fallback serves.
func (s StopReason) GaveUp() bool {
	switch s {
	case StopExhausted, StopDeadline, StopBudget, StopThrottled, StopBreakerOpen, StopLimited:
		return true
	}
	return false
}

// StopError is the error Do returns when it stops retrying an error it
// would have retried: attempts, time or budget ran out, the ctx ended, or a
// nested Do deferred to its outer loop. (An error the Classifier will not
// retry comes back as it is.) errors.Is matches it against the sentinel of
// its Stop ([ErrExhausted], [ErrDeadline], [ErrBudgetExhausted], ctx.Err()),
// against [ErrGaveUp] when Do gave up, and against the last attempt's error.
//
// The StopError of a call refused before its first attempt (StopThrottled,
// StopBreakerOpen, StopLimited with Attempts 0) is shared by every such
// call, so that a refusal allocates nothing: read it, do not modify it.
type StopError struct {
	Stop     StopReason
	Attempts int           // how many times op was called
	Wait     time.Duration // for StopDeadline: the wait that did not fit
	Err      error         // the last attempt's error; nil if ctx ended before any

	ctxErr error // for StopContextDone: ctx.Err(); for StopDeadline by the ctx's deadline: context.DeadlineExceeded
	cause  error // context.Cause, when it says more than ctx.Err()
}

// refusedFirst holds the errors of a call refused before its first
// attempt, one per refusal: all such errors are alike (no attempt, no
// last error), so that a refusal, the common answer of an open breaker
// and the one that must cost least, allocates nothing.
var refusedFirst = [...]StopError{
	StopThrottled:   {Stop: StopThrottled},
	StopBreakerOpen: {Stop: StopBreakerOpen},
	StopLimited:     {Stop: StopLimited},
}

// refusedError is the error of a call that a guard refused (stop) after
// n attempts, the last of which failed with last.
func refusedError(stop StopReason, n int, last error) *StopError {
	if n == 0 && last == nil && int(stop) < len(refusedFirst) && refusedFirst[stop].Stop == stop {
		return &refusedFirst[stop]
	}
	return &StopError{Stop: stop, Attempts: n, Err: last}
}

// Error reads "retry: gave up after 4 attempts: <last error>". A deferred
// Do's error reads as the last attempt's error alone, so that stacked layers
// do not repeat the prefix.
func (e *StopError) Error() string {
	var b []byte
	switch e.Stop {
	case StopDeferred:
		if e.Err == nil {
			return "retry: deferred to outer retry loop"
		}
		return e.Err.Error()
	case StopExhausted:
		b = append(b, "retry: gave up after "...)
		b = appendAttempts(b, e.Attempts)
	case StopDeadline:
		b = append(b, "retry: gave up after "...)
		b = appendAttempts(b, e.Attempts)
		b = append(b, ", next wait "...)
		b = append(b, e.Wait.String()...)
		b = append(b, " would pass the deadline"...)
	case StopBudget:
		b = append(b, "retry: gave up after "...)
		b = appendAttempts(b, e.Attempts)
		b = append(b, ", retry budget exhausted"...)
	case StopThrottled, StopBreakerOpen, StopLimited:
		b = append(b, "retry: "...)
		b = append(b, e.Stop.String()...)
		if e.Attempts == 0 {
			return string(append(b, " before the first attempt"...))
		}
		b = append(b, " after "...)
		b = appendAttempts(b, e.Attempts)
	default: // StopContextDone
		b = append(b, "retry: "...)
		if e.ctxErr != nil {
			b = append(b, e.ctxErr.Error()...)
		} else {
			b = append(b, e.Stop.String()...)
		}
		if e.cause != nil {
			b = append(b, " ("...)
			b = append(b, e.cause.Error()...)
			b = append(b, ')')
		}
		if e.Attempts == 0 || e.Err == nil {
			return string(append(b, " before the first attempt"...))
		}
		b = append(b, " after "...)
		b = appendAttempts(b, e.Attempts)
	}
	if e.Err != nil {
		b = append(b, ": "...)
		b = append(b, e.Err.Error()...)
	}
	return string(b)
}

func appendAttempts(b []byte, n int) []byte {
	b = strconv.AppendInt(b, int64(n), 10)
	if n == 1 {
		return append(b, " attempt"...)
	}
	return append(b, " attempts"...)
}

// Is reports whether target is [ErrGaveUp] and e gave up, or the sentinel
// of e's Stop: the tests callers make most, answered without the slice
// that Unwrap builds.
func (e *StopError) Is(target error) bool {
	if target == ErrGaveUp {
		return e.Stop.GaveUp()
	}
	return target != nil && target == e.sentinel()
}

// sentinel is the error of e's Stop ([ErrExhausted], …), or nil for a
// Stop that has none.
func (e *StopError) sentinel() error {
	switch e.Stop {
	case StopExhausted:
		return ErrExhausted
	case StopDeadline:
		return ErrDeadline
	case StopBudget:
		return ErrBudgetExhausted
	case StopThrottled:
		return ErrThrottled
	case StopBreakerOpen:
		return ErrBreakerOpen
	case StopLimited:
		return ErrLimited
	}
	return nil
}

// Unwrap gives errors.Is and errors.As the stop reason's sentinel, the
// ctx's error and cause, and the last attempt's error.
func (e *StopError) Unwrap() []error {
	errs := make([]error, 0, 4)
	for _, err := range [...]error{e.sentinel(), e.ctxErr, e.cause, e.Err} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
