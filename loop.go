package retry

import (
	"context"
	"time"

	"github.com/stormguard/retry/guard"
)

// The pieces of Do's loop that a loop of one's own needs besides
// [Policy.Next], so that it keeps time, admits attempts, counts successes
// and owns its nested calls exactly as Do does, from exported API alone:
//
//	opCtx, done := p.Own(ctx) // nested Do's and Transports leave retrying to this loop
//	defer done()
//	var c guard.Call
//	c.Start(p.Throttle, p.Breaker)
//	c.Limit(p.Limiter)
//	defer c.Abandon()
//	pr := retry.Progress{Deadline: p.Deadline(p.Now()), Guard: &c}
//	var last error
//	for {
//		if v := p.Admit(&pr, last); v.Stop != retry.StopNone {
//			return v.Err // not sent
//		}
//		a := retry.Attempt{Number: pr.Attempts + 1, Start: p.Now()}
//		if a.Err = send(opCtx); a.Err == nil {
//			p.Succeeded(ctx, &pr)
//			return nil
//		}
//		pr.Attempts = a.Number
//		v := p.Next(ctx, &a, &pr) // tells c and the Budget of the failure
//		if v.Stop != retry.StopNone {
//			return v.Err
//		}
//		if !p.Sleep(ctx, v.Wait) {
//			return context.Cause(ctx)
//		}
//		last = a.Err
//	}

// Now returns the time on p's Clock, or the real time without one.
func (p Policy) Now() time.Time { return now(p.Clock) }

// Sleep waits d on p's Clock as Do waits between attempts (through
// Clock.WithTimeout, by which a fake tells a wait from a deadline), and
// reports whether it waited the whole d: false, at once, when ctx ends
// first.
func (p Policy) Sleep(ctx context.Context, d time.Duration) bool {
	var sl sleeper
	defer sl.stop()
	_, ok := sl.sleep(ctx, p.Clock, d)
	return ok && ctx.Err() == nil
}

// WithDeadline is context.WithDeadline on p's Clock: what Do gives op for
// MaxElapsed (d is then [Policy.Deadline]) and AttemptTimeout.
func (p Policy) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	return withDeadline(p.Clock, parent, d)
}

// Admit asks pr.Guard whether the next attempt, pr.Attempts+1, may be
// sent, as Do asks before each attempt: StopNone, or StopBreakerOpen,
// StopThrottled or StopLimited with the error Do would return (matching
// ErrBreakerOpen, ErrThrottled or ErrLimited, and last, the latest
// attempt's error, if any). A nil pr.Guard admits everything. It does not
// wait in a Limiter's queue, having no ctx: a loop that would, as Do
// does, asks pr.Guard.AdmitContext and maps a refusal the same way. When
// it admits a first attempt (pr.Attempts 0), it tells p's Budget that it
// goes (Budget.Started), as Do does; Next tells it of the retries. A loop
// nested in another that shares its Budget should leave Budget out of the
// inner Policy, or the first attempt counts twice.
func (p Policy) Admit(pr *Progress, last error) Verdict {
	if pr.Guard != nil {
		if r := pr.Guard.Admit(pr.Attempts + 1); r != guard.NotRefused {
			stop := refusalStop(r)
			return Verdict{Stop: stop, Err: refusedError(stop, pr.Attempts, last)}
		}
	}
	if pr.Attempts == 0 && p.Budget != nil {
		p.Budget.Started()
	}
	return Verdict{}
}

// Succeeded tells pr.Guard and p's Budget that the latest attempt
// succeeded, as Do does: the half of the counting that Next, which hears
// of failures, leaves to the caller. Inside another loop that shares the
// Budget (see [Policy.Own]), the Budget is left to that loop.
func (p Policy) Succeeded(ctx context.Context, pr *Progress) {
	if b := p.Budget; b != nil {
		if outer := outerLoop(ctx); outer == nil || p.RetryNested || outer.budget != b {
			b.Succeeded()
		}
	}
	if pr.Guard != nil {
		pr.Guard.Succeeded()
	}
}

// Own marks ctx as the ctx of a loop of p's, as Do marks the ctx it gives
// op: a Do, a retryhttp.Transport or a retrygrpc call inside the loop
// makes one attempt and leaves retrying to it (unless its Policy sets
// RetryNested), and does not consult again the Budget, Breaker and
// Throttle it shares with p, nor take a second slot of its Limiter. Call done when the loop ends: a ctx kept
// after that carries a dead mark, and a Do on it retries as usual.
func (p Policy) Own(ctx context.Context) (opCtx context.Context, done func()) {
	opCtx, marked := markLoop(ctx, &p)
	return opCtx, func() { marked.Store(true) }
}
