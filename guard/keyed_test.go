package guard_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewBreakersAndThrottlesRejectBadArguments(t *testing.T) {
	t.Parallel()
	_, err := guard.NewBreakers(guard.BreakerOptions{Probes: -1}, 10)
	assert.ErrorIs(t, err, guard.ErrInvalidOptions)
	_, err = guard.NewBreakers(guard.BreakerOptions{}, 0)
	assert.ErrorContains(t, err, "maxKeys 0")
	_, err = guard.NewThrottles(guard.ThrottleOptions{K: 0.5}, 10)
	assert.ErrorIs(t, err, guard.ErrInvalidOptions)
	_, err = guard.NewThrottles(guard.ThrottleOptions{}, -1)
	assert.ErrorContains(t, err, "maxKeys -1")
}

// Breakers gives each key its own Breaker, the same one every time: one
// key's outage opens its own breaker and no other.
func TestBreakersIsolateKeys(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	bs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 4, Clock: clk}, 10)
	require.NoError(t, err)
	a, b := bs.Get("a"), bs.Get("b")
	require.Same(t, a, bs.Get("a"))
	require.NotSame(t, a, b)
	for range 4 {
		_, _ = retry.Do(context.Background(), failOp, retry.Policy{MaxAttempts: 1, Breaker: a, Clock: clk})
		_, err := retry.Do(context.Background(), succeedOp, retry.Policy{MaxAttempts: 1, Breaker: b, Clock: clk})
		require.NoError(t, err)
	}
	assert.Equal(t, guard.BreakerOpen, a.State())
	assert.Equal(t, guard.BreakerClosed, b.State())

	var keys []string
	for k, br := range bs.All() {
		keys = append(keys, k+"="+br.State().String())
	}
	assert.Equal(t, []string{"a=open", "b=closed"}, keys)

	var zero guard.Breakers
	assert.Equal(t, guard.BreakerClosed, zero.Get("x").State(), "the zero Breakers is ready")
}

// A full Breakers forgets a closed breaker before an open one, so that an
// open host is not handed its traffic back because new hosts came.
func TestBreakersBoundedForgetClosedFirst(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	bs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 1, Clock: clk}, 4)
	require.NoError(t, err)
	down := bs.Get("down")
	_, _ = retry.Do(context.Background(), failOp, retry.Policy{MaxAttempts: 1, Breaker: down, Clock: clk})
	require.Equal(t, guard.BreakerOpen, down.State())
	for i := range 100 {
		bs.Get(fmt.Sprint("host", i))
		n := 0
		for range bs.All() {
			n++
		}
		require.LessOrEqual(t, n, 4, "after %d keys", i+1)
	}
	assert.Same(t, down, bs.Get("down"), "the open breaker was forgotten")
}

// Throttles gives each key its own Throttle: one key's overload sheds
// only its own requests.
func TestThrottlesIsolateKeys(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	ts, err := guard.NewThrottles(guard.ThrottleOptions{Clock: clk}, 3)
	require.NoError(t, err)
	a, b := ts.Get("a"), ts.Get("b")
	require.Same(t, a, ts.Get("a"))
	for range 100 {
		_, _ = retry.Do(context.Background(), failOp, retry.Policy{MaxAttempts: 1, Throttle: a, Clock: clk})
		_, _ = retry.Do(context.Background(), succeedOp, retry.Policy{MaxAttempts: 1, Throttle: b, Clock: clk})
	}
	assert.Greater(t, a.RejectProbability(), 0.5)
	assert.Zero(t, b.RejectProbability())
	for i := range 50 {
		ts.Get(fmt.Sprint("host", i))
	}
	assert.Same(t, a, ts.Get("a"), "the shedding throttle was forgotten")
	n := 0
	for range ts.All() {
		n++
	}
	assert.Equal(t, 3, n)

	var zero guard.Throttles
	assert.Zero(t, zero.Get("x").RejectProbability(), "the zero Throttles is ready")
}
