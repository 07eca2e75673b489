package retry_test

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stormguard/retry"
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
		{"base above default cap", retry.Policy{BaseDelay: time.Minute}, ""},
		{"unlimited with MaxElapsed", retry.Policy{MaxAttempts: -1, MaxElapsed: time.Minute}, ""},
		{"band 0", retry.Policy{Jitter: retry.BandJitter(0)}, ""},
		{"band 1", retry.Policy{Jitter: retry.BandJitter(1)}, ""},
		{"negative base", retry.Policy{BaseDelay: -time.Second}, "BaseDelay"},
		{"negative max", retry.Policy{MaxDelay: -1}, "MaxDelay"},
		{"max below base", retry.Policy{BaseDelay: time.Second, MaxDelay: time.Millisecond}, "MaxDelay"},
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
		{Factor: 1e308, BaseDelay: math.MaxInt64, MaxDelay: math.MaxInt64},
		{BaseDelay: time.Nanosecond, MaxDelay: math.MaxInt64, Factor: 10},
		{MaxAttempts: math.MaxInt, MaxElapsed: time.Hour},
	}
	jitters := []retry.Jitter{retry.NoJitter, retry.FullJitter, retry.EqualJitter, retry.DecorrelatedJitter, retry.BandJitter(1)}
	for _, p := range extremes {
		require.NoError(t, p.Validate())
		for _, j := range jitters {
			p.Jitter = j
			ceiling := p.MaxDelay
			if ceiling == 0 {
				ceiling = max(5*time.Second, p.BaseDelay)
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
		{MaxDelay: -time.Second},
		{BaseDelay: -time.Second},
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
// MaxDelay.
func TestWaitClampsACustomJitter(t *testing.T) {
	t.Parallel()
	for _, d := range []time.Duration{-time.Hour, math.MinInt64, math.MaxInt64} {
		p := retry.Policy{Jitter: fixedJitter(d), MaxDelay: time.Second}
		w := p.Wait(1, 0, 0)
		assert.GreaterOrEqual(t, w, time.Duration(0))
		assert.LessOrEqual(t, w, time.Second)
	}
}

type fixedJitter time.Duration

func (f fixedJitter) Wait(retry.Step, float64) time.Duration { return time.Duration(f) }

func TestValidateErrorsReadWell(t *testing.T) {
	t.Parallel()
	err := retry.Policy{BaseDelay: time.Second, MaxDelay: time.Millisecond}.Validate()
	assert.EqualError(t, err, "retry: invalid policy: MaxDelay 1ms is below BaseDelay 1s")
	err = retry.Policy{Jitter: retry.BandJitter(2)}.Validate()
	assert.EqualError(t, err, "retry: invalid policy: Jitter: BandJitter spread 2 is outside [0, 1]")
	assert.True(t, errors.Is(err, retry.ErrInvalidPolicy))
	assert.Equal(t, "BandJitter(0.3)", fmt.Sprint(retry.BandJitter(0.3)))
}
