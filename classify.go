package retry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"syscall"
	"time"
)

// Classifier decides what to do about a failed attempt.
//
// Do calls it with the caller's ctx and the attempt that failed: its Number,
// Wait, Start, Duration and Err (never nil) are set, its Reason not yet. It
// is called only while ctx is alive: once ctx has ended, Do stops whatever
// the Classifier would say. It gets the whole Attempt, not just the error,
// so that it can decide by attempt number ("retry a 409 once") or by time,
// and so that Attempt can gain fields without breaking any Classifier.
type Classifier func(ctx context.Context, failed Attempt) Decision

// Decision is a [Classifier]'s verdict on one failed attempt.
type Decision struct {
	// Retry says whether another attempt may help.
	Retry bool
	// RetryAfter is the least wait the callee asked for (an HTTP
	// Retry-After, a gRPC pushback). Do waits RetryAfter plus the jittered
	// backoff, so that clients told the same RetryAfter do not return in
	// lockstep. That may exceed MaxBackoff, but never MaxElapsed or the ctx
	// deadline: a wait that would pass either ends Do at once with
	// ErrDeadline.
	RetryAfter time.Duration
	// Reason is a short, fixed text kept in the Trace ("503 Service
	// Unavailable", "connection refused", "permanent"). It is logged, so it
	// must hold no secrets: never an error's message, which may quote a URL
	// or a value.
	Reason string
	// Failed marks a decision not to retry an attempt that the service
	// did fail, made by an integration's own rule (a request not safe to
	// repeat, a committed stream), so that the Throttle and the Breaker
	// still count it as failed. A Decision with Retry set is failed
	// anyway.
	Failed bool
}

// DefaultClassifier is the [Classifier] of the zero [Policy]:
//   - an error marked with [Permanent], or context.Canceled, is not retried;
//   - context.DeadlineExceeded (an attempt timed out while the caller's ctx
//     is alive) is retried;
//   - an error marked with [RetryAfter] is retried after at least its wait;
//   - anything else is retried.
//
// It looks for markers through wrapped and joined errors, by type, never by
// message text. Its Reason names the kind of failure without quoting the
// error: "connection refused", "connection reset", "timeout", "EOF", "DNS
// lookup failed", the Go type of an error it does not know
// ("*pgconn.PgError"), or "error" when even that says nothing.
func DefaultClassifier(ctx context.Context, a Attempt) Decision {
	err := a.Err
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
		return Decision{Retry: true, RetryAfter: ra.after, Reason: "retry after"}
	}
	return Decision{Retry: true, Reason: kind(err)}
}

// kind names the failure err stands for, from its type and the values it
// wraps, never from its text. It walks err's tree once, as errors.Is would.
func kind(err error) string {
	if reflect.TypeOf(err) == errorStringType { // errors.New: nothing to walk
		switch err {
		case io.EOF:
			return "EOF"
		case io.ErrUnexpectedEOF:
			return "unexpected EOF"
		}
		return "error"
	}
	var k failureKind
	k.walk(err)
	switch {
	case k.reason != "":
		return k.reason
	case k.timeout:
		return "timeout"
	case k.eof:
		return "EOF"
	case k.unexpectedEOF:
		return "unexpected EOF"
	case k.network:
		return "network error"
	}
	for { // the innermost error of a chain says the most
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			break
		}
		next := u.Unwrap()
		if next == nil {
			break
		}
		err = next
	}
	switch t := reflect.TypeOf(err); t {
	case errorStringType, wrapErrorType, wrapErrorsType, joinErrorType:
		return "error" // the types of errors.New, fmt.Errorf and errors.Join say nothing
	default:
		return t.String()
	}
}

// The types of the standard library's anonymous errors, found once.
var (
	errorStringType = reflect.TypeOf(errors.New(""))
	wrapErrorType   = reflect.TypeOf(fmt.Errorf("%w", errors.New("")))
	wrapErrorsType  = reflect.TypeOf(fmt.Errorf("%w%w", errors.New(""), errors.New("")))
	joinErrorType   = reflect.TypeOf(errors.Join(errors.New("")))
)

// failureKind collects what an error tree says of the failure.
type failureKind struct {
	reason                               string // from a syscall errno or a DNS error: final
	timeout, eof, unexpectedEOF, network bool
}

func (k *failureKind) walk(err error) {
	for err != nil && k.reason == "" {
		switch e := err.(type) {
		case syscall.Errno:
			switch e {
			case syscall.ECONNREFUSED:
				k.reason = "connection refused"
			case syscall.ECONNRESET, syscall.ECONNABORTED:
				k.reason = "connection reset"
			case syscall.EPIPE:
				k.reason = "broken pipe"
			case syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ENETDOWN:
				k.reason = "network unreachable"
			}
		case *net.DNSError:
			k.reason = "DNS lookup failed"
		case *net.OpError:
			k.network = true
		}
		switch err {
		case io.EOF:
			k.eof = true
		case io.ErrUnexpectedEOF:
			k.unexpectedEOF = true
		}
		if t, ok := err.(interface{ Timeout() bool }); ok && t.Timeout() {
			k.timeout = true
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				k.walk(e)
			}
			return
		default:
			return
		}
	}
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
// mark. See [Decision.RetryAfter] for how Do bounds the wait.
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
func find[T any](err error) (T, bool) {
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
