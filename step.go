package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/stormguard/retry/guard"
)

// Progress is what a retry loop carries from one attempt of a call to the
// next: all that [Policy.Next] needs besides the Policy and the attempt.
// Its first three fields are plain values, so that a durable job system
// (an outbox, a queue worker) can keep them with the job and drive the
// same rule as Do across restarts.
type Progress struct {
	// Attempts is how many attempts were made, the one just failed
	// included.
	Attempts int
	// PrevWait is the Jitter's part of the latest wait, without any
	// RetryAfter: what a DecorrelatedJitter grows from, so that one long
	// Retry-After does not pin every later wait at the cap. Next sets it.
	PrevWait time.Duration
	// Deadline is when MaxElapsed runs out, the first attempt's start plus
	// MaxElapsed, or zero for none ([Policy.Deadline]).
	Deadline time.Time
	// Guard is the call's ticket with the Policy's Throttle and Breaker,
	// if the loop admits its attempts through one, so that the outcome of
	// the attempt reaches them; nil otherwise. It does not outlive the
	// process: a durable loop begins a Call for each attempt.
	Guard *guard.Call
}

// Verdict is what [Policy.Next] decides about a failed attempt.
type Verdict struct {
	// Decision is the Classifier's, RetryAfter and Reason included.
	Decision
	// Stop is why the call must stop, or StopNone: retry after Wait.
	Stop StopReason
	// Wait is how long to wait before the next attempt: the RetryAfter
	// plus the jittered backoff.
	Wait time.Duration
	// Err is the error to return when Stop is set: a [*StopError] that
	// matches the attempt's error, or the attempt's error as it is for
	// StopNotRetryable.
	Err error
}

// Deadline returns when a call whose first attempt starts at start must
// end by MaxElapsed, or the zero time if p sets none: what
// [Progress.Deadline] holds.
func (p Policy) Deadline(start time.Time) time.Time {
	if p.MaxElapsed <= 0 {
		return time.Time{}
	}
	return start.Add(p.MaxElapsed)
}

// Next is one step of the rule that Do follows, exported for the loops
// that Do cannot run (a durable outbox, a job system, another kind of
// call): what comes after attempt a, which failed, given pr. It stops for
// the reasons Do stops for, in Do's order (ctx ended, not retryable, a
// nested loop that leaves retrying to the outer one, MaxAttempts, the
// Budget, the Breaker, a wait past the deadline or ctx's), and otherwise
// returns the wait, after calling OnRetry. On the way it tells pr.Guard,
// and the Budget, how the attempt went, as Do does.
//
// a.Err must not be nil; a.Reason is set from the Classifier. The caller
// counts a.Number into pr.Attempts before it asks. An invalid p stops with
// StopInvalid and its Validate error.
func (p Policy) Next(ctx context.Context, a *Attempt, pr *Progress) Verdict {
	if err := p.resolve(); err != nil {
		return Verdict{Stop: StopInvalid, Err: err}
	}
	maxAttempts, budget, deferred := p.MaxAttempts, p.Budget, false
	if outer := outerLoop(ctx); outer != nil && !p.RetryNested {
		deferred, maxAttempts = true, 1
		if outer.budget == budget {
			budget = nil
		}
	}
	return p.next(ctx, a, pr, maxAttempts, deferred, budget)
}

// next is Next on a resolved p, for a loop that knows whether it is
// nested (deferred) and which budget it charges.
func (p *Policy) next(ctx context.Context, a *Attempt, pr *Progress, maxAttempts int, deferred bool, budget *guard.Budget) Verdict {
	if cerr := ctx.Err(); cerr != nil { // the caller's ctx ended: stop, whatever the error
		if pr.Guard != nil {
			pr.Guard.Attempted(guard.OutcomeOf(cerr, false))
		}
		a.Reason = cerr.Error()
		return Verdict{Stop: StopContextDone, Err: ctxStop(ctx, a.Err, pr.Attempts)}
	}
	d := p.Classifier(ctx, *a)
	a.Reason = d.Reason
	if pr.Guard != nil {
		pr.Guard.Attempted(attemptOutcome(a.Err, d))
	}
	if !d.Retry {
		return Verdict{Decision: d, Stop: StopNotRetryable, Err: a.Err}
	}
	if budget != nil {
		budget.Failed()
	}
	v := Verdict{Decision: d}
	v.Wait, v.Stop, v.Err = p.retryOrStop(ctx, a, d, pr.Attempts, maxAttempts > 0 && pr.Attempts >= maxAttempts, deferred, budget, pr.Deadline, &pr.PrevWait)
	return v
}

// attemptOutcome is what a failed attempt, judged d, tells the guards: a
// failure when the service failed it (retryable, or Failed), nothing when
// it was held back and never sent (guard.ErrHeld), else a success: the
// service answered.
func attemptOutcome(err error, d Decision) guard.Outcome {
	if errors.Is(err, guard.ErrHeld) {
		return guard.OutcomeNone
	}
	return guard.OutcomeOf(nil, d.Retry || d.Failed)
}

// retryOrStop is what a retry loop does once attempt a has failed in a way
// the Classifier (d) would retry and no other attempt of the call runs: it
// gives up, returning why and the error to return, or it returns the wait
// before the next attempt (StopNone). n is how many attempts were made, and
// last says that MaxAttempts allows no more; jittered is what the Jitter
// made of the previous backoff, and is updated. Next and Hedge share it,
// so that every loop stops for the same reasons in the same order.
func (p *Policy) retryOrStop(ctx context.Context, a *Attempt, d Decision, n int, last, deferred bool, budget *guard.Budget, deadline time.Time, jittered *time.Duration) (time.Duration, StopReason, error) {
	err := a.Err
	stop := StopDeferred
	if !deferred {
		stop = p.another(last, budget) // the Breaker refuses now, rather than after the wait
	}
	if stop != StopNone {
		return 0, stop, &StopError{Stop: stop, Attempts: n, Err: err}
	}
	*jittered = p.wait(n, *jittered, rand.Float64())
	wait := addSat(max(d.RetryAfter, 0), *jittered)
	// The deadline check reads the clock afresh: the Classifier's time
	// counts, and so does OnRetry's, which may use up the slack.
	fit, byCtx := fits(ctx, p.Clock, deadline, wait)
	if fit && p.OnRetry != nil {
		p.OnRetry(ctx, *a, wait)
		fit, byCtx = fits(ctx, p.Clock, deadline, wait)
	}
	if !fit {
		e := &StopError{Stop: StopDeadline, Attempts: n, Wait: wait, Err: err}
		if byCtx {
			e.ctxErr = context.DeadlineExceeded
		}
		return 0, StopDeadline, e
	}
	if budget != nil {
		// Counted as it is decided, not after the wait: callers that fail
		// together cannot all take a ratio budget's last retry.
		budget.Retrying()
	}
	return wait, StopNone, nil
}

// AllowAnother reports whether a call that has started n attempts may
// start one more, a retry or a hedge, or why not: StopExhausted once
// MaxAttempts have started, StopBudget while the Budget holds half its
// tokens or fewer, StopBreakerOpen while the Breaker is not closed (only a
// first attempt may take a half-open probe), in that order; StopNone when
// it may. It is the admission that Do, Next and Hedge ask before every
// attempt after the first, exported for loops of their own (retrygrpc's
// gRFC A6 hedging) that must admit their copies by the same rule. It reads
// only MaxAttempts, Budget and Breaker, and takes nothing: what an attempt
// costs is its loop's to say.
func (p Policy) AllowAnother(n int) StopReason {
	maxAttempts := p.maxAttempts()
	return p.another(maxAttempts > 0 && n >= maxAttempts, p.Budget)
}

// another is AllowAnother for a loop that knows whether MaxAttempts allows
// no more (last) and which budget it charges (none, when an outer loop
// counts its attempts).
func (p *Policy) another(last bool, budget *guard.Budget) StopReason {
	switch {
	case last:
		return StopExhausted
	case budget != nil && !budget.AllowRetry():
		return StopBudget
	case p.Breaker != nil && !p.Breaker.AllowRetry():
		return StopBreakerOpen
	}
	return StopNone
}
