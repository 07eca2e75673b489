package queue

import (
	"context"
	"errors"
	"time"

	"github.com/stormguard/retry"
)

// The errors of a broker that [Classify] knows. A Client for a real broker
// maps that broker's own errors onto them.
var (
	// ErrBadMessage means the broker refused the message itself (too
	// large, malformed, a schema it rejects): sending it again cannot help.
	ErrBadMessage = errors.New("queue: broker rejected the message")

	// ErrUnavailable means the broker could not be reached, or dropped the
	// message before it took it: another attempt may get through.
	ErrUnavailable = errors.New("queue: broker unavailable")
)

// OverloadedError is a broker's answer that it cannot take the message
// now. After, if positive, is how long the broker asked its clients to
// hold back: a Publisher then holds back every publish to the topic for
// that long (capped at Options.MaxRetryAfter), not only this one.
type OverloadedError struct {
	After time.Duration
}

func (e *OverloadedError) Error() string {
	if e.After <= 0 {
		return "queue: broker overloaded"
	}
	return "queue: broker overloaded, retry after " + e.After.String()
}

// Classify is the retry.Classifier of a Publisher whose Policy has none:
//   - an [*OverloadedError] is retried, after at least its After;
//   - [ErrUnavailable] is retried;
//   - [ErrBadMessage] is not: the broker answered, so the Breaker and the
//     Throttle count it as a success;
//   - anything else is up to retry.DefaultClassifier (a retry.Permanent
//     or a canceled ctx is not retried, the rest is).
//
// It tells the errors apart with errors.Is and errors.As, never by their
// text. A publish is at-least-once, as with any broker: a retried publish
// whose first attempt did land, unseen, is a duplicate that consumers must
// tolerate.
func Classify(ctx context.Context, a retry.Attempt) retry.Decision {
	var o *OverloadedError
	switch {
	case errors.As(a.Err, &o):
		return retry.Decision{Retry: true, RetryAfter: max(o.After, 0), Reason: "overloaded"}
	case errors.Is(a.Err, ErrBadMessage):
		return retry.Decision{Reason: "bad message"}
	case errors.Is(a.Err, ErrUnavailable):
		return retry.Decision{Retry: true, Reason: "unavailable"}
	}
	return retry.DefaultClassifier(ctx, a)
}
