package retry

import (
	"fmt"
	"time"
)

// Jitter turns the exponential delay of a retry into the wait actually slept.
//
// Exponential backoff alone keeps clients that failed at the same instant in
// lockstep: they all come back together and knock the recovering server over
// again. A Jitter spreads them out. The built-in ones are [NoJitter],
// [FullJitter] (the default), [EqualJitter], [DecorrelatedJitter] and
// [BandJitter]; any type with a Wait method can take their place.
type Jitter interface {
	// Wait returns the wait for step s. u is a uniform random number in
	// [0, 1) that Do draws for this wait: a Jitter that takes its randomness
	// from u is a pure function, which tests can drive with chosen values.
	// Do clamps the result to [0, s.Max]. Wait is called concurrently when a
	// Policy is shared.
	Wait(s Step, u float64) time.Duration
}

// Step is what a [Jitter] knows about the wait it shapes.
type Step struct {
	Retry int           // 1 for the wait before the second attempt
	Delay time.Duration // d = min(Max, Base·Factor^(Retry−1)), the exponential delay
	Prev  time.Duration // the previous retry's jittered wait, without any Decision.After; 0 before the first retry
	Base  time.Duration // Policy.BaseDelay
	Max   time.Duration // Policy.MaxDelay: the cap on every wait
}

// builtin names the parameterless jitters. They are constants, not
// variables, so that no code can swap one out from under another.
type builtin uint8

// The built-in jitters. In each formula d is [Step.Delay] and u the uniform
// draw in [0, 1); results are clamped to [0, MaxDelay].
const (
	// NoJitter waits exactly d. Use it only where one client retries alone,
	// or in tests: many clients that fail together retry together with it.
	NoJitter builtin = iota

	// FullJitter waits d·u, uniform in [0, d). It spreads a herd the most
	// and, on average, waits least (d/2); it is the default.
	FullJitter

	// EqualJitter waits d/2 + (d/2)·u, uniform in [d/2, d): it keeps at
	// least half of the exponential delay.
	EqualJitter

	// DecorrelatedJitter waits min(MaxDelay, uniform in [BaseDelay, 3·prev)),
	// where prev is the previous wait (BaseDelay before the first retry). It
	// ignores d and Factor: each wait grows from the last one at random.
	DecorrelatedJitter
)

// Wait implements [Jitter].
func (j builtin) Wait(s Step, u float64) time.Duration {
	d := float64(s.Delay)
	switch j {
	case FullJitter:
		return clampDuration(d*u, s.Max)
	case EqualJitter:
		return clampDuration(d/2+d/2*u, s.Max)
	case DecorrelatedJitter:
		lo := float64(s.Base)
		hi := 3 * float64(max(s.Prev, s.Base))
		return clampDuration(lo+(hi-lo)*u, s.Max)
	}
	return s.Delay
}

// String returns the constant's name, for logs and test names.
func (j builtin) String() string {
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
	return fmt.Sprintf("builtin(%d)", uint8(j))
}

// BandJitter returns a Jitter that waits d·(1 − spread + 2·spread·u), uniform
// in [d·(1−spread), d·(1+spread)]. BandJitter(0.3) is the ±30% band: the
// waits keep their exponential shape and still come apart. spread must be in
// [0, 1]; [Policy.Validate] reports any other value.
func BandJitter(spread float64) Jitter {
	return band(spread)
}

type band float64

// Wait implements [Jitter].
func (b band) Wait(s Step, u float64) time.Duration {
	spread := float64(b)
	return clampDuration(float64(s.Delay)*(1-spread+2*spread*u), s.Max)
}

func (b band) validate() error {
	if !(b >= 0 && b <= 1) { // also catches NaN
		return fmt.Errorf("BandJitter spread %v is outside [0, 1]", float64(b))
	}
	return nil
}

func (b band) String() string {
	return fmt.Sprintf("BandJitter(%g)", float64(b))
}
