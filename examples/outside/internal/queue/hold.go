package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// A topic whose broker answered [*OverloadedError] with a wait is held
// back: every publish to it, from any goroutine, waits in guard.Holds
// until the wait is over, and then a few go first as probes while the
// others wait for what they learn. Without a hold, a thousand publishers
// would each have to reach the broker to learn the same wait.
//
// A hold is weighed against the time the whole call has left: a publish
// that cannot wait that long (its MaxElapsed or ctx's deadline comes
// first) stops at once rather than sleep into a certain failure.

// noteHold records what the answer err, to an attempt on topic sent at
// epoch sent, says of the topic's hold: an overload with a wait holds it
// back, for at most MaxRetryAfter; an answer from a broker that took the
// message, or judged it (a bad message), clears it. An unreachable broker
// says nothing of its load.
func (p *Publisher) noteHold(pol *retry.Policy, topic string, sent guard.HoldEpoch, err error) {
	var o *OverloadedError
	switch {
	case errors.As(err, &o):
		if o.After > 0 {
			p.guards.Holds.Hold(topic, pol.Now(), min(o.After, p.cap))
		}
	case err == nil || errors.Is(err, ErrBadMessage):
		if p.guards.Holds.Held() {
			p.guards.Holds.Clear(topic, sent)
		}
	}
}

// held is the end of a call that Holds.Wait did not let send attempt n+1,
// after n attempts, the last of which failed with last: the hold would
// pass the call's deadline (a *guard.HeldError), or ctx, or the
// call's MaxElapsed, ended while it waited.
func (p *Publisher) held(ctx context.Context, pol *retry.Policy, n int, last, err error) (retry.StopReason, error) {
	if ctx.Err() != nil {
		return retry.StopContextDone, ended(ctx, pol, n, last)
	}
	e := &retry.StopError{Stop: retry.StopDeadline, Attempts: n, Err: err}
	var h *guard.HeldError
	if errors.As(err, &h) {
		e.Wait = h.Left
	}
	if last != nil {
		e.Err = fmt.Errorf("%w; %w", last, err)
	}
	return retry.StopDeadline, e
}
