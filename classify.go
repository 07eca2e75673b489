package retry

import (
	"context"
	"errors"
	"time"
)

// Classifier decides what to do about an error returned by an attempt.
// Do calls it only for non-nil errors, and only while the caller's ctx is
// alive: once that ctx has ended, Do stops whatever the Classifier would say.
type Classifier func(err error) Decision

// Decision is a [Classifier]'s verdict on one failed attempt.
type Decision struct {
	// Retry says whether another attempt may help.
	Retry bool
	// After is the least wait the callee asked for (a Retry-After, say).
	// Do waits After plus the policy's jittered backoff, so that clients told
	// the same After do not return in lockstep. That may exceed MaxDelay, but
	// never MaxElapsed or the ctx deadline: a wait that would pass either
	// ends Do at once with ErrDeadline.
	After time.Duration
	// Reason is a short text kept in the Trace ("503", "permanent", …).
	// It is logged, so it must hold no secrets.
	Reason string
}

// DefaultClassifier is the [Classifier] of the zero [Policy]:
//   - an error marked with [Permanent], or context.Canceled, is not retried;
//   - context.DeadlineExceeded (an attempt timed out while the caller's ctx
//     is alive) is retried;
//   - an error marked with [RetryAfter] is retried after at least its wait;
//   - anything else is retried.
//
// It looks for markers through wrapped and joined errors, by type, never by
// message text.
func DefaultClassifier(err error) Decision {
	if err == nil {
		return Decision{Reason: "ok"}
	}
	if _, ok := find[*permanentError](err); ok {
		return Decision{Reason: "permanent"}
	}
	switch {
	case errors.Is(err, context.Canceled):
		return Decision{Reason: "canceled"}
	case errors.Is(err, context.DeadlineExceeded):
		return Decision{Retry: true, Reason: "attempt timed out"}
	}
	if ra, ok := find[*retryAfterError](err); ok {
		return Decision{Retry: true, After: ra.after, Reason: "retry after"}
	}
	return Decision{Retry: true, Reason: "error"}
}

// Permanent marks err as not worth retrying: Do returns it at once. It
// returns nil for a nil err; errors.Is and errors.As see through the mark.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanentError{err}
}

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// RetryAfter marks err as retryable no sooner than d from now, as when a
// server answers 429 or 503 with a Retry-After header. It returns nil for a
// nil err; a negative d counts as 0. errors.Is and errors.As see through the
// mark. See [Decision.After] for how Do bounds the wait.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfterError{err: err, after: max(d, 0)}
}

type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// find returns the first error of type T in err's tree, in the order
// errors.As walks it. Unlike errors.As it needs no pointer to a target, which
// would escape to the heap: a classification allocates nothing.
func find[T error](err error) (T, bool) {
	for err != nil {
		if t, ok := err.(T); ok {
			return t, true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				if t, ok := find[T](e); ok {
					return t, true
				}
			}
			err = nil
		default:
			err = nil
		}
	}
	var zero T
	return zero, false
}
