package retry

import (
	"errors"
	"strconv"
	"time"
)

// Why Do gave up. The error Do returns matches one of these with errors.Is,
// and matches the last attempt's error too.
var (
	// ErrExhausted means every attempt that MaxAttempts allows has failed.
	ErrExhausted = errors.New("retry: attempts exhausted")

	// ErrDeadline means the next wait would pass MaxElapsed or the ctx
	// deadline, so Do returned at once instead of sleeping into a certain
	// failure.
	ErrDeadline = errors.New("retry: next wait would pass the deadline")

	// ErrBudgetExhausted means the Policy's Budget refused a retry: too many
	// recent attempts against the same service have failed.
	ErrBudgetExhausted = errors.New("retry: retry budget exhausted")

	// ErrInvalidPolicy is matched by every error of Policy.Validate; Do
	// returns such an error without calling op.
	ErrInvalidPolicy = errors.New("retry: invalid policy")
)

// stopError is what Do returns when it gives up on a retryable error: the
// reason it stopped and the last attempt's error, both visible to errors.Is.
type stopError struct {
	why      error // ErrExhausted, ErrDeadline, ErrBudgetExhausted or ctx.Err()
	cause    error // context.Cause, when it says more than ctx.Err()
	last     error // the last attempt's error; nil if ctx ended before any
	attempts int
	wait     time.Duration // the wait that would not fit, for ErrDeadline
}

func (e *stopError) Error() string {
	var b []byte
	switch e.why {
	case ErrExhausted:
		b = append(b, "retry: gave up after "...)
		b = appendAttempts(b, e.attempts)
	case ErrDeadline:
		b = append(b, "retry: gave up after "...)
		b = appendAttempts(b, e.attempts)
		b = append(b, ", next wait "...)
		b = append(b, e.wait.String()...)
		b = append(b, " would pass the deadline"...)
	case ErrBudgetExhausted:
		b = append(b, "retry: gave up after "...)
		b = appendAttempts(b, e.attempts)
		b = append(b, ", retry budget exhausted"...)
	default: // the ctx ended
		b = append(b, "retry: "...)
		b = append(b, e.why.Error()...)
		if e.cause != nil {
			b = append(b, " ("...)
			b = append(b, e.cause.Error()...)
			b = append(b, ')')
		}
		if e.attempts == 0 {
			return string(append(b, " before the first attempt"...))
		}
		b = append(b, " after "...)
		b = appendAttempts(b, e.attempts)
	}
	b = append(b, ": "...)
	b = append(b, e.last.Error()...)
	return string(b)
}

func appendAttempts(b []byte, n int) []byte {
	b = strconv.AppendInt(b, int64(n), 10)
	if n == 1 {
		return append(b, " attempt"...)
	}
	return append(b, " attempts"...)
}

// Unwrap gives errors.Is and errors.As the stop reason, the ctx's cause and
// the last attempt's error.
func (e *stopError) Unwrap() []error {
	errs := make([]error, 0, 3)
	for _, err := range []error{e.why, e.cause, e.last} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
