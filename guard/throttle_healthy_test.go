package guard_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A healthy Throttle skips its window's sum while the probability is known
// to be zero; an outage that starts in the same slice of the window must
// still be shed as soon as the formula says so, on the real clock as on a
// fake one.
func TestThrottleShedsAnOutageThatFollowsHealth(t *testing.T) {
	t.Parallel()
	for _, clk := range []retry.Clock{nil, retrytest.NewClock()} {
		th, err := guard.NewThrottle(guard.ThrottleOptions{Window: time.Hour, Clock: clk})
		require.NoError(t, err)
		p := retry.Policy{MaxAttempts: 1, Throttle: th, Clock: clk}
		for range 100 {
			_, err := retry.Do(context.Background(), func(context.Context) error { return nil }, p)
			require.NoError(t, err)
		}
		require.Zero(t, th.RejectProbability())
		shed := 0
		for range 1000 {
			_, err := retry.Do(context.Background(), func(context.Context) error { return errUnavailable }, p)
			if errors.Is(err, retry.ErrThrottled) {
				shed++
			}
		}
		// With K 2, shedding starts once requests pass twice the 100
		// accepts, and then sheds most of the rest.
		assert.Greater(t, shed, 500, "clock %T", clk)
		assert.InDelta(t, 0.9, th.RejectProbability(), 0.1)
	}
}

// A failed attempt among many accepted ones leaves the probability known
// to be zero, for as many failures as the window's accepts cover: the
// next attempts, from any caller, skip the window's sum. Past that slack
// the Throttle sums again, and sheds as the formula says.
func TestThrottleFewFailuresKeepTheFastPath(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	th, err := guard.NewThrottle(guard.ThrottleOptions{Window: time.Hour, Clock: clk})
	require.NoError(t, err)
	p := retry.Policy{MaxAttempts: 1, Throttle: th, Clock: clk}
	ok := func(context.Context) error { return nil }
	fail := func(context.Context) error { return errUnavailable }
	for range 100 {
		_, err := retry.Do(context.Background(), ok, p)
		require.NoError(t, err)
	}
	// The zero noted on an empty window has no slack: the first failure
	// clears it, and the next attempt sums 100 accepts and 101 requests.
	_, err = retry.Do(context.Background(), fail, p)
	require.ErrorIs(t, err, errUnavailable)
	_, err = retry.Do(context.Background(), ok, p)
	require.NoError(t, err)
	require.True(t, th.ZeroKnownForTest(clk.Now()))
	for i := range 50 {
		_, err = retry.Do(context.Background(), fail, p)
		require.ErrorIs(t, err, errUnavailable)
		require.True(t, th.ZeroKnownForTest(clk.Now()), "after failure %d of 50", i+1)
	}
	// 152 requests against K·accepts = 202: the slack left, 49, takes 49
	// more failures, and the 50th, which finds none, clears the note.
	for range 49 {
		_, err = retry.Do(context.Background(), fail, p)
		require.ErrorIs(t, err, errUnavailable)
	}
	_, err = retry.Do(context.Background(), fail, p)
	require.ErrorIs(t, err, errUnavailable)
	assert.False(t, th.ZeroKnownForTest(clk.Now()))
	assert.Zero(t, th.RejectProbability(), "202 requests, 101 accepts: K·accepts still covers them")
	_, err = retry.Do(context.Background(), fail, p)
	require.ErrorIs(t, err, errUnavailable)
	assert.Positive(t, th.RejectProbability())
}
