package outbox

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// ErrSnoozed is matched by the error of [Snooze].
var ErrSnoozed = errors.New("outbox: snoozed")

// whyLimited is the Reason of an op whose attempt a Limiter refused.
const whyLimited = "limited (too many in flight); not sent"

// Snooze returns the error a Handler returns for "not now, and not an
// attempt: come back after d", as River's JobSnooze: the op is run again
// after d (a d that is not positive stands for the op's next jittered
// backoff, so that a snoozing handler cannot spin), its attempt is given
// back, and it is never dead-lettered for
// it, though its NotAfter still ends it. The Outbox snoozes an op by
// itself whenever a guard refuses it before it was sent: see
// [Options.Guards].
func Snooze(d time.Duration) error { return &snoozeError{after: d, reason: "snoozed"} }

// snoozeError is a wait that is not an attempt.
type snoozeError struct {
	after  time.Duration
	reason string
}

func (e *snoozeError) Error() string        { return ErrSnoozed.Error() + ": " + e.reason }
func (e *snoozeError) Is(target error) bool { return target == ErrSnoozed }

// uncounted reports whether err says that the attempt did not happen or
// did nothing, and how long to wait before the next one, with why: a
// Snooze, a 409 of an earlier attempt still running, or a refusal by a
// guard below (a retry.Do's or a retryhttp.Transport's Breaker, Throttle,
// Limiter or hold) before anything was sent.
func uncounted(p *retry.Policy, err error, e Entry) (time.Duration, string, bool) {
	var sz *snoozeError
	if errors.As(err, &sz) {
		if sz.after <= 0 {
			return backoff(p, e), sz.reason, true
		}
		return sz.after, sz.reason, true
	}
	var sr *stillRunning
	if errors.As(err, &sr) {
		// Spread by the Jitter, as retryhttp spreads a Retry-After.
		return sr.after + p.Wait(1, 0, rand.Float64()), "earlier attempt still running", true
	}
	var held *guard.HeldError
	if errors.As(err, &held) {
		return held.Left + backoff(p, e), "held back (Retry-After); not sent", true
	}
	var se *retry.StopError
	if errors.As(err, &se) && se.Attempts == 0 {
		switch se.Stop {
		case retry.StopBreakerOpen:
			return backoff(p, e), "circuit breaker open; not sent", true
		case retry.StopThrottled:
			return backoff(p, e), "throttled; not sent", true
		case retry.StopLimited:
			return backoff(p, e), whyLimited, true
		}
	}
	return 0, "", false
}

// backoff is the wait before an op refused by a guard asks again: its
// next jittered backoff, so that the ops a guard refused together do not
// come back together.
func backoff(p *retry.Policy, e Entry) time.Duration {
	return p.Wait(max(e.Attempts, 1), e.LastWait, rand.Float64())
}

// admit asks the guards of p, the Policy of e's kind, whether e's next
// attempt may go: the kind's hold, the Breaker, the Limiter and the
// Throttle (through c, begun here), and the Budget for a retry. A refusal
// says how long to wait, and why; nothing is counted for it. The Limiter's
// slot, if any, is held until c hears how the attempt went.
func (o *Outbox) admit(c *guard.Call, p *retry.Policy, e Entry, now time.Time) (time.Duration, string, bool) {
	if h := o.guards.Holds; h != nil {
		if until := h.Until(e.Op.Kind); now.Before(until) {
			return until.Sub(now) + backoff(p, e), "held back (Retry-After); not sent", false
		}
	}
	if p.Budget != nil && e.Attempts > 0 && !p.Budget.AllowRetry() {
		return backoff(p, e), "retry budget exhausted; not sent", false
	}
	if p.Breaker == nil && p.Throttle == nil && p.Limiter == nil {
		return 0, "", true
	}
	c.Start(p.Throttle, p.Breaker)
	c.Limit(p.Limiter)
	// Each attempt of a durable op is a call of its own: it may probe. It
	// does not wait for a slot: a full Limiter is a wait like any other
	// refusal, and the worker is free meanwhile.
	switch c.Admit(1) {
	case guard.RefusedByThrottle:
		return backoff(p, e), "throttled; not sent", false
	case guard.RefusedByLimiter:
		return backoff(p, e), whyLimited, false
	case guard.RefusedByBreaker: // Start, not StartFast: never RefusedRestart
		w := backoff(p, e)
		if at := p.Breaker.HalfOpensAt(); !at.IsZero() {
			w = max(w, at.Sub(now))
		}
		return w, "circuit breaker open; not sent", false
	}
	return 0, "", true
}

// countSent tells b that e's next attempt, admitted, goes: a first attempt
// (Budget.Started) or a retry (Budget.Retrying) that Next did not count,
// because it refused it for the Budget and the op waited, or because
// this process did not run the attempt before.
func countSent(b *guard.Budget, e Entry) {
	if e.Attempts == 0 {
		b.Started()
	} else {
		b.Retrying()
	}
}
