package retry_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		p     retry.Policy
		field string // named in the error; empty means valid
	}{
		{"zero", retry.Policy{}, ""},
		{"one attempt", retry.Policy{MaxAttempts: 1}, ""},
		{"flat waits", retry.Policy{Factor: 1}, ""},
		{"huge factor", retry.Policy{Factor: 1e308}, ""},
		{"base above default cap", retry.Policy{BaseBackoff: time.Minute}, ""},
		{"unlimited with MaxElapsed", retry.Policy{MaxAttempts: -1, MaxElapsed: time.Minute}, ""},
		{"unlimited at the floor", retry.Policy{MaxAttempts: -1, MaxElapsed: time.Minute, BaseBackoff: retry.MinUnboundedWait}, ""},
		{"only MaxBackoff, below the default base", retry.Policy{MaxBackoff: 100 * time.Millisecond}, ""},
		{"unlimited with waits that round to zero", retry.Policy{MaxAttempts: -1, MaxElapsed: 200 * time.Millisecond, BaseBackoff: time.Nanosecond, Factor: 1}, "MaxAttempts"},
		{"unknown JitterKind", retry.Policy{Jitter: retry.DecorrelatedJitter + 1}, "Jitter"},
		{"bad band behind a wrapper", retry.Policy{Jitter: retrytest.Seeded(retry.BandJitter(2), 1)}, "BandJitter"},
		{"band 0", retry.Policy{Jitter: retry.BandJitter(0)}, ""},
		{"band 1", retry.Policy{Jitter: retry.BandJitter(1)}, ""},
		{"negative base", retry.Policy{BaseBackoff: -time.Second}, "BaseBackoff"},
		{"negative max", retry.Policy{MaxBackoff: -1}, "MaxBackoff"},
		{"max below base", retry.Policy{BaseBackoff: time.Second, MaxBackoff: time.Millisecond}, "MaxBackoff"},
		{"factor below 1", retry.Policy{Factor: 0.5}, "Factor"},
		{"negative factor", retry.Policy{Factor: -2}, "Factor"},
		{"NaN factor", retry.Policy{Factor: math.NaN()}, "Factor"},
		{"Inf factor", retry.Policy{Factor: math.Inf(1)}, "Factor"},
		{"negative MaxElapsed", retry.Policy{MaxElapsed: -time.Second}, "MaxElapsed"},
		{"negative AttemptTimeout", retry.Policy{AttemptTimeout: -time.Second}, "AttemptTimeout"},
		{"unlimited without MaxElapsed", retry.Policy{MaxAttempts: -1}, "MaxAttempts"},
		{"band above 1", retry.Policy{Jitter: retry.BandJitter(1.5)}, "BandJitter"},
		{"band negative", retry.Policy{Jitter: retry.BandJitter(-0.1)}, "BandJitter"},
		{"band NaN", retry.Policy{Jitter: retry.BandJitter(math.NaN())}, "BandJitter"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := c.p.Validate()
			if c.field == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, retry.ErrInvalidPolicy)
			assert.Contains(t, err.Error(), c.field)
		})
	}
}

func TestWaitIsTheExponentialDelayUnderNoJitter(t *testing.T) {
	t.Parallel()
	p := retry.Policy{Jitter: retry.NoJitter}
	want := []time.Duration{200, 400, 800, 1600, 3200, 5000, 5000} // ms; capped at 5s
	for i, w := range want {
		n := i + 1
		got := p.Wait(n, 0, 0.5)
		assert.Equal(t, w*time.Millisecond, got, "Wait(%d) = %v, want %v", n, got, w*time.Millisecond)
	}
}

func TestWaitSaturatesInsteadOfOverflowing(t *testing.T) {
	t.Parallel()
	extremes := []retry.Policy{
		{Factor: 1e308},
		{Factor: 1e308, BaseBackoff: math.MaxInt64, MaxBackoff: math.MaxInt64},
		{BaseBackoff: time.Nanosecond, MaxBackoff: math.MaxInt64, Factor: 10},
		{MaxAttempts: math.MaxInt, MaxElapsed: time.Hour},
	}
	jitters := []retry.Jitter{retry.NoJitter, retry.FullJitter, retry.EqualJitter, retry.DecorrelatedJitter, retry.BandJitter(1)}
	for _, p := range extremes {
		require.NoError(t, p.Validate())
		for _, j := range jitters {
			p.Jitter = j
			ceiling := p.MaxBackoff
			if ceiling == 0 {
				ceiling = max(5*time.Second, p.BaseBackoff)
			}
			for _, n := range []int{-5, 0, 1, 2, 63, 64, 1000, math.MaxInt} {
				for _, prev := range []time.Duration{0, time.Second, math.MaxInt64} {
					for _, u := range []float64{0, 0.5, math.Nextafter(1, 0)} {
						w := p.Wait(n, prev, u)
						if w < 0 || w > ceiling {
							t.Fatalf("%+v %v: Wait(%d, %v, %v) = %v, want within [0, %v]", p, j, n, prev, u, w, ceiling)
						}
					}
				}
			}
		}
	}
}

func TestWaitOnAnInvalidPolicyStaysInRange(t *testing.T) {
	t.Parallel()
	for _, p := range []retry.Policy{
		{MaxBackoff: -time.Second},
		{BaseBackoff: -time.Second},
		{Factor: math.NaN()},
		{Factor: 0.1},
		{Jitter: retry.BandJitter(50)},
	} {
		w := p.Wait(3, 0, 0.9)
		assert.GreaterOrEqual(t, w, time.Duration(0), "%+v", p)
		assert.LessOrEqual(t, w, 5*time.Second, "%+v", p)
	}
}

// A Jitter that misbehaves cannot make Do wait less than zero or more than
// MaxBackoff.
func TestWaitClampsACustomJitter(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{-time.Hour, math.MinInt64, math.MaxInt64} {
		p := retry.Policy{Jitter: fixedJitter(d), MaxBackoff: time.Second}
		w := p.Wait(1, 0, 0)
		assert.GreaterOrEqual(t, w, time.Duration(0))
		assert.LessOrEqual(t, w, time.Second)
	}
}

type fixedJitter time.Duration

func (f fixedJitter) Wait(retry.Step, float64) time.Duration { return time.Duration(f) }

func TestValidateErrorsReadWell(t *testing.T) {
	t.Parallel()
	err := retry.Policy{BaseBackoff: time.Second, MaxBackoff: time.Millisecond}.Validate()
	assert.EqualError(t, err, "retry: invalid policy: MaxBackoff 1ms is below BaseBackoff 1s")
	err = retry.Policy{Jitter: retry.BandJitter(2)}.Validate()
	assert.EqualError(t, err, "retry: invalid policy: Jitter: BandJitter spread 2 is outside [0, 1]")
	assert.True(t, errors.Is(err, retry.ErrInvalidPolicy))
	assert.Equal(t, "BandJitter(0.3)", fmt.Sprint(retry.BandJitter(0.3)))
}

// A zero BaseBackoff fits under a MaxBackoff that is set: the default base
// is then MaxBackoff, not a validation error.
func TestDefaultBaseFitsUnderMaxBackoff(t *testing.T) {
	t.Parallel()
	p := retry.Policy{MaxBackoff: 100 * time.Millisecond, Jitter: retry.NoJitter}
	assert.Equal(t, 100*time.Millisecond, p.Wait(1, 0, 0))
	assert.Equal(t, 100*time.Millisecond, p.Wait(5, 0, 0))
}

// The zero JitterKind is the default jitter, not NoJitter: a zero never
// means the unsafe choice.
func TestZeroJitterKindIsFullJitter(t *testing.T) {
	t.Parallel()
	var k retry.JitterKind
	assert.Equal(t, retry.FullJitter, k)
	zero := retry.Policy{}
	full := retry.Policy{Jitter: retry.FullJitter}
	for _, u := range []float64{0, 0.25, 0.99} {
		assert.Equal(t, full.Wait(3, 0, u), zero.Wait(3, 0, u))
	}
}

// A loop without a count limit cannot spin: every wait is at least
// MinUnboundedWait, even from a Jitter that returns 0, so fake time moves
// and MaxElapsed ends the loop after at most MaxElapsed/MinUnboundedWait
// calls.
func TestUnlimitedLoopCannotSpin(t *testing.T) {
	t.Parallel()
	p := retry.Policy{MaxAttempts: -1, MaxElapsed: 200 * time.Millisecond, BaseBackoff: retry.MinUnboundedWait, Factor: 1, Jitter: zeroJitter{}}
	require.NoError(t, p.Validate())
	assert.Equal(t, retry.MinUnboundedWait, p.Wait(1, 0, 0.5))

	op := retrytest.Always(errUnavailable)
	tr, err := retrytest.Do(context.Background(), op.Call, p)
	require.ErrorIs(t, err, retry.ErrDeadline)
	assert.LessOrEqual(t, op.Calls(), 200)
	assert.Greater(t, op.Calls(), 100)
	for _, w := range tr.Waits() {
		assert.GreaterOrEqual(t, w, retry.MinUnboundedWait)
	}
}

// zeroJitter waits nothing at all.
type zeroJitter struct{}

func (zeroJitter) Wait(retry.Step, float64) time.Duration { return 0 }
