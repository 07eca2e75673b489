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
