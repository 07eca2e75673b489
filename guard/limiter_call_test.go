package guard_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An Adaptive limit starts at Max, never goes above it, and shrinks when
// the latency of the attempts grows past its minimum, or when they fail
// in a way worth a retry; an attempt its caller canceled says nothing.
func TestLimiterAdaptiveShrinksWithLatency(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	l := newLimiter(t, guard.LimiterOptions{Max: 40, Adaptive: true, Clock: clk})
	attempt := func(latency time.Duration, o guard.Outcome) {
		t.Helper()
		var c guard.Call
		c.Start(nil, nil)
		c.Limit(l)
		defer c.Abandon()
		require.Equal(t, guard.NotRefused, c.Admit(1))
		clk.Add(latency)
		if o == guard.OutcomeSuccess {
			c.Succeeded()
		} else {
			c.Attempted(o)
		}
		c.End()
	}
	for range 500 {
		attempt(10*time.Millisecond, guard.OutcomeSuccess)
	}
	assert.Equal(t, 40, l.Stats().Limit, "an unloaded downstream: the limit stays at Max")

	for range 500 {
		attempt(time.Hour, guard.OutcomeNone)
	}
	assert.Equal(t, 40, l.Stats().Limit, "canceled attempts moved the limit")

	// Ten times the latency: queueing downstream. Fifteen windows of 25
	// take the limit to 40·0.9^15 plus the growth term, about 16.
	for range 15 * 25 {
		attempt(100*time.Millisecond, guard.OutcomeSuccess)
	}
	shrunk := l.Stats().Limit
	assert.Less(t, shrunk, 20, "limit after the latency grew tenfold")
	assert.Greater(t, shrunk, 1)

	// Failures worth a retry take a tenth off, a window at a time.
	for range 25 {
		attempt(10*time.Millisecond, guard.OutcomeFailure)
	}
	assert.InDelta(t, float64(shrunk)*0.9, l.Stats().Limit, 1, "limit after a window of failures")
}

// Admit does not wait: a full Limiter refuses at once even with room in
// its queue, and the refusal counts. AdmitContext waits.
func TestCallAdmitDoesNotQueue(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, guard.LimiterOptions{Max: 1, QueueTimeout: time.Second})
		var a, b guard.Call
		a.Start(nil, nil)
		a.Limit(l)
		require.Equal(t, guard.NotRefused, a.Admit(1))
		b.Start(nil, nil)
		b.Limit(l)
		start := time.Now()
		assert.Equal(t, guard.RefusedByLimiter, b.Admit(1))
		assert.Zero(t, time.Since(start))
		assert.Equal(t, uint64(1), l.Stats().Refused)

		go func() {
			time.Sleep(300 * time.Millisecond)
			a.Succeeded()
			a.End()
		}()
		assert.Equal(t, guard.NotRefused, b.AdmitContext(t.Context(), 1))
		assert.Equal(t, 300*time.Millisecond, time.Since(start), "waited for the slot")
		b.Attempted(guard.OutcomeFailure)
		b.End()
		assert.Equal(t, guard.LimiterStats{Limit: 1, Admitted: 2, Refused: 1}, l.Stats())
	})
}

// An attempt the Throttle sheds after the Limiter gave it a slot is not
// sent: the slot goes back at once, not at End (a Hedge goes on after a
// hedge is shed).
func TestLimiterThrottleRefusalGivesSlotBack(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	th, err := guard.NewThrottle(guard.ThrottleOptions{Clock: clk})
	require.NoError(t, err)
	th.CountForTest(clk.Now(), 1000, 0) // rejecting almost everything
	l := newLimiter(t, guard.LimiterOptions{Max: 1, MaxQueue: -1})
	shed := 0
	for range 50 {
		var c guard.Call
		c.Start(th, nil)
		c.Limit(l)
		switch r := c.Admit(1); r {
		case guard.RefusedByThrottle:
			shed++
			require.Zero(t, l.Stats().InFlight, "a shed attempt kept its slot until End")
		case guard.NotRefused:
			c.Succeeded()
		default:
			require.Failf(t, "refused", "Admit = %v: a shed attempt kept its slot", r)
		}
		c.End()
	}
	assert.Positive(t, shed)
	assert.Zero(t, l.Stats().InFlight)
}

// Each copy of a hedged call holds a slot while it runs; a hedge that
// finds none is not started, and the losers' slots come back when the
// call returns.
func TestLimiterHedge(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, guard.LimiterOptions{Max: 2, MaxQueue: -1})
		h := &retry.Hedger{Delay: 10 * time.Millisecond, MaxInFlight: 3, MaxFraction: 1}
		var f flight
		var started atomic.Int64
		tr, err := retry.Hedge(t.Context(), h, func(ctx context.Context) error {
			f.enter()
			defer f.leave()
			n := started.Add(1)
			select {
			case <-time.After(time.Duration(4-n) * 50 * time.Millisecond):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}, retry.Policy{Limiter: l})
		require.NoError(t, err)
		assert.Equal(t, int64(2), started.Load(), "copies started: the third had no slot")
		assert.Equal(t, int64(2), f.peak.Load())
		assert.Equal(t, 2, tr.Attempts())
		synctest.Wait()
		assert.Equal(t, 0, l.Stats().InFlight, "slots held after the call")
	})
}

// Limiters keeps one Limiter per key: one host's full slots do not refuse
// the calls to another.
func TestLimitersPerKey(t *testing.T) {
	t.Parallel()
	ls, err := guard.NewLimiters(guard.LimiterOptions{Max: 1, MaxQueue: -1}, 2)
	require.NoError(t, err)
	a, b := ls.Get("a"), ls.Get("b")
	require.NotSame(t, a, b)
	require.Same(t, a, ls.Get("a"))
	k := guard.Keyed{Limiters: ls}
	release := make(chan struct{})
	held := hold(t, retry.Policy{}.WithGuards(&k, "a").Limiter, release)
	_, err = retry.Do(t.Context(), func(context.Context) error { return nil }, retry.Policy{}.WithGuards(&k, "a"))
	require.ErrorIs(t, err, retry.ErrLimited)
	_, err = retry.Do(t.Context(), func(context.Context) error { return nil }, retry.Policy{}.WithGuards(&k, "b"))
	require.NoError(t, err)
	// Full, the set forgets an idle Limiter, never the busy one.
	ls.Get("c")
	require.Same(t, a, ls.Get("a"), "forgot a Limiter with an attempt in flight")
	close(release)
	require.NoError(t, <-held)
	var keys []string
	for key := range ls.All() {
		keys = append(keys, key)
	}
	assert.Equal(t, []string{"a", "c"}, keys)
	// A Policy's own Limiter wins over the set's.
	own := new(guard.Limiter)
	assert.Same(t, own, retry.Policy{Limiter: own}.WithGuards(&k, "a").Limiter)
	var zero guard.Limiters
	assert.NotNil(t, zero.Get("x"))
}
