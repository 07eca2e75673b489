package retry

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/stormguard/retry/guard"
)

// Defaults that a zero field of [Policy] stands for.
const (
	defaultMaxAttempts = 4
	defaultBaseBackoff = 200 * time.Millisecond
	defaultFactor      = 2.0
	defaultMaxBackoff  = 5 * time.Second
)

// MinUnboundedWait is the shortest wait of a loop without a count limit
// (MaxAttempts < 0): every wait of such a loop is at least this long, and
// its BaseBackoff must be too. Without a floor, waits that round to zero
// make the loop spin, calling op as fast as it returns until MaxElapsed, and
// on a fake clock, where only waits move time, never end at all.
const MinUnboundedWait = time.Millisecond

// Policy says how [Do] retries.
//
// The words: the backoff before retry n is BaseBackoff·Factor^(n−1), capped
// at MaxBackoff; the Jitter turns it into a wait; a wait the callee asks for
// ([Decision.RetryAfter]) comes on top; the result is what Do sleeps.
//
// The zero Policy is ready to use: at most 4 attempts, a backoff that starts
// at 200ms and doubles up to 5s, [FullJitter], the [DefaultClassifier], no
// time limit but the ctx's, no per-attempt timeout, no budget, no throttle,
// no breaker, no limiter, and the real clock. Each zero field means its default; a zero never means "retry
// forever" or "retry without waiting".
//
// A Policy is a plain value: copy it and share it between goroutines freely.
// Do keeps every per-call counter in its own locals. What the fields point to
// (Clock, Budget, hooks, a custom Jitter or Classifier) must be safe for
// concurrent use when the Policy is shared.
type Policy struct {
	// MaxAttempts is the most calls of op, the first included [4].
	// A negative value removes the count limit; Validate accepts that only
	// with MaxElapsed set, so that something still ends the loop, and such
	// a loop waits at least MinUnboundedWait between attempts.
	MaxAttempts int

	// BaseBackoff is the backoff before the first retry [200ms, or
	// MaxBackoff if that is smaller].
	BaseBackoff time.Duration

	// Factor multiplies the backoff for each further retry [2]; 1 keeps it
	// flat.
	Factor float64

	// MaxBackoff caps the backoff, and the wait the Jitter makes of it [5s,
	// or BaseBackoff if that is larger]. A callee's RetryAfter comes on top.
	MaxBackoff time.Duration

	// MaxElapsed bounds the whole call, from the first attempt to the last,
	// waits included [none: only ctx bounds it]. Do gives up at once with
	// ErrDeadline when the next wait would not fit, and op's ctx ends then.
	MaxElapsed time.Duration

	// AttemptTimeout bounds each call of op: the ctx op gets ends after it
	// [none]. An attempt that times out while the caller's ctx is alive is
	// retried.
	AttemptTimeout time.Duration

	// Jitter turns each backoff into a wait, spread so that clients that
	// failed together do not come back together [FullJitter].
	Jitter Jitter

	// Classifier decides whether a failed attempt is worth another
	// [DefaultClassifier].
	Classifier Classifier

	// Clock is the time source for waits, deadlines and the Trace [real
	// time]. Tests set a retrytest.Clock, or leave it nil and run inside
	// testing/synctest. A ctx deadline is compared with this clock's time.
	Clock Clock

	// OnRetry, if set, is called after a failed attempt that will be
	// retried, before the wait, with the caller's ctx so that it can log or
	// trace per request. It is never called after the last attempt. Its own
	// time counts against MaxElapsed: if it uses up the room for the wait,
	// Do gives up with ErrDeadline after all.
	OnRetry func(ctx context.Context, failed Attempt, wait time.Duration)

	// OnDone, if set, is called once when Do returns, with the caller's ctx,
	// the final Trace and the error Do returns, whatever the outcome (but
	// an invalid call: then Do has not started). If op or a hook panics, it
	// is called before the panic goes on, with a Trace whose Stop is
	// StopPanicked. It is where a call's metrics and logs belong. Unset, it
	// costs nothing.
	OnDone func(ctx context.Context, t Trace, err error)

	// Budget, if set, limits retries across every Do that shares it, so that
	// a fleet stops multiplying load on a failing service [none]. See
	// guard.Budget for why it should be one per downstream service.
	Budget *guard.Budget

	// Throttle, if set, sheds attempts, the first included, while the
	// service behind it rejects many of them [none]. See guard.Throttle.
	Throttle *guard.Throttle

	// Breaker, if set, fails calls fast while the service behind it is
	// down [none]. See guard.Breaker.
	Breaker *guard.Breaker

	// Limiter, if set, bounds the attempts in flight to the service
	// behind it, across every Do that shares it: each attempt holds a slot
	// while it runs, not while Do waits between attempts, and one that
	// gets none in time is not sent [none]. See guard.Limiter.
	Limiter *guard.Limiter

	// RetryNested lets this Policy retry even when Do runs inside the op of
	// another Do [false: a nested Do makes one attempt and leaves retrying to
	// the outer loop, so that layers do not multiply each other's attempts].
	RetryNested bool
}

// Validate reports whether p can be used, naming the first field that cannot.
// Zero fields are valid: they stand for their defaults. Every error it
// returns matches [ErrInvalidPolicy] with errors.Is.
func (p Policy) Validate() error {
	return p.resolve()
}

// Wait returns the wait before retry n (n = 1 is the wait before the second
// attempt) that the Jitter makes of its backoff, given the previous such
// wait and a uniform random number u in [0, 1). It is the pure function Do
// uses: b = min(MaxBackoff, BaseBackoff·Factor^(n−1)), then the Jitter, then
// a clamp to [0, MaxBackoff] (and a floor of MinUnboundedWait in a loop
// without a count limit). A callee's RetryAfter comes on top of it in Do.
// Wait never panics: on a policy that Validate rejects it still returns a
// duration in range.
func (p Policy) Wait(n int, prev time.Duration, u float64) time.Duration {
	_ = p.resolve() // fills the defaults; the result is clamped either way
	return p.wait(n, prev, u)
}

// plainValid reports, without filling in any default, that p is valid and
// resolve would find nothing wrong: the usual Policy, in a few tests, so
// that a Do whose first attempt succeeds never needs the defaults. false
// means only that resolve must be asked.
func (p *Policy) plainValid() bool {
	base, hi := p.BaseBackoff, p.MaxBackoff
	if base|hi|p.MaxElapsed|p.AttemptTimeout < 0 || p.MaxAttempts < 0 ||
		base != 0 && hi != 0 && hi < base || // a zero one is made to fit the other
		p.Factor != 0 && !(p.Factor >= 1 && p.Factor <= math.MaxFloat64) {
		return false
	}
	k, ok := p.Jitter.(JitterKind)
	return p.Jitter == nil || ok && k <= DecorrelatedJitter
}

// maxAttempts is MaxAttempts, or its default when it is zero, without
// resolving p.
func (p *Policy) maxAttempts() int {
	if p.MaxAttempts == 0 {
		return defaultMaxAttempts
	}
	return p.MaxAttempts
}

// resolve validates p and replaces its zero fields with their defaults.
// Do calls it on its own copy, so that the rest of the loop reads plain fields.
func (p *Policy) resolve() error {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = defaultMaxAttempts
	}
	if p.BaseBackoff == 0 {
		p.BaseBackoff = defaultBaseBackoff
		if p.MaxBackoff > 0 {
			p.BaseBackoff = min(p.BaseBackoff, p.MaxBackoff)
		}
	}
	if p.Factor == 0 {
		p.Factor = defaultFactor
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = max(defaultMaxBackoff, p.BaseBackoff)
	}
	if p.Jitter == nil {
		p.Jitter = FullJitter
	}
	if p.Classifier == nil {
		p.Classifier = DefaultClassifier
	}
	if p.BaseBackoff|p.MaxBackoff|p.MaxElapsed|p.AttemptTimeout >= 0 && p.MaxBackoff >= p.BaseBackoff &&
		p.Factor >= 1 && p.Factor <= math.MaxFloat64 &&
		(p.MaxAttempts > 0 || p.MaxElapsed > 0 && p.BaseBackoff >= MinUnboundedWait) {
		// Valid but for the jitter: the common case, in one test. The switch
		// below finds which field is wrong, for the error message.
		if k, ok := p.Jitter.(JitterKind); ok && k <= DecorrelatedJitter || validateJitter(p.Jitter) == nil {
			return nil
		}
	}
	switch {
	case p.BaseBackoff < 0:
		return invalid("BaseBackoff %v is negative", p.BaseBackoff)
	case p.MaxBackoff < 0:
		return invalid("MaxBackoff %v is negative", p.MaxBackoff)
	case p.MaxBackoff < p.BaseBackoff:
		return invalid("MaxBackoff %v is below BaseBackoff %v", p.MaxBackoff, p.BaseBackoff)
	case math.IsNaN(p.Factor) || math.IsInf(p.Factor, 0):
		return invalid("Factor %v is not a finite number", p.Factor)
	case p.Factor < 1:
		return invalid("Factor %v is below 1: backoffs would shrink", p.Factor)
	case p.MaxElapsed < 0:
		return invalid("MaxElapsed %v is negative", p.MaxElapsed)
	case p.AttemptTimeout < 0:
		return invalid("AttemptTimeout %v is negative", p.AttemptTimeout)
	case p.MaxAttempts < 0 && p.MaxElapsed == 0:
		return invalid("MaxAttempts %d (no limit) needs MaxElapsed, or nothing ends the loop", p.MaxAttempts)
	case p.MaxAttempts < 0 && p.BaseBackoff < MinUnboundedWait:
		return invalid("MaxAttempts %d (no limit) needs BaseBackoff of at least %v, not %v, or the loop spins",
			p.MaxAttempts, MinUnboundedWait, p.BaseBackoff)
	}
	if err := validateJitter(p.Jitter); err != nil {
		return fmt.Errorf("%w: Jitter: %w", ErrInvalidPolicy, err)
	}
	return nil
}

// validateJitter asks j to check its parameters, if it can: see [Jitter].
func validateJitter(j Jitter) error {
	if v, ok := j.(interface{ Validate() error }); ok {
		return v.Validate()
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidPolicy}, args...)...)
}

// wait is Wait on a resolved policy.
func (p *Policy) wait(n int, prev time.Duration, u float64) time.Duration {
	hi := max(p.MaxBackoff, 0) // only an invalid policy has it negative
	s := Step{N: max(n, 1), Backoff: p.backoff(n), PrevWait: prev, BaseBackoff: p.BaseBackoff, MaxBackoff: hi}
	w := min(max(p.Jitter.Wait(s, u), 0), hi)
	if p.MaxAttempts < 0 {
		w = min(max(w, MinUnboundedWait), hi)
	}
	return w
}

// backoff is b = min(MaxBackoff, BaseBackoff·Factor^(n−1)), computed in
// float64 so that a huge Factor or n saturates at MaxBackoff instead of
// overflowing.
func (p *Policy) backoff(n int) time.Duration {
	f := float64(p.BaseBackoff) * math.Pow(p.Factor, float64(max(n, 1)-1))
	return clampDuration(f, max(p.MaxBackoff, 0))
}

// clampDuration converts f to a Duration in [0, hi]. NaN becomes hi: a
// wait nobody can compute is better long than zero, which would spin.
func clampDuration(f float64, hi time.Duration) time.Duration {
	switch {
	case f <= 0:
		return 0
	case !(f < float64(hi)): // also catches NaN and +Inf
		return hi
	}
	return time.Duration(f)
}
