package guard_test

import (
	"context"
	"errors"
	"math"
	"sync"
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

func TestNewBreakerRejectsBadOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o    guard.BreakerOptions
		want string
	}{
		{guard.BreakerOptions{FailureRatio: 1.5}, "FailureRatio 1.5"},
		{guard.BreakerOptions{FailureRatio: -0.5}, "FailureRatio -0.5"},
		{guard.BreakerOptions{MinCalls: -1}, "MinCalls -1"},
		{guard.BreakerOptions{Window: -time.Second}, "Window -1s"},
		{guard.BreakerOptions{Window: time.Millisecond}, "Window 1ms is below"},
		{guard.BreakerOptions{OpenFor: -time.Second}, "OpenFor -1s"},
		{guard.BreakerOptions{Probes: -1}, "Probes -1"},
	} {
		t.Run(tc.want, func(t *testing.T) {
			b, err := guard.NewBreaker(tc.o)
			require.ErrorIs(t, err, guard.ErrInvalidOptions)
			assert.ErrorContains(t, err, tc.want)
			assert.Nil(t, b)
		})
	}
	b, err := guard.NewBreaker(guard.BreakerOptions{})
	require.NoError(t, err)
	assert.Equal(t, guard.BreakerClosed, b.State())
}

func TestBreakerStateString(t *testing.T) {
	t.Parallel()
	for s, want := range map[guard.BreakerState]string{
		guard.BreakerClosed: "closed", guard.BreakerOpen: "open", guard.BreakerHalfOpen: "half-open", 7: "BreakerState(7)",
	} {
		assert.Equal(t, want, s.String())
	}
}

// breakerCase is a small breaker on a fake clock that moves only when the
// test moves it: 4 calls at least, half of them failed, open for 10s, 2
// probes. Its policy makes one attempt per call.
func breakerCase(t *testing.T, o guard.BreakerOptions) (*guard.Breaker, *retrytest.Clock, retry.Policy) {
	t.Helper()
	clk := retrytest.NewClock()
	o.Clock = clk
	if o.MinCalls == 0 {
		o.MinCalls = 4
	}
	if o.OpenFor == 0 {
		o.OpenFor = 10 * time.Second
	}
	if o.Probes == 0 {
		o.Probes = 2
	}
	b, err := guard.NewBreaker(o)
	require.NoError(t, err)
	return b, clk, retry.Policy{MaxAttempts: 1, Breaker: b, Clock: clk}
}

var (
	succeedOp = func(context.Context) error { return nil }
	failOp    = func(context.Context) error { return errUnavailable }
)

// open trips b with failed calls.
func open(t *testing.T, b *guard.Breaker, p retry.Policy, calls int) {
	t.Helper()
	for range calls {
		_, _ = retry.Do(context.Background(), failOp, p)
	}
	require.Equal(t, guard.BreakerOpen, b.State())
}

func TestBreakerLifecycle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		probes []error // the half-open round's outcomes
		want   guard.BreakerState
	}{
		{"all probes succeed: closed", []error{nil, nil}, guard.BreakerClosed},
		{"one probe of two fails: open", []error{nil, errUnavailable}, guard.BreakerOpen},
		{"first probe fails: open", []error{errUnavailable}, guard.BreakerOpen},
		{"a 400 is a success", []error{retry.Permanent(errBadRequest), nil}, guard.BreakerClosed},
		{"one probe succeeded, one still out: half-open", []error{nil}, guard.BreakerHalfOpen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, clk, p := breakerCase(t, guard.BreakerOptions{})
			for range 3 {
				_, _ = retry.Do(context.Background(), failOp, p)
			}
			require.Equal(t, guard.BreakerClosed, b.State(), "below MinCalls")
			open(t, b, p, 1)

			var sent atomic.Int64
			tr, err := retry.Do(context.Background(), outage(&sent), p)
			require.ErrorIs(t, err, retry.ErrBreakerOpen)
			require.ErrorIs(t, err, retry.ErrGaveUp)
			require.EqualError(t, err, "retry: circuit breaker open before the first attempt")
			assert.Equal(t, retry.StopBreakerOpen, tr.Stop())
			assert.Zero(t, sent.Load(), "an open breaker sends nothing")
			assert.Zero(t, clk.Pending(), "a refused call does not wait")

			clk.Add(10*time.Second - 1)
			assert.Equal(t, guard.BreakerOpen, b.State())
			clk.Add(1)
			assert.Equal(t, guard.BreakerHalfOpen, b.State(), "half-open on time, with no call")

			for i, perr := range tc.probes {
				_, err := retry.Do(context.Background(), func(context.Context) error { return perr }, p)
				require.ErrorIs(t, err, perr, "probe %d", i+1)
			}
			assert.Equal(t, tc.want, b.State())
		})
	}
}

func TestBreakerHalfOpenAdmitsOnlyProbes(t *testing.T) {
	t.Parallel()
	b, clk, p := breakerCase(t, guard.BreakerOptions{})
	open(t, b, p, 4)
	clk.Add(10 * time.Second)
	release, sent := make(chan struct{}), make(chan struct{}, 2)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			_, _ = retry.Do(context.Background(), func(context.Context) error {
				sent <- struct{}{}
				<-release
				return nil
			}, p)
		})
	}
	recv(t, sent, "probe 1")
	recv(t, sent, "probe 2")
	_, err := retry.Do(context.Background(), succeedOp, p)
	require.ErrorIs(t, err, retry.ErrBreakerOpen, "a third call while 2 probes are out")
	assert.Equal(t, guard.BreakerHalfOpen, b.State())
	close(release)
	wg.Wait()
	assert.Equal(t, guard.BreakerClosed, b.State())
}

func TestBreakerCountsALogicalCallOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		countAttempts bool
		want          guard.BreakerState
	}{
		{"calls", false, guard.BreakerClosed}, // 20 calls, all succeeded in the end
		{"attempts", true, guard.BreakerOpen}, // 60 attempts, 40 failed
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, clk, p := breakerCase(t, guard.BreakerOptions{CountAttempts: tc.countAttempts})
			p.MaxAttempts = 3
			p.Clock = retrytest.NewAutoClock()
			_ = clk
			for range 20 {
				n := 0
				_, _ = retry.Do(context.Background(), func(context.Context) error {
					if n++; n < 3 {
						return errUnavailable
					}
					return nil
				}, p)
			}
			assert.Equal(t, tc.want, b.State())
		})
	}
}

func TestBreakerRetryNeverTakesAProbe(t *testing.T) {
	t.Parallel()
	b, clk, p := breakerCase(t, guard.BreakerOptions{Probes: 1})
	open(t, b, p, 4)
	clk.Add(10 * time.Second)
	p.MaxAttempts = 3
	p.Clock = retrytest.NewAutoClock() // the breaker keeps its own, still
	waited := false
	p.OnRetry = func(context.Context, retry.Attempt, time.Duration) { waited = true }
	var sent atomic.Int64
	tr, err := retry.Do(context.Background(), outage(&sent), p)
	assert.False(t, waited, "the retry was refused after its wait, not before")
	assert.Equal(t, int64(1), sent.Load(), "a half-open breaker refuses the probe's retries")
	assert.Equal(t, retry.StopBreakerOpen, tr.Stop())
	require.ErrorIs(t, err, retry.ErrBreakerOpen)
	require.ErrorIs(t, err, errUnavailable, "the probe's error is kept")
	assert.EqualError(t, err, "retry: circuit breaker open after 1 attempt: "+errUnavailable.Error())
	assert.Equal(t, guard.BreakerOpen, b.State(), "the failed probe reopened it")
}

func TestBreakerRefusesRetriesOnceOpen(t *testing.T) {
	t.Parallel()
	// Calls that began while the breaker was closed stop retrying when it
	// opens.
	b, _, p := breakerCase(t, guard.BreakerOptions{})
	p.MaxAttempts, p.Clock = 5, retrytest.NewAutoClock()
	var sent atomic.Int64
	for range 4 {
		_, _ = retry.Do(context.Background(), outage(&sent), p)
	}
	// The first call opened it: 4 failed calls needed (MinCalls), each
	// trying 5 times only while the breaker was closed.
	assert.Equal(t, guard.BreakerOpen, b.State())
	assert.Equal(t, int64(5*4), sent.Load())
	_, err := retry.Do(context.Background(), outage(&sent), p)
	require.ErrorIs(t, err, retry.ErrBreakerOpen)
	assert.Equal(t, int64(20), sent.Load())
}

func TestBreakerCanceledProbeIsGivenBack(t *testing.T) {
	t.Parallel()
	b, clk, p := breakerCase(t, guard.BreakerOptions{Probes: 1})
	open(t, b, p, 4)
	clk.Add(10 * time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := retry.Do(ctx, func(context.Context) error { cancel(); return context.Canceled }, p)
	require.ErrorIs(t, err, context.Canceled)
	_, err = retry.Do(context.Background(), succeedOp, p)
	require.NoError(t, err, "the canceled probe's slot went back")
	assert.Equal(t, guard.BreakerClosed, b.State())
}

func TestBreakerPanickedProbeIsGivenBack(t *testing.T) {
	t.Parallel()
	b, clk, p := breakerCase(t, guard.BreakerOptions{Probes: 1})
	open(t, b, p, 4)
	clk.Add(10 * time.Second)
	require.Panics(t, func() {
		_, _ = retry.Do(context.Background(), func(context.Context) error { panic("boom") }, p)
	})
	_, err := retry.Do(context.Background(), succeedOp, p)
	require.NoError(t, err)
	assert.Equal(t, guard.BreakerClosed, b.State())
}

func TestBreakerProbeCountIsExactUnderConcurrency(t *testing.T) {
	t.Parallel()
	for _, probes := range []int{1, 5} {
		b, clk, p := breakerCase(t, guard.BreakerOptions{Probes: probes})
		open(t, b, p, 4)
		clk.Add(10 * time.Second)
		p.MaxAttempts = 3
		// Each call either is sent, and blocks until released, or is
		// refused: 1,000 events in all, whatever the breaker does.
		release := make(chan struct{})
		sent, refused := make(chan struct{}, 1000), make(chan struct{}, 1000)
		var ready, wg sync.WaitGroup
		ready.Add(1)
		for range 1000 {
			wg.Go(func() {
				ready.Wait()
				_, err := retry.Do(context.Background(), func(context.Context) error {
					sent <- struct{}{}
					<-release
					return nil
				}, p)
				if errors.Is(err, retry.ErrBreakerOpen) {
					refused <- struct{}{}
				}
			})
		}
		ready.Done()
		nSent, nRefused := countOutcomes(t, 1000, sent, refused)
		close(release)
		wg.Wait()
		assert.Equal(t, probes, nSent, "1,000 calls racing a half-open breaker with %d probes", probes)
		assert.Equal(t, 1000-probes, nRefused)
		assert.Equal(t, guard.BreakerClosed, b.State())
	}
}

func TestBreakerErrorIsNotRetriedByAnOuterDo(t *testing.T) {
	t.Parallel()
	for _, nested := range []bool{false, true} {
		b, _, inner := breakerCase(t, guard.BreakerOptions{})
		open(t, b, inner, 4)
		inner.RetryNested = nested
		var outerCalls atomic.Int64
		tr, err := retry.Do(context.Background(), func(ctx context.Context) error {
			outerCalls.Add(1)
			_, err := retry.Do(ctx, failOp, inner)
			return err
		}, retry.Policy{Clock: retrytest.NewAutoClock()}) // the DefaultClassifier
		require.ErrorIs(t, err, retry.ErrBreakerOpen)
		assert.Equal(t, int64(1), outerCalls.Load(), "RetryNested %v: the outer Do retried a breaker's refusal", nested)
		assert.Equal(t, retry.StopNotRetryable, tr.Stop())
		assert.Equal(t, "permanent", tr.Last().Reason)
	}
}

func TestBreakerHedgeNeverTakesAProbe(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, OpenFor: time.Second, Probes: 1})
		require.NoError(t, err)
		h := &retry.Hedger{Delay: 10 * time.Millisecond, MaxFraction: 1}
		p := retry.Policy{Breaker: b}
		_, err = retry.Hedge(context.Background(), h, failOp, retry.Policy{Breaker: b, MaxAttempts: 1})
		require.ErrorIs(t, err, errUnavailable)
		require.Equal(t, guard.BreakerOpen, b.State())
		time.Sleep(time.Second)
		require.Equal(t, guard.BreakerHalfOpen, b.State())

		var sent atomic.Int64
		tr, err := retry.Hedge(context.Background(), h, func(ctx context.Context) error {
			sent.Add(1)
			time.Sleep(100 * time.Millisecond) // slow: a hedge would start at 10ms
			return nil
		}, p)
		require.NoError(t, err)
		assert.Equal(t, int64(1), sent.Load(), "a hedge took a half-open breaker's probe")
		assert.Equal(t, 1, tr.Attempts())
		assert.Equal(t, guard.BreakerClosed, b.State())

		// Closed, the same call is hedged.
		sent.Store(0)
		tr, err = retry.Hedge(context.Background(), h, func(ctx context.Context) error {
			sent.Add(1)
			select {
			case <-time.After(100 * time.Millisecond):
			case <-ctx.Done():
			}
			return nil
		}, p)
		require.NoError(t, err)
		assert.Equal(t, 2, tr.Attempts())
	})
}

func TestBreakerOpenRefusesHedge(t *testing.T) {
	t.Parallel()
	b, _, p := breakerCase(t, guard.BreakerOptions{})
	open(t, b, p, 4)
	var sent atomic.Int64
	tr, err := retry.Hedge(context.Background(), &retry.Hedger{}, outage(&sent), p)
	require.ErrorIs(t, err, retry.ErrBreakerOpen)
	assert.Equal(t, retry.StopBreakerOpen, tr.Stop())
	assert.Zero(t, sent.Load())
}

// The zero Breaker and the zero Throttle work, with the defaults.
func TestZeroBreakerAndThrottle(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b, th := &guard.Breaker{}, &guard.Throttle{}
		p := retry.Policy{MaxAttempts: 1, Breaker: b, Throttle: th}
		for range 20 { // MinCalls
			_, err := retry.Do(context.Background(), failOp, p)
			require.ErrorIs(t, err, errUnavailable)
		}
		assert.Equal(t, guard.BreakerOpen, b.State())
		assert.InDelta(t, 0.9, th.RejectProbability(), 1e-12)
		time.Sleep(10 * time.Second) // OpenFor
		assert.Equal(t, guard.BreakerHalfOpen, b.State())
		for range 3 { // Probes
			_, err := retry.Do(context.Background(), succeedOp, retry.Policy{Breaker: b})
			require.NoError(t, err)
		}
		assert.Equal(t, guard.BreakerClosed, b.State())
	})
}

// An OpenFor of Go's "forever" keeps the breaker open: its end saturates
// rather than wrap into the past, which made it half-open at once.
func TestBreakerOpenForeverStaysOpen(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	br, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, FailureRatio: 1, OpenFor: time.Duration(math.MaxInt64), Clock: clk})
	require.NoError(t, err)
	_, _ = retry.Do(context.Background(), func(context.Context) error { return errUnavailable }, retry.Policy{MaxAttempts: 1, Breaker: br, Clock: clk})
	assert.Equal(t, guard.BreakerOpen, br.State())
	clk.Add(100 * 365 * 24 * time.Hour)
	assert.Equal(t, guard.BreakerOpen, br.State(), "a century later, still open")
}

// OpenFor runs from when the failure that trips the breaker is recorded,
// not from when its attempt began: with a Throttle on the same clock (whose
// time of the attempt's start the breaker reuses), a 15 s attempt and an
// OpenFor of 10 s left the breaker half-open the moment it opened.
func TestBreakerOpenForRunsFromTheFailure(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	br, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, FailureRatio: 1, OpenFor: 10 * time.Second, Clock: clk})
	require.NoError(t, err)
	th, err := guard.NewThrottle(guard.ThrottleOptions{Clock: clk})
	require.NoError(t, err)
	slow := func(context.Context) error {
		clk.Add(15 * time.Second) // the attempt takes 15 s
		return errUnavailable
	}
	_, _ = retry.Do(context.Background(), slow, retry.Policy{MaxAttempts: 1, Breaker: br, Throttle: th, Clock: clk})
	assert.Equal(t, guard.BreakerOpen, br.State(), "open for OpenFor from the failure")
	clk.Add(10 * time.Second)
	assert.Equal(t, guard.BreakerHalfOpen, br.State())
}
