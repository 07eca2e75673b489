package retry_test

import (
	"context"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/guards"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// changes watches target and returns the channel of its changes.
func changes(t *testing.T, target any) <-chan guards.Change {
	t.Helper()
	ch := make(chan guards.Change, 16)
	id := new(int)
	require.True(t, guards.Watch(target, id, func(c guards.Change) { ch <- c }))
	t.Cleanup(func() { guards.Unwatch(target, id) })
	return ch
}

func next(t *testing.T, ch <-chan guards.Change) guards.Change {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no change came")
		return guards.Change{}
	}
}

func breakerChange(key string, from, to retry.BreakerState) guards.Change {
	return guards.Change{Key: key, Breaker: true, From: uint8(from), To: uint8(to)}
}

// A watched breaker reports each change once, in order, and its move to
// half-open on time: when OpenFor ends, with no call and no State.
func TestBreakerWatchersHearEachChangeOnTime(t *testing.T) {
	t.Parallel()
	b, clk, p := breakerCase(t, retry.BreakerOptions{})
	ch := changes(t, b)
	open(t, b, p, 4)
	assert.Equal(t, breakerChange("", retry.BreakerClosed, retry.BreakerOpen), next(t, ch))
	require.Equal(t, 1, clk.Pending(), "one timer for the move to half-open")

	clk.Add(10 * time.Second)
	assert.Equal(t, breakerChange("", retry.BreakerOpen, retry.BreakerHalfOpen), next(t, ch), "on time, with no call")
	for range 2 {
		_, err := retry.Do(context.Background(), succeedOp, p)
		require.NoError(t, err)
	}
	assert.Equal(t, breakerChange("", retry.BreakerHalfOpen, retry.BreakerClosed), next(t, ch))
	assert.Empty(t, ch, "each change once")
}

// The breakers of a Breakers tell the Breakers' watchers, with their key;
// a throttle tells when it starts and stops shedding, once each.
func TestKeyedWatchersHearTheirKeys(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	bs, err := retry.NewBreakers(retry.BreakerOptions{MinCalls: 1, Clock: clk}, 10)
	require.NoError(t, err)
	bch := changes(t, bs)
	_, _ = retry.Do(context.Background(), failOp, retry.Policy{MaxAttempts: 1, Breaker: bs.Get("api:443"), Clock: clk})
	assert.Equal(t, breakerChange("api:443", retry.BreakerClosed, retry.BreakerOpen), next(t, bch))
	clk.Add(time.Minute) // let the timer go
	assert.Equal(t, breakerChange("api:443", retry.BreakerOpen, retry.BreakerHalfOpen), next(t, bch))

	ts, err := retry.NewThrottles(retry.ThrottleOptions{Clock: clk, Window: time.Minute}, 10)
	require.NoError(t, err)
	tch := changes(t, ts)
	th := ts.Get("db")
	for range 100 {
		_, _ = retry.Do(context.Background(), failOp, retry.Policy{MaxAttempts: 1, Throttle: th, Clock: clk})
	}
	assert.Equal(t, guards.Change{Key: "db", On: true}, next(t, tch))
	assert.Empty(t, tch, "shedding started once")
	clk.Add(2 * time.Minute) // the window forgets the failures
	assert.Zero(t, th.RejectProbability())
	assert.Equal(t, guards.Change{Key: "db", On: false}, next(t, tch))
	assert.Empty(t, tch)
}

func TestWatchRefusesWhatItCannotWatch(t *testing.T) {
	t.Parallel()
	assert.False(t, guards.Watch(42, 1, func(guards.Change) {}))
	assert.False(t, guards.Watch((*retry.Breaker)(nil), 1, func(guards.Change) {}))
	b, err := retry.NewBreaker(retry.BreakerOptions{})
	require.NoError(t, err)
	for i := range 16 {
		require.True(t, guards.Watch(b, i, func(guards.Change) {}))
	}
	assert.True(t, guards.Watch(b, 3, func(guards.Change) {}), "the same id replaces")
	assert.False(t, guards.Watch(b, 99, func(guards.Change) {}), "full")
	guards.Unwatch(b, 3)
	assert.True(t, guards.Watch(b, 99, func(guards.Change) {}))
}
