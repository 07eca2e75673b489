package retry

import (
	"context"
	"fmt"
	"math"
	"time"
)

// Defaults that a zero field of [Policy] stands for.
const (
	defaultMaxAttempts = 4
	defaultBaseDelay   = 200 * time.Millisecond
	defaultFactor      = 2.0
	defaultMaxDelay    = 5 * time.Second
)

// Policy says how [Do] retries.
//
// The zero Policy is ready to use: at most 4 attempts, waits that start at
// 200ms and double up to 5s with [FullJitter], the [DefaultClassifier], no
// time limit but the ctx's, no per-attempt timeout, no budget, and the real
// clock. Each zero field means its default; a zero never means "retry forever"
// or "retry without waiting".
//
// A Policy is a plain value: copy it and share it between goroutines freely.
// Do keeps every per-call counter in its own locals. What the fields point to
// (Clock, Budget, hooks, a custom Jitter or Classifier) must be safe for
// concurrent use when the Policy is shared.
type Policy struct {
	// MaxAttempts is the most calls of op, the first included [4].
	// A negative value removes the count limit; Validate accepts that only
	// with MaxElapsed set, so that something still ends the loop.
	MaxAttempts int

	// BaseDelay is the delay before the first retry, before jitter [200ms].
	BaseDelay time.Duration

	// Factor multiplies the delay for each further retry [2]; 1 keeps it flat.
	Factor float64

	// MaxDelay caps a single wait [5s, or BaseDelay if that is larger].
	MaxDelay time.Duration

	// MaxElapsed bounds the whole call, from the first attempt to the last,
	// waits included [none: only ctx bounds it]. Do gives up at once with
	// ErrDeadline when the next wait would not fit, and op's ctx ends then.
	MaxElapsed time.Duration

	// AttemptTimeout bounds each call of op: the ctx op gets ends after it
	// [none]. An attempt that times out while the caller's ctx is alive is
	// retried.
	AttemptTimeout time.Duration

	// Jitter spreads each wait so that clients that failed together do not
	// come back together [FullJitter].
	Jitter Jitter

	// Classifier decides whether a failed attempt is worth another
	// [DefaultClassifier].
	Classifier Classifier

	// Clock is the time source for waits, deadlines and the Trace [real time].
	// Tests inject a *clock.Mock (see package retrytest) or leave it nil and
	// run inside testing/synctest. A ctx deadline is read on this clock, so a
	// test that gives ctx a deadline makes it with the same clock.
	Clock Clock

	// OnRetry, if set, is called after a failed attempt that will be
	// retried, before the wait, with the caller's ctx so that it can log or
	// trace per request. It is never called after the last attempt. Its own
	// time counts against MaxElapsed: if it uses up the room for the wait,
	// Do gives up with ErrDeadline after all.
	OnRetry func(ctx context.Context, failed Attempt, wait time.Duration)

	// Budget, if set, limits retries across every Do that shares it, so that
	// a fleet stops multiplying load on a failing service [none].
	Budget *Budget

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
// attempt), given the previous wait and a uniform random number u in [0, 1).
// It is the pure function Do uses: d = min(MaxDelay, BaseDelay·Factor^(n−1)),
// then the Jitter, then a clamp to [0, MaxDelay]. A wait the callee asks for
// (Decision.After) comes on top of it in Do. Wait never panics: on a policy
// that Validate rejects it still returns a duration in range.
func (p Policy) Wait(n int, prev time.Duration, u float64) time.Duration {
	_ = p.resolve() // fills the defaults; the result is clamped either way
	return p.wait(n, prev, u)
}

// resolve validates p and replaces its zero fields with their defaults.
// Do calls it on its own copy, so that the rest of the loop reads plain fields.
func (p *Policy) resolve() error {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = defaultMaxAttempts
	}
	if p.BaseDelay == 0 {
		p.BaseDelay = defaultBaseDelay
	}
	if p.Factor == 0 {
		p.Factor = defaultFactor
	}
	if p.MaxDelay == 0 {
		p.MaxDelay = max(defaultMaxDelay, p.BaseDelay)
	}
	if p.Jitter == nil {
		p.Jitter = FullJitter
	}
	if p.Classifier == nil {
		p.Classifier = DefaultClassifier
	}
	if p.BaseDelay|p.MaxDelay|p.MaxElapsed|p.AttemptTimeout >= 0 && p.MaxDelay >= p.BaseDelay &&
		p.Factor >= 1 && p.Factor <= math.MaxFloat64 && (p.MaxAttempts > 0 || p.MaxElapsed > 0) {
		// Valid but for the jitter: the common case, in one test. The switch
		// below finds which field is wrong, for the error message.
		if b, ok := p.Jitter.(band); !ok || b.validate() == nil {
			return nil
		}
	}
	switch {
	case p.BaseDelay < 0:
		return invalid("BaseDelay %v is negative", p.BaseDelay)
	case p.MaxDelay < 0:
		return invalid("MaxDelay %v is negative", p.MaxDelay)
	case p.MaxDelay < p.BaseDelay:
		return invalid("MaxDelay %v is below BaseDelay %v", p.MaxDelay, p.BaseDelay)
	case math.IsNaN(p.Factor) || math.IsInf(p.Factor, 0):
		return invalid("Factor %v is not a finite number", p.Factor)
	case p.Factor < 1:
		return invalid("Factor %v is below 1: waits would shrink", p.Factor)
	case p.MaxElapsed < 0:
		return invalid("MaxElapsed %v is negative", p.MaxElapsed)
	case p.AttemptTimeout < 0:
		return invalid("AttemptTimeout %v is negative", p.AttemptTimeout)
	case p.MaxAttempts < 0 && p.MaxElapsed == 0:
		return invalid("MaxAttempts %d (no limit) needs MaxElapsed, or nothing ends the loop", p.MaxAttempts)
	}
	if b, ok := p.Jitter.(band); ok { // the one built-in with a parameter
		if err := b.validate(); err != nil {
			return fmt.Errorf("%w: Jitter: %w", ErrInvalidPolicy, err)
		}
	}
	return nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidPolicy}, args...)...)
}

// wait is Wait on a resolved policy.
func (p *Policy) wait(n int, prev time.Duration, u float64) time.Duration {
	hi := max(p.MaxDelay, 0) // only an invalid policy has it negative
	s := Step{Retry: max(n, 1), Delay: p.delay(n), Prev: prev, Base: p.BaseDelay, Max: hi}
	return min(max(p.Jitter.Wait(s, u), 0), hi)
}

// delay is d = min(MaxDelay, BaseDelay·Factor^(n−1)), computed in float64 so
// that a huge Factor or n saturates at MaxDelay instead of overflowing.
func (p *Policy) delay(n int) time.Duration {
	f := float64(p.BaseDelay) * math.Pow(p.Factor, float64(max(n, 1)-1))
	return clampDuration(f, max(p.MaxDelay, 0))
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
