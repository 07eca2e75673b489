package retry_test

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJitterDistributions draws each built-in many times with a fixed seed
// and checks the range and the moments its formula gives.
func TestJitterDistributions(t *testing.T) {
	t.Parallel()
	const d = time.Second
	step := retry.Step{N: 3, Backoff: d, PrevWait: 400 * time.Millisecond, BaseBackoff: 100 * time.Millisecond, MaxBackoff: 10 * time.Second}
	uniform := func(lo, hi time.Duration) (mean, sd float64) {
		return float64(lo+hi) / 2, float64(hi-lo) / math.Sqrt(12)
	}
	cases := []struct {
		j      retry.Jitter
		lo, hi time.Duration // every draw within [lo, hi]
	}{
		{retry.FullJitter, 0, d},
		{retry.EqualJitter, d / 2, d},
		{retry.BandJitter(0.3), 700 * time.Millisecond, 1300 * time.Millisecond},
		{retry.BandJitter(0.5), 500 * time.Millisecond, 1500 * time.Millisecond},
		{retry.DecorrelatedJitter, step.BaseBackoff, 3 * step.PrevWait},
	}
	for _, c := range cases {
		t.Run(jitterName(c.j), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(1, 2))
			const n = 20000
			var sum, sumSq float64
			for range n {
				w := c.j.Wait(step, r.Float64())
				require.GreaterOrEqual(t, w, c.lo)
				require.LessOrEqual(t, w, c.hi)
				sum += float64(w)
				sumSq += float64(w) * float64(w)
			}
			mean := sum / n
			sd := math.Sqrt(sumSq/n - mean*mean)
			wantMean, wantSD := uniform(c.lo, c.hi)
			assert.InEpsilon(t, wantMean, mean, 0.02, "mean = %v, want %v", time.Duration(mean), time.Duration(wantMean))
			assert.InEpsilon(t, wantSD, sd, 0.03, "standard deviation = %v, want %v", time.Duration(sd), time.Duration(wantSD))
		})
	}
}

func TestNoJitterIsExact(t *testing.T) {
	t.Parallel()
	step := retry.Step{N: 2, Backoff: 400 * time.Millisecond, BaseBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second}
	for _, u := range []float64{0, 0.25, 0.999} {
		assert.Equal(t, 400*time.Millisecond, retry.NoJitter.Wait(step, u))
	}
}

func TestDecorrelatedJitterStartsFromBase(t *testing.T) {
	t.Parallel()
	step := retry.Step{N: 1, Backoff: 200 * time.Millisecond, BaseBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second}
	assert.Equal(t, 200*time.Millisecond, retry.DecorrelatedJitter.Wait(step, 0))
	assert.Equal(t, 400*time.Millisecond, retry.DecorrelatedJitter.Wait(step, 0.5), "uniform in [base, 3·base) before the first retry")
	step.PrevWait = 4 * time.Second
	assert.Equal(t, 5*time.Second, retry.DecorrelatedJitter.Wait(step, 0.9), "capped at MaxBackoff")
}

func TestBandJitterIsClampedToMaxDelay(t *testing.T) {
	t.Parallel()
	step := retry.Step{N: 9, Backoff: 5 * time.Second, BaseBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second}
	assert.Equal(t, 5*time.Second, retry.BandJitter(0.3).Wait(step, 0.99))
	assert.Equal(t, 3500*time.Millisecond, retry.BandJitter(0.3).Wait(step, 0))
}

// TestStormSpreadsFirstRetries is the outage storm: 18 requests fail at the
// same instant. Without jitter they all come back at 200ms, in lockstep;
// with jitter their first retries spread out.
func TestStormSpreadsFirstRetries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		j        retry.Jitter
		lo, hi   time.Duration
		distinct int // at least this many different first waits among 18
	}{
		{retry.NoJitter, 200 * time.Millisecond, 200 * time.Millisecond, 1},
		{retry.FullJitter, 0, 200*time.Millisecond - 1, 18},
		{retry.BandJitter(0.3), 140 * time.Millisecond, 260 * time.Millisecond, 18},
	}
	for _, c := range cases {
		t.Run(jitterName(c.j), func(t *testing.T) {
			t.Parallel()
			j := retrytest.Seeded(c.j, 18)
			var firsts []time.Duration
			for range 18 {
				op := retrytest.Script(errUnavailable)
				tr, err := retrytest.Do(context.Background(), op.Call, retry.Policy{Jitter: j})
				require.NoError(t, err)
				firsts = append(firsts, tr.Waits()[0])
			}
			slices.Sort(firsts)
			assert.GreaterOrEqual(t, firsts[0], c.lo)
			assert.LessOrEqual(t, firsts[17], c.hi)
			assert.Len(t, slices.Compact(slices.Clone(firsts)), c.distinct, "distinct first waits: %v", firsts)
			if c.distinct > 1 {
				// Spread, not bunched: the herd covers most of the window.
				assert.Greater(t, firsts[17]-firsts[0], (c.hi-c.lo)/2, "first waits %v", firsts)
			}
		})
	}
}

// The default draws come from math/rand/v2: two runs of a jittered Do do not
// repeat each other, and Seeded makes them repeat.
func TestSeededJitterIsDeterministic(t *testing.T) {
	t.Parallel()
	waits := func(j retry.Jitter) []time.Duration {
		tr, err := retrytest.Do(context.Background(), retrytest.Always(errUnavailable).Call, retry.Policy{MaxAttempts: 5, Jitter: j})
		require.ErrorIs(t, err, retry.ErrExhausted)
		return tr.Waits()
	}
	assert.Equal(t, waits(retrytest.Seeded(retry.FullJitter, 7)), waits(retrytest.Seeded(retry.FullJitter, 7)))
	assert.NotEqual(t, waits(retry.FullJitter), waits(retry.FullJitter))
}

func jitterName(j retry.Jitter) string {
	if s, ok := j.(interface{ String() string }); ok {
		return s.String()
	}
	return "custom"
}
