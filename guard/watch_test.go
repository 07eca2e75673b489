package guard_test

import (
	"context"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// changes watches target and returns the channel of its changes.
func changes(t *testing.T, target interface {
	Watch(func(guard.Change)) (func(), error)
}) <-chan guard.Change {
	t.Helper()
	ch := make(chan guard.Change, 16)
	stop, err := target.Watch(func(c guard.Change) { ch <- c })
	require.NoError(t, err)
	t.Cleanup(stop)
	return ch
}

func next(t *testing.T, ch <-chan guard.Change) guard.Change {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(10 * time.Second):
		t.Fatal("no change came")
		return guard.Change{}
	}
}

func breakerChange(key string, from, to guard.BreakerState) guard.Change {
	return guard.Change{Key: key, Breaker: true, From: from, To: to}
}

// A watched breaker reports each change once, in order, and its move to
// half-open on time: when OpenFor ends, with no call and no State.
func TestBreakerWatchersHearEachChangeOnTime(t *testing.T) {
	t.Parallel()
	b, clk, p := breakerCase(t, guard.BreakerOptions{})
	ch := changes(t, b)
	open(t, b, p, 4)
	assert.Equal(t, breakerChange("", guard.BreakerClosed, guard.BreakerOpen), next(t, ch))
	require.Equal(t, 1, clk.Pending(), "one timer for the move to half-open")

	clk.Add(10 * time.Second)
	assert.Equal(t, breakerChange("", guard.BreakerOpen, guard.BreakerHalfOpen), next(t, ch), "on time, with no call")
	for range 2 {
		_, err := retry.Do(context.Background(), succeedOp, p)
		require.NoError(t, err)
	}
	assert.Equal(t, breakerChange("", guard.BreakerHalfOpen, guard.BreakerClosed), next(t, ch))
	assert.Empty(t, ch, "each change once")
}

// The breakers of a Breakers tell the Breakers' watchers, with their key;
// a throttle tells when it starts and stops shedding, once each.
func TestKeyedWatchersHearTheirKeys(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	bs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 1, Clock: clk}, 10)
	require.NoError(t, err)
	bch := changes(t, bs)
	_, _ = retry.Do(context.Background(), failOp, retry.Policy{MaxAttempts: 1, Breaker: bs.Get("api:443"), Clock: clk})
	assert.Equal(t, breakerChange("api:443", guard.BreakerClosed, guard.BreakerOpen), next(t, bch))
	clk.Add(time.Minute) // let the timer go
	assert.Equal(t, breakerChange("api:443", guard.BreakerOpen, guard.BreakerHalfOpen), next(t, bch))

	ts, err := guard.NewThrottles(guard.ThrottleOptions{Clock: clk, Window: time.Minute}, 10)
	require.NoError(t, err)
	tch := changes(t, ts)
	th := ts.Get("db")
	for range 100 {
		_, _ = retry.Do(context.Background(), failOp, retry.Policy{MaxAttempts: 1, Throttle: th, Clock: clk})
	}
	assert.Equal(t, guard.Change{Key: "db", Shedding: true}, next(t, tch))
	assert.Empty(t, tch, "shedding started once")
	clk.Add(2 * time.Minute) // the window forgets the failures
	assert.Zero(t, th.RejectProbability())
	assert.Equal(t, guard.Change{Key: "db", Shedding: false}, next(t, tch))
	assert.Empty(t, tch)
}

func TestWatchIsBoundedAndRemovable(t *testing.T) {
	t.Parallel()
	b, err := guard.NewBreaker(guard.BreakerOptions{})
	require.NoError(t, err)
	_, err = b.Watch(nil)
	require.ErrorIs(t, err, guard.ErrInvalidOptions, "a nil func")
	stops := make([]func(), 0, guard.MaxWatchers)
	for range guard.MaxWatchers {
		stop, err := b.Watch(func(guard.Change) {})
		require.NoError(t, err)
		stops = append(stops, stop)
	}
	_, err = b.Watch(func(guard.Change) {})
	require.ErrorIs(t, err, guard.ErrTooManyWatchers, "full: an error, not a silent drop")
	stops[3]()
	stops[3]() // twice is harmless: it removes no other watcher
	got := 0
	_, err = b.Watch(func(guard.Change) { got++ })
	require.NoError(t, err, "room again after a stop")
	_, err = b.Watch(func(guard.Change) {})
	require.ErrorIs(t, err, guard.ErrTooManyWatchers, "the second stop freed no second place")
}
