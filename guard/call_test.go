package guard_test

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

// beginCtx runs hook the first time Do asks it whether it has ended: after
// Do saw the breaker closed and chose its path, before the first attempt.
type beginCtx struct {
	context.Context
	once sync.Once
	hook func()
}

func (c *beginCtx) Err() error {
	c.once.Do(c.hook)
	return c.Context.Err()
}

// A call that began while the breaker was closed and finds it half-open at
// its first attempt takes a probe, as a call begun then would; and finds
// it refused if the breaker is still open.
func TestBreakerLeftClosedAsACallBegins(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		wait  time.Duration // after the breaker opens, before the first attempt
		want  error
		stop  retry.StopReason
		sent  int64
		state guard.BreakerState
	}{
		{"half-open: the call probes", 10 * time.Second, nil, retry.StopSuccess, 1, guard.BreakerClosed},
		{"open: the call is refused", 0, retry.ErrBreakerOpen, retry.StopBreakerOpen, 0, guard.BreakerOpen},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b, clk, p := breakerCase(t, guard.BreakerOptions{Probes: 1})
			th, err := guard.NewThrottle(guard.ThrottleOptions{Clock: clk})
			require.NoError(t, err)
			p.Throttle = th
			ctx := &beginCtx{Context: context.Background(), hook: func() {
				open(t, b, p, 4)
				clk.Add(tc.wait)
			}}
			var sent atomic.Int64
			tr, err := retry.Do(ctx, func(context.Context) error { sent.Add(1); return nil }, p)
			if tc.want == nil {
				require.NoError(t, err)
			} else {
				require.ErrorIs(t, err, tc.want)
			}
			assert.Equal(t, tc.stop, tr.Stop())
			assert.Equal(t, tc.sent, sent.Load())
			assert.Equal(t, int(tc.sent), tr.Attempts(), "the start refused for want of a probe is not in the Trace")
			assert.Equal(t, tc.state, b.State())
		})
	}
}

// Calls that began while the breaker was closed and race for its probes
// once it is half-open take exactly Probes of them between them.
func TestBreakerLeftClosedProbeCountIsExact(t *testing.T) {
	t.Parallel()
	const calls, probes = 200, 3
	b, clk, once := breakerCase(t, guard.BreakerOptions{Probes: probes})
	p := once
	p.MaxAttempts = 3 // a retry never takes a probe
	var begun, wg sync.WaitGroup
	begun.Add(calls)
	trip := make(chan struct{})
	release := make(chan struct{})
	// Each call is either sent, and blocks until released, or refused.
	sent, refused := make(chan struct{}, calls), make(chan struct{}, calls)
	for range calls {
		ctx := &beginCtx{Context: context.Background(), hook: func() { begun.Done(); <-trip }}
		wg.Go(func() {
			_, err := retry.Do(ctx, func(context.Context) error {
				sent <- struct{}{}
				<-release
				return nil
			}, p)
			if errors.Is(err, retry.ErrBreakerOpen) {
				refused <- struct{}{}
			}
		})
	}
	begun.Wait() // every call saw the breaker closed
	open(t, b, once, 4)
	clk.Add(10 * time.Second)
	close(trip)
	nSent, nRefused := countOutcomes(t, calls, sent, refused)
	close(release)
	wg.Wait()
	assert.Equal(t, probes, nSent)
	assert.Equal(t, calls-probes, nRefused)
	assert.Equal(t, guard.BreakerClosed, b.State())
}

// A call that panics counts as nothing for the breaker, even after a
// failed attempt: it never ended, and neither failed nor succeeded (as a
// call its caller cancels). A panicked probe is given back
// (TestBreakerPanickedProbeIsGivenBack).
func TestBreakerPanickedCallCountsAsNothing(t *testing.T) {
	t.Parallel()
	b, _, p := breakerCase(t, guard.BreakerOptions{})
	p.MaxAttempts = 2
	p.OnRetry = func(context.Context, retry.Attempt, time.Duration) { panic("boom") }
	for range 8 {
		require.Panics(t, func() { _, _ = retry.Do(context.Background(), failOp, p) })
	}
	assert.Equal(t, guard.BreakerClosed, b.State(), "8 calls that panicked after a failure")
	p.OnRetry = nil
	p.MaxAttempts = 1
	open(t, b, p, 4)
}

// A Classifier of an integration's own can say "failed, but not retried"
// with Decision.Failed (a write not safe to repeat that got a 503): the
// call is not retried, and the Breaker counts it as the failure it was,
// so that a service failing every write still opens its breaker. Without
// Failed, such a call counts as a success.
func TestDecisionFailedCountsForTheBreaker(t *testing.T) {
	t.Parallel()
	for _, failed := range []bool{true, false} {
		br, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 3, FailureRatio: 1})
		require.NoError(t, err)
		p := retry.Policy{Breaker: br, Classifier: func(context.Context, retry.Attempt) retry.Decision {
			return retry.Decision{Reason: "503, not safe to repeat", Failed: failed}
		}}
		for range 3 {
			tr, err := retry.Do(context.Background(), func(context.Context) error { return errUnavailable }, p)
			require.ErrorIs(t, err, errUnavailable)
			assert.Equal(t, 1, tr.Attempts(), "not retried")
		}
		want := guard.BreakerClosed
		if failed {
			want = guard.BreakerOpen
		}
		assert.Equal(t, want, br.State(), "Failed %v", failed)
	}
}

// One owner for the guards, as for the Budget: a Do nested in another's op
// with the same Breaker does not consult it again. The outer call takes
// the half-open probe and the inner one sends it; the probe's failure
// opens the breaker again. (The inner Do used to be refused the probe
// the outer one held, and the outer counted that refusal as a success:
// the breaker closed with nothing sent to the service.) While closed, a
// failure counts once, not twice.
func TestNestedDoLeavesTheGuardsToItsOwner(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	br, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, FailureRatio: 1, OpenFor: time.Minute, Probes: 1, Clock: clk})
	require.NoError(t, err)
	p := retry.Policy{MaxAttempts: 1, Breaker: br, Clock: clk}
	outer := p
	outer.MaxAttempts = 2 // a loop: it marks the ctx for the Do inside
	outer.Classifier = func(context.Context, retry.Attempt) retry.Decision {
		return retry.Decision{Reason: "once", Failed: true}
	}
	sent := 0
	call := func() error {
		_, err := retry.Do(context.Background(), func(ctx context.Context) error {
			_, err := retry.Do(ctx, func(context.Context) error { sent++; return errUnavailable }, p)
			return err
		}, outer)
		return err
	}
	require.ErrorIs(t, call(), errUnavailable)
	assert.Equal(t, 1, sent)
	assert.Equal(t, guard.BreakerOpen, br.State(), "one failure, counted once, opened it")

	clk.Add(time.Minute)
	require.Equal(t, guard.BreakerHalfOpen, br.State())
	require.ErrorIs(t, call(), errUnavailable, "the probe was sent, and failed")
	assert.Equal(t, 2, sent, "the probe reached the service")
	assert.Equal(t, guard.BreakerOpen, br.State(), "the failed probe opened it again")
}

// A caller's cancel, and an attempt held back and never sent, are no
// evidence about the service: the Throttle counts neither, so that a
// service that accepts nothing is shed however many of its callers give
// up or wait out a hold. (Both used to count as accepts: the reject
// probability stayed at zero.)
func TestThrottleCountsNeitherCancelsNorHeldAttempts(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	never := func() float64 { return 0.99 } // the Throttle never refuses: every attempt is counted
	for _, c := range []struct {
		name string
		op   func(ctx context.Context) error
		ctx  func() context.Context
	}{
		{"canceled", func(ctx context.Context) error { return ctx.Err() }, func() context.Context {
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			return ctx
		}},
		{"held", func(context.Context) error { return &guard.HeldError{Left: time.Second} }, context.Background},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			th, err := guard.NewThrottle(guard.ThrottleOptions{MinRequests: 1, Clock: clk, Rand: never})
			require.NoError(t, err)
			p := retry.Policy{MaxAttempts: 1, Throttle: th, Clock: clk}
			for range 10 {
				_, _ = retry.Do(context.Background(), func(context.Context) error { return errUnavailable }, p)
			}
			before := th.RejectProbability()
			require.Greater(t, before, 0.8, "ten rejections of ten")
			for range 100 {
				ctx := c.ctx()
				if ctx.Err() != nil {
					// Do sees a dead ctx before any attempt: run the
					// attempt through a Call as an integration would.
					var g guard.Call
					g.Start(th, nil)
					require.Equal(t, guard.NotRefused, g.Admit(1))
					g.Attempted(guard.OutcomeOf(ctx.Err(), false))
					g.End()
					continue
				}
				_, _ = retry.Do(ctx, c.op, p)
			}
			assert.Equal(t, before, th.RejectProbability(), "counted as nothing")
		})
	}
}
