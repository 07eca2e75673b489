package retry

import (
	"fmt"
	"time"
)

// Jitter turns the backoff of a retry into the wait actually slept.
//
// Exponential backoff alone keeps clients that failed at the same instant in
// lockstep: they all come back together and knock the recovering server over
// again. A Jitter spreads them out. The built-in ones are the [JitterKind]
// constants and [BandJitter]; any type with a Wait method can take their
// place.
//
// A Jitter with parameters may also have a method Validate() error, which
// [Policy.Validate] calls to check them; a Jitter that wraps another should
// forward it, so that a bad parameter cannot hide behind the wrapper.
type Jitter interface {
	// Wait returns the wait for step s. u is a uniform random number in
	// [0, 1) that Do draws for this wait: a Jitter that takes its randomness
	// from u is a pure function, which tests can drive with chosen values.
	// Do clamps the result to [0, s.MaxBackoff]. Wait is called
	// concurrently when a Policy is shared.
	Wait(s Step, u float64) time.Duration
}

// Step is what a [Jitter] knows about the wait it shapes.
type Step struct {
	// N is the retry the wait comes before: 1 for the wait before the
	// second attempt.
	N int
	// Backoff is min(MaxBackoff, BaseBackoff·Factor^(N−1)): the wait
	// before jitter.
	Backoff time.Duration
	// PrevWait is what the Jitter returned for retry N−1 (so without any
	// callee's RetryAfter), or 0 before the first retry.
	PrevWait time.Duration
	// BaseBackoff and MaxBackoff are the Policy's, defaults filled in.
	BaseBackoff, MaxBackoff time.Duration
}

// JitterKind names a built-in Jitter without parameters. They are
// constants, not variables, so that no code can swap one out from under
// another; the zero JitterKind is FullJitter, the default.
type JitterKind uint8

// The built-in jitters. In each formula b is [Step.Backoff] and u the
// uniform draw in [0, 1); results are clamped to [0, MaxBackoff].
const (
	// FullJitter waits b·u, uniform in [0, b). It spreads a herd the most
	// and waits least on average (b/2); it is the default. Those short
	// waits spend attempts quickly: give it attempts or a MaxElapsed that
	// outlast the outages it should ride out.
	FullJitter JitterKind = iota

	// NoJitter waits exactly b. Use it only where one client retries alone,
	// or in tests: many clients that fail together retry together with it.
	NoJitter

	// EqualJitter waits b/2 + (b/2)·u, uniform in [b/2, b): it keeps at
	// least half of the backoff.
	EqualJitter

	// DecorrelatedJitter waits min(MaxBackoff, uniform in [BaseBackoff,
	// 3·prev)), where prev is the previous wait (BaseBackoff before the
	// first retry). It ignores b and Factor: each wait grows from the last
	// one at random.
	DecorrelatedJitter
)

// Wait implements [Jitter].
func (j JitterKind) Wait(s Step, u float64) time.Duration {
	b := float64(s.Backoff)
	switch j {
	case FullJitter:
		return clampDuration(b*u, s.MaxBackoff)
	case EqualJitter:
		return clampDuration(b/2+b/2*u, s.MaxBackoff)
	case DecorrelatedJitter:
		lo := float64(s.BaseBackoff)
		hi := 3 * float64(max(s.PrevWait, s.BaseBackoff))
		return clampDuration(lo+(hi-lo)*u, s.MaxBackoff)
	}
	return s.Backoff
}

// Validate reports an unknown JitterKind, such as JitterKind(9).
func (j JitterKind) Validate() error {
	if j > DecorrelatedJitter {
		return fmt.Errorf("unknown %v", j)
	}
	return nil
}

// String returns the constant's name, for logs and test names.
func (j JitterKind) String() string {
	switch j {
	case NoJitter:
		return "NoJitter"
	case FullJitter:
		return "FullJitter"
	case EqualJitter:
		return "EqualJitter"
	case DecorrelatedJitter:
		return "DecorrelatedJitter"
	}
	return fmt.Sprintf("JitterKind(%d)", uint8(j))
}

// BandJitter returns a Jitter that waits b·(1 − spread + 2·spread·u),
// uniform in [b·(1−spread), b·(1+spread)]. BandJitter(0.3) is the ±30%
// band: the waits keep their exponential shape and still come apart.
// spread must be in [0, 1]; [Policy.Validate] reports any other value.
func BandJitter(spread float64) Jitter {
	return band(spread)
}

type band float64

// Wait implements [Jitter].
func (b band) Wait(s Step, u float64) time.Duration {
	spread := float64(b)
	return clampDuration(float64(s.Backoff)*(1-spread+2*spread*u), s.MaxBackoff)
}

// Validate reports a spread outside [0, 1].
func (b band) Validate() error {
	if !(b >= 0 && b <= 1) { // also catches NaN
		return fmt.Errorf("BandJitter spread %v is outside [0, 1]", float64(b))
	}
	return nil
}

func (b band) String() string {
	return fmt.Sprintf("BandJitter(%g)", float64(b))
}
