package guard_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewThrottleRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    guard.ThrottleOptions
		want string
	}{
		{guard.ThrottleOptions{K: 0.5}, "K 0.5"},
		{guard.ThrottleOptions{K: 1}, "K 1 is not a finite number above 1"},
		{guard.ThrottleOptions{K: -1}, "K -1"},
		{guard.ThrottleOptions{Window: -time.Second}, "Window -1s"},
		{guard.ThrottleOptions{Window: time.Millisecond}, "Window 1ms is below"},
		{guard.ThrottleOptions{MinRequests: -1}, "MinRequests -1"},
		{guard.ThrottleOptions{MaxReject: 1.5}, "MaxReject 1.5"},
		{guard.ThrottleOptions{MaxReject: -0.1}, "MaxReject -0.1"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			th, err := guard.NewThrottle(tc.o)
			require.ErrorIs(t, err, guard.ErrInvalidOptions)
			assert.ErrorContains(t, err, tc.want)
			assert.Nil(t, th)
		})
	}
	for _, o := range []guard.ThrottleOptions{{}, {K: 1.01, Window: time.Second, MinRequests: 1, MaxReject: 1}} {
		_, err := guard.NewThrottle(o)
		assert.NoError(t, err, "NewThrottle(%+v)", o)
	}
}

func TestThrottleRejectProbabilityIsTheSREFormula(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		o                 guard.ThrottleOptions
		requests, accepts uint64
		want              float64
	}{
		{"empty", guard.ThrottleOptions{}, 0, 0, 0},
		{"below MinRequests", guard.ThrottleOptions{}, 19, 0, 0},
		{"all rejected, capped at MaxReject", guard.ThrottleOptions{}, 20, 0, 0.9},
		{"healthy", guard.ThrottleOptions{}, 1000, 1000, 0},
		{"K accepts per request: none shed", guard.ThrottleOptions{}, 1000, 500, 0},
		{"overload", guard.ThrottleOptions{}, 1000, 250, (1000 - 2*250) / 1001.0},
		{"K 1.5", guard.ThrottleOptions{K: 1.5}, 1000, 500, (1000 - 1.5*500) / 1001.0},
		{"MaxReject 1", guard.ThrottleOptions{MaxReject: 1}, 100, 0, 100 / 101.0},
		{"MinRequests 5", guard.ThrottleOptions{MinRequests: 5}, 5, 0, 5 / 6.0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := retrytest.NewClock()
			tc.o.Clock = clk
			th, err := guard.NewThrottle(tc.o)
			require.NoError(t, err)
			th.CountForTest(clk.Now(), tc.requests, tc.accepts)
			assert.InDelta(t, tc.want, th.RejectProbability(), 1e-12,
				"RejectProbability after %d requests, %d accepts", tc.requests, tc.accepts)
		})
	}
}

func TestThrottleWindowSlides(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	th, err := guard.NewThrottle(guard.ThrottleOptions{Clock: clk, Window: time.Minute})
	require.NoError(t, err)
	th.CountForTest(clk.Now(), 100, 0)
	// The window forgets a sixteenth at a time: what is 56.25s old
	// (15/16 of it) is surely kept, and what is a minute old surely gone.
	clk.Add(56 * time.Second)
	assert.InDelta(t, 0.9, th.RejectProbability(), 1e-12, "within the window")
	clk.Add(4 * time.Second)
	assert.Zero(t, th.RejectProbability(), "past the window")
}

// outage returns an op that fails with a "503" and counts its calls.
func outage(calls *atomic.Int64) func(context.Context) error {
	return func(context.Context) error {
		calls.Add(1)
		return errUnavailable
	}
}

func TestThrottleShedsFirstAttemptsInAnOutage(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	th, err := guard.NewThrottle(guard.ThrottleOptions{Clock: clk})
	require.NoError(t, err)
	p := retry.Policy{MaxAttempts: 1, Throttle: th, Clock: clk}
	var sent atomic.Int64
	throttled := 0
	for range 1000 {
		tr, err := retry.Do(context.Background(), outage(&sent), p)
		if tr.Stop() != retry.StopThrottled {
			continue
		}
		throttled++
		require.ErrorIs(t, err, retry.ErrThrottled)
		require.ErrorIs(t, err, retry.ErrGaveUp)
		require.Zero(t, tr.Attempts(), "a throttled call sends nothing")
		require.EqualError(t, err, "retry: throttled before the first attempt")
		require.Equal(t, "0 attempts, throttled", tr.String())
	}
	// MinRequests go through, then about 1 in 10 (MaxReject 0.9).
	assert.GreaterOrEqual(t, sent.Load(), int64(20))
	assert.Less(t, sent.Load(), int64(300), "a dead backend got %d of 1000 calls", sent.Load())
	assert.Equal(t, int64(1000)-sent.Load(), int64(throttled))
}

func TestThrottleCountsAnErrorNotRetriedAsAccepted(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	th, err := guard.NewThrottle(guard.ThrottleOptions{Clock: clk})
	require.NoError(t, err)
	p := retry.Policy{Throttle: th, Clock: clk}
	sent := 0
	for range 1000 {
		tr, _ := retry.Do(context.Background(), func(context.Context) error {
			sent++
			return retry.Permanent(errBadRequest) // a 400: the service did its work
		}, p)
		require.Equal(t, retry.StopNotRetryable, tr.Stop())
	}
	assert.Equal(t, 1000, sent)
	assert.Zero(t, th.RejectProbability())
}

func TestThrottleIsAskedBeforeEveryRetry(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewAutoClock()
	th, err := guard.NewThrottle(guard.ThrottleOptions{Clock: clk, MinRequests: 1, MaxReject: 1})
	require.NoError(t, err)
	// Every attempt fails: from the second on, the probability is
	// (n−1)/n, so a 100-attempt call is cut short long before its end.
	var sent atomic.Int64
	tr, err := retry.Do(context.Background(), outage(&sent), retry.Policy{MaxAttempts: 100, Throttle: th, Clock: clk})
	require.ErrorIs(t, err, retry.ErrThrottled)
	require.ErrorIs(t, err, errUnavailable, "the last attempt's error is kept")
	assert.Equal(t, retry.StopThrottled, tr.Stop())
	assert.Less(t, sent.Load(), int64(100))
	assert.Equal(t, int(sent.Load()), tr.Attempts())
	assert.EqualError(t, err, fmt.Sprintf("retry: throttled after %d attempt%s: %v", sent.Load(), plural(sent.Load()), errUnavailable))
}

func plural(n int64) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// TestThrottleRandDecidesRefusals: with a fake clock and ThrottleOptions.Rand
// the refusals repeat exactly (a seeded simulation), and Rand is the only
// thing they are drawn from.
func TestThrottleRandDecidesRefusals(t *testing.T) {
	t.Parallel()
	run := func(seed uint64) []bool {
		clk := retrytest.NewClock()
		rng := rand.New(rand.NewPCG(seed, 1))
		th, err := guard.NewThrottle(guard.ThrottleOptions{Clock: clk, Rand: rng.Float64})
		require.NoError(t, err)
		p := retry.Policy{MaxAttempts: 1, Throttle: th, Clock: clk}
		var sent atomic.Int64
		refused := make([]bool, 500)
		for i := range refused {
			tr, _ := retry.Do(context.Background(), outage(&sent), p)
			refused[i] = tr.Stop() == retry.StopThrottled
		}
		return refused
	}
	a, b, c := run(7), run(7), run(8)
	assert.Equal(t, a, b, "the same seed refuses the same calls")
	assert.NotEqual(t, a, c, "another seed refuses others")

	for _, tc := range []struct {
		draw    float64
		refused int
	}{{0, 480}, {0.95, 0}} { // after MinRequests (20): always under p, never under MaxReject
		clk := retrytest.NewClock()
		th, err := guard.NewThrottle(guard.ThrottleOptions{Clock: clk, Rand: func() float64 { return tc.draw }})
		require.NoError(t, err)
		var sent atomic.Int64
		n := 0
		for range 500 {
			tr, _ := retry.Do(context.Background(), outage(&sent), retry.Policy{MaxAttempts: 1, Throttle: th, Clock: clk})
			if tr.Stop() == retry.StopThrottled {
				n++
			}
		}
		assert.Equal(t, tc.refused, n, "draw %v", tc.draw)
	}
}
