package main

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The targets of the guarded scenarios. Every run repeats from its seed
// (the Throttle draws from a seeded ThrottleOptions.Rand), but the bounds
// on the Throttle's rows leave room for a few standard deviations, so that
// another seed does not fail them by chance.

func outageRows(t *testing.T, controls ...control) map[string]outageRow {
	t.Helper()
	rows, _, err := simulateOutage(outageLoad(1), controls, 1)
	require.NoError(t, err)
	m := make(map[string]outageRow)
	for _, r := range rows {
		t.Logf("%s: %.4f attempts per call, recovered %v after %v (target %v)", r.Control.Name, r.PerCall, r.Recovered, r.Recovery, r.Target)
		m[r.Control.Name] = r
	}
	return m
}

// In a 60 s outage, a Budget stops the retries but every call still sends
// its first attempt; a Breaker sends almost nothing; a Throttle sends its
// floor of 1 − MaxReject. With the defaults that floor is 0.1 and the first
// MinRequests add a little; MaxReject 0.91 takes the outage under 0.1.
// Every row recovers within its target once the backend heals.
func TestHardOutageTargets(t *testing.T) {
	t.Parallel()
	rows := outageRows(t, noControl, budgetOnly, ratioOnly, budgetThrottle, budgetBreaker, budgetThrottleTight)

	assert.InDelta(t, 3, rows[noControl.Name].PerCall, 0.05, "no control: every call sends its 3 attempts")
	assert.InDelta(t, 1, rows[budgetOnly.Name].PerCall, 0.01, "a Budget alone: about one attempt per call")
	// 100 calls/s: 20% of them and 10 a second may be retried, 1.3 attempts a call.
	assert.InDelta(t, 1.3, rows[ratioOnly.Name].PerCall, 0.03, "a ratio Budget alone: Ratio and the floor")
	assert.LessOrEqual(t, rows[budgetBreaker.Name].PerCall, 0.1, "Budget + Breaker")
	assert.LessOrEqual(t, rows[budgetThrottleTight.Name].PerCall, 0.1, "Budget + Throttle with MaxReject 0.91")
	assert.InDelta(t, 0.1, rows[budgetThrottle.Name].PerCall, 0.03, "Budget + Throttle: 1 − MaxReject")

	for _, c := range []control{budgetThrottle, budgetBreaker, budgetThrottleTight} {
		r := rows[c.Name]
		if assert.True(t, r.Recovered, "%s never recovered", c.Name) {
			assert.LessOrEqual(t, r.Recovery, r.Target, "%s: recovery", c.Name)
		}
	}
}

// Offered three times its capacity, the backend still serves about all it
// can, and a Throttle sends about one rejected attempt per served one (K =
// 2), where a Budget alone sends two.
func TestOverloadTargets(t *testing.T) {
	t.Parallel()
	rows, _, err := simulateOverload(overloadLoad(1), []control{budgetOnly, budgetThrottle}, 1)
	require.NoError(t, err)
	budget, throttle := rows[0], rows[1]
	t.Logf("Budget: %+v", budget)
	t.Logf("Throttle: %+v", throttle)
	assert.Greater(t, budget.RejectedPerAccepted, 1.5, "without the Throttle the scenario is an overload")
	assert.GreaterOrEqual(t, throttle.Accepted, 0.95, "the backend serves at least 0.95 C")
	assert.LessOrEqual(t, throttle.RejectedPerAccepted, 1.1, "at most 1.1 rejected attempts per served one")
}

// The other libraries' constants, fed to our Throttle, also shed the
// outage, and in overload send K−1 rejected attempts per served one, as
// the SRE formula says (requests ≈ K·accepts).
func TestComparedConstants(t *testing.T) {
	t.Parallel()
	compared := comparedControls()
	outage, _, err := simulateOutage(outageLoad(1), compared, 1)
	require.NoError(t, err)
	overload, _, err := simulateOverload(overloadLoad(1), compared, 1)
	require.NoError(t, err)
	for i, c := range compared {
		t.Logf("%s: outage %.4f per call; overload %+v", c.Name, outage[i].PerCall, overload[i])
		assert.LessOrEqual(t, outage[i].PerCall, 0.12, "%s: the outage is shed", c.Name)
		assert.InDelta(t, c.Throttle.K-1, overload[i].RejectedPerAccepted, 0.1, "%s: rejected per served", c.Name)
	}
}

// At normal load with 5% of attempts failing, nothing is shed: the
// Throttle's reject probability stays 0 and the Breaker never leaves
// closed.
func TestLightFailureNeverSheds(t *testing.T) {
	t.Parallel()
	rows, err := simulateLight(lightLoad(1))
	require.NoError(t, err)
	require.Len(t, rows, 2)
	for _, r := range rows {
		t.Logf("%+v", r)
		require.Positive(t, r.Calls)
		assert.Zero(t, r.Throttled, "%s: throttled calls", r.Control.Name)
		assert.Zero(t, r.MaxRejectP, "%s: reject probability", r.Control.Name)
		assert.Zero(t, r.BreakerOpen, "%s: calls the breaker refused", r.Control.Name)
		assert.False(t, r.Opened, "%s: the breaker opened", r.Control.Name)
		assert.Less(t, r.Calls-r.Succeeded, r.Calls/100, "%s: retries absorb the failures", r.Control.Name)
	}
}

// A total outage with 3 attempts per call: nothing is sent while the
// breaker is open, and each half-open round sends exactly Probes attempts,
// all first attempts, not Probes × 3.
func TestBreakerRetriesNeverTakeProbes(t *testing.T) {
	t.Parallel()
	res, err := simulateProbes(probeLoad(1))
	require.NoError(t, err)
	t.Logf("%+v", res)
	assert.Positive(t, res.Closed, "attempts before the breaker opened")
	assert.Zero(t, res.WhileOpen, "attempts sent while open")
	assert.Zero(t, res.Retries, "retries sent half-open")
	require.GreaterOrEqual(t, len(res.Rounds), 10, "half-open rounds in 2 minutes of 10 s OpenFor")
	for i, n := range res.Rounds {
		assert.Equal(t, res.Probes, n, "attempts in half-open round %d", i+1)
	}
}

// 1,000 goroutines race for a half-open breaker's probes, on real
// goroutines, and exactly Probes calls get through; when they succeed the
// breaker closes.
func TestBreakerHalfOpenRaceAdmitsExactlyProbes(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	br, err := guard.NewBreaker(guard.BreakerOptions{Clock: clk})
	require.NoError(t, err)
	p := retry.Policy{MaxAttempts: 3, Clock: clk, Breaker: br}
	fail := retry.Policy{MaxAttempts: 1, Clock: clk, Breaker: br}
	for range 20 {
		_, err := retry.Do(context.Background(), func(context.Context) error { return errUnavailable }, fail)
		require.ErrorIs(t, err, errUnavailable)
	}
	require.Equal(t, guard.BreakerOpen, br.State())
	clk.Add(10 * time.Second)
	require.Equal(t, guard.BreakerHalfOpen, br.State())

	const callers = 1000
	var admitted, refused atomic.Int64
	var decided, done sync.WaitGroup
	release := make(chan struct{})
	decided.Add(callers)
	done.Add(callers)
	start := make(chan struct{})
	for range callers {
		go func() {
			defer done.Done()
			<-start
			_, err := retry.Do(context.Background(), func(context.Context) error {
				admitted.Add(1)
				decided.Done()
				<-release
				return nil
			}, p)
			if errors.Is(err, retry.ErrBreakerOpen) {
				refused.Add(1)
				decided.Done()
			}
		}()
	}
	close(start)
	decided.Wait()
	assert.Equal(t, int64(3), admitted.Load(), "probes admitted")
	assert.Equal(t, int64(callers-3), refused.Load(), "calls refused")
	close(release)
	done.Wait()
	assert.Equal(t, guard.BreakerClosed, br.State(), "all probes succeeded")
}

// A failing origin's requests, through retryhttp's sampled Logger: at most
// 20 lines in the first minute, at most 12 (and at least one summary) in
// each minute after, and every event written or counted in a summary. The
// test runs 500 requests a second, where the command runs 10,000 (a
// minute of it takes 10 s, 2 minutes under -race): which lines are
// written does not depend on the rate once a window holds more than First.
func TestLogStormStaysQuiet(t *testing.T) {
	t.Parallel()
	c := defaultLogStorm(500)
	res, err := simulateLogs(c)
	require.NoError(t, err)
	t.Logf("%+v", res)
	assert.Equal(t, 60*500+240*5, res.Requests)
	assert.LessOrEqual(t, res.PerMin[0], 20, "lines in the first minute")
	for m := 1; m < 5; m++ {
		assert.LessOrEqual(t, res.PerMin[m], 12, "lines in minute %d", m+1)
		assert.Positive(t, res.PerMin[m], "a summary in minute %d", m+1)
	}
	assert.Equal(t, res.Events, res.Written+res.Suppressed, "every event written or counted once")
}

func TestLogStormRejectsBadInput(t *testing.T) {
	t.Parallel()
	for _, c := range []logStorm{{}, {Rate: 1, Trickle: 1, Burst: time.Minute, Length: time.Second, Attempts: 1}} {
		_, err := simulateLogs(c)
		assert.Error(t, err, "%+v", c)
	}
}

func TestGuardedRejectsBadLoad(t *testing.T) {
	t.Parallel()
	good := outageLoad(1)
	for name, mod := range map[string]func(*load){
		"clients":  func(l *load) { l.Clients = 0 },
		"every":    func(l *load) { l.Every = 0 },
		"attempts": func(l *load) { l.Attempts = 0 },
		"capacity": func(l *load) { l.Capacity, l.Slot = 5, 0 },
		"fail":     func(l *load) { l.FailRatio = 2 },
		"latency":  func(l *load) { l.Latency = -1 },
	} {
		l := good
		mod(&l)
		_, err := runGuarded(l, noControl, false)
		assert.Error(t, err, name)
	}
	_, err := runGuarded(good, control{Name: "bad", Throttle: &guard.ThrottleOptions{K: 0.5}}, false)
	assert.ErrorIs(t, err, guard.ErrInvalidOptions)
}

// The same seed gives the same run, where no Throttle draws.
func TestGuardedIsDeterministic(t *testing.T) {
	t.Parallel()
	l := probeLoad(3)
	l.Length, l.DownUntil = 30*time.Second, 15*time.Second
	for _, c := range []control{budgetBreaker, budgetThrottle} {
		a, err := runGuarded(l, c, true)
		require.NoError(t, err)
		b, err := runGuarded(l, c, true)
		require.NoError(t, err)
		assert.Equal(t, a.Buckets, b.Buckets, c.Name)
		assert.Equal(t, a.Arrivals, b.Arrivals, c.Name)
	}
}
