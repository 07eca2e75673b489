package retry_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTwoFailuresThenSuccess(t *testing.T) {
	t.Parallel()
	op := retrytest.Script(errUnavailable, errUnavailable)
	tr, err := retrytest.Do(context.Background(), op.Call, retry.Policy{Jitter: retry.NoJitter})
	require.NoError(t, err)
	assert.Equal(t, 3, op.Calls())
	assert.Equal(t, 3, tr.Attempts())
	assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}, tr.Waits())
	assert.Equal(t, retry.StopSuccess, tr.Stop())
}

func TestPermanentErrorStopsAtOnce(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	op := retrytest.Always(retry.Permanent(errBadRequest))
	tr, err := retry.Do(context.Background(), op.Call, retry.Policy{Clock: clk})
	require.ErrorIs(t, err, errBadRequest)
	assert.NotErrorIs(t, err, retry.ErrExhausted)
	assert.Equal(t, errBadRequest.Error(), err.Error(), "the mark must not change the message")
	assert.Equal(t, 1, op.Calls())
	assert.Empty(t, tr.Waits())
	assert.Equal(t, retry.StopNotRetryable, tr.Stop())
	assert.Equal(t, "permanent", tr.Last().Reason)
	assert.Empty(t, clk.Waits(), "no wait may start")
}

func TestNotRetryableByClassifierIsReturnedAsIs(t *testing.T) {
	t.Parallel()
	classify := func(ctx context.Context, a retry.Attempt) retry.Decision {
		err := a.Err
		if errors.Is(err, errBadRequest) {
			return retry.Decision{Reason: "400"}
		}
		return retry.DefaultClassifier(ctx, a)
	}
	op := retrytest.Script(errUnavailable, errBadRequest)
	tr, err := retrytest.Do(context.Background(), op.Call, retry.Policy{Classifier: classify})
	require.Equal(t, errBadRequest, err)
	assert.Equal(t, 2, op.Calls())
	assert.Equal(t, retry.StopNotRetryable, tr.Stop())
	assert.Equal(t, "400", tr.Last().Reason)
}

func TestMaxAttemptsEndsWithErrExhausted(t *testing.T) {
	t.Parallel()
	for _, max := range []int{1, 2, 4, 7} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			t.Parallel()
			op := retrytest.Always(errUnavailable)
			tr, err := retrytest.Do(context.Background(), op.Call, retry.Policy{MaxAttempts: max})
			require.ErrorIs(t, err, retry.ErrExhausted)
			require.ErrorIs(t, err, errUnavailable)
			assert.Equal(t, max, op.Calls())
			assert.Equal(t, max, tr.Attempts())
			assert.Len(t, tr.Waits(), max-1)
			assert.Equal(t, retry.StopExhausted, tr.Stop())
		})
	}
}

func TestZeroPolicyMakesFourAttempts(t *testing.T) {
	t.Parallel()
	op := retrytest.Always(errUnavailable)
	_, err := retrytest.Do(context.Background(), op.Call, retry.Policy{})
	require.EqualError(t, err, "retry: gave up after 4 attempts: "+errUnavailable.Error())
	assert.Equal(t, 4, op.Calls())
}

// A classic retry-loop bug: a loop that checks the attempt count after sleeping sleeps
// one backoff too many. Do decides to give up before it waits.
func TestNoWaitAfterTheLastAttempt(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	t0 := clk.Now()
	op := retrytest.Always(errUnavailable)
	tr, err := retrytest.Do(context.Background(), op.Call, retry.Policy{MaxAttempts: 3, Jitter: retry.NoJitter, Clock: clk})
	require.ErrorIs(t, err, retry.ErrExhausted)
	assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}, tr.Waits())
	assert.Equal(t, t0.Add(600*time.Millisecond), clk.Now(), "the clock moved past the two waits")
	assert.Empty(t, clk.Waits(), "a wait started after the last attempt")
	requireNoTimers(t, clk)
}

func TestCancelDuringWaitReturnsAtOnce(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	t0 := clk.Now()
	ctx, cancel := context.WithCancel(context.Background())
	op := retrytest.Always(errUnavailable)
	done := start(ctx, op.Call, retry.Policy{Clock: clk, BaseBackoff: time.Hour, Jitter: retry.NoJitter})

	require.Equal(t, time.Hour, recv(t, clk.Waits(), "the first wait"))
	cancel() // the fake clock never moves: only the cancel can end the wait
	r := recv(t, done, "Do to return after cancel")

	require.ErrorIs(t, r.err, context.Canceled)
	require.ErrorIs(t, r.err, errUnavailable, "the last error must not be dropped")
	assert.EqualError(t, r.err, "retry: context canceled after 1 attempt: "+errUnavailable.Error())
	assert.Equal(t, 1, op.Calls())
	assert.Equal(t, t0, clk.Now())
	assert.Equal(t, retry.StopContextDone, r.trace.Stop())
	requireNoTimers(t, clk)
}

// The wait's timer and the cancel may become ready together; whichever the
// select picks, op must not run again.
func TestCancelRacingTheTimerNeverCallsAgain(t *testing.T) {
	t.Parallel()
	for i := range 50 {
		clk := retrytest.NewClock()
		ctx, cancel := context.WithCancel(context.Background())
		op := retrytest.Always(errUnavailable)
		done := start(ctx, op.Call, retry.Policy{Clock: clk, Jitter: retry.NoJitter})
		d := recv(t, clk.Waits(), "the first wait")
		cancel()
		clk.Add(d)
		r := recv(t, done, "Do")
		require.ErrorIs(t, r.err, context.Canceled, "run %d", i)
		require.Equal(t, 1, op.Calls(), "run %d: op called after cancel", i)
	}
}

func TestCancelFromOnRetryStopsBeforeTheWait(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	op := retrytest.Always(errUnavailable)
	clk := retrytest.NewClock()
	_, err := retry.Do(ctx, op.Call, retry.Policy{Clock: clk, OnRetry: func(context.Context, retry.Attempt, time.Duration) { cancel() }})
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, op.Calls())
	requireNoTimers(t, clk)
}

func TestCancelledBeforeStartNeverCallsOp(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	shutdown := errors.New("shutting down")
	cancel(shutdown)
	op := retrytest.Script()
	tr, err := retry.Do(ctx, op.Call, retry.Policy{})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, shutdown, "the ctx's cause must be kept")
	assert.EqualError(t, err, "retry: context canceled (shutting down) before the first attempt")
	assert.Equal(t, 0, op.Calls())
	assert.Equal(t, 0, tr.Attempts())
}

func TestCancelDuringAttemptStopsWithoutRetry(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	op := func(ctx context.Context) error {
		calls++
		cancel()
		return errUnavailable // an op that ignores its ctx still gets no retry
	}
	_, err := retry.Do(ctx, op, retry.Policy{Clock: retrytest.NewClock()})
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, errUnavailable)
	assert.Equal(t, 1, calls)
}

func TestMaxElapsedGivesUpBeforeSleeping(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	t0 := clk.Now()
	op := retrytest.Always(errUnavailable)
	// Waits are 200ms, then 400ms: the second would end at 600ms, past 500ms.
	tr, err := retrytest.Do(context.Background(), op.Call, retry.Policy{
		MaxAttempts: 10, MaxElapsed: 500 * time.Millisecond, Jitter: retry.NoJitter, Clock: clk,
	})
	require.ErrorIs(t, err, retry.ErrDeadline)
	require.ErrorIs(t, err, errUnavailable)
	assert.EqualError(t, err, "retry: gave up after 2 attempts, next wait 400ms would pass the deadline: "+errUnavailable.Error())
	assert.Equal(t, 2, op.Calls())
	assert.Equal(t, t0.Add(200*time.Millisecond), clk.Now(), "Do slept into a certain failure")
	assert.Equal(t, retry.StopDeadline, tr.Stop())
	assert.Equal(t, 200*time.Millisecond, tr.Elapsed())
	requireNoTimers(t, clk)
}

func TestUnlimitedAttemptsEndAtMaxElapsed(t *testing.T) {
	t.Parallel()
	op := retrytest.Always(errUnavailable)
	tr, err := retrytest.Do(context.Background(), op.Call, retry.Policy{
		MaxAttempts: -1, MaxElapsed: time.Minute, MaxBackoff: time.Second, Jitter: retry.NoJitter,
	})
	require.ErrorIs(t, err, retry.ErrDeadline)
	// 0.2 + 0.4 + 0.8 then 1s waits: 1.4s after three, then 58 more fit under a minute.
	assert.Equal(t, 62, op.Calls())
	assert.Less(t, tr.Elapsed(), time.Minute)
}

func TestMaxElapsedEndsABlockedAttempt(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	started := make(chan struct{}, 1)
	op := func(ctx context.Context) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}
	done := start(context.Background(), op, retry.Policy{MaxElapsed: time.Second, Clock: clk})
	recv(t, started, "the attempt")
	clk.Add(time.Second)
	r := recv(t, done, "Do")
	require.ErrorIs(t, r.err, retry.ErrDeadline)
	require.ErrorIs(t, r.err, context.DeadlineExceeded)
	assert.Equal(t, 1, r.trace.Attempts())
	assert.Equal(t, time.Second, r.trace.Elapsed())
	requireNoTimers(t, clk)
}

func TestAttemptTimeoutIsRetriedOnTheFakeClock(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	started := make(chan struct{}, 3)
	var calls atomic.Int32
	op := func(ctx context.Context) error {
		if calls.Add(1) == 3 {
			return nil
		}
		started <- struct{}{}
		<-ctx.Done() // hangs until the attempt's own timeout
		return ctx.Err()
	}
	done := start(context.Background(), op, retry.Policy{AttemptTimeout: 50 * time.Millisecond, Clock: clk})
	for range 2 {
		recv(t, started, "an attempt")
		clk.Add(50 * time.Millisecond)
		clk.Add(recv(t, clk.Waits(), "a wait"))
	}
	r := recv(t, done, "Do")
	require.NoError(t, r.err)
	assert.Equal(t, int32(3), calls.Load())
	attempts := slices.Collect(r.trace.All())
	require.Len(t, attempts, 3)
	assert.Equal(t, "attempt timed out", attempts[0].Reason)
	assert.Equal(t, "attempt timed out", attempts[1].Reason)
	assert.Equal(t, 50*time.Millisecond, attempts[1].Duration, "the timeout ran on the fake clock")
	requireNoTimers(t, clk)
}

func TestRetryAfterIsHonouredAndSpread(t *testing.T) {
	t.Parallel()
	op := retrytest.Script(retry.RetryAfter(errUnavailable, 3*time.Second))
	tr, err := retrytest.Do(context.Background(), op.Call, retry.Policy{Jitter: retry.NoJitter})
	require.NoError(t, err)
	// The callee's 3s, then the policy's own backoff on top; past MaxBackoff
	// because the callee asked for it.
	assert.Equal(t, []time.Duration{3*time.Second + 200*time.Millisecond}, tr.Waits())
	assert.Equal(t, "retry after", slices.Collect(tr.All())[0].Reason)
}

func TestRetryAfterBeyondDeadlineGivesUpAtOnce(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	op := retrytest.Always(retry.RetryAfter(errUnavailable, time.Hour))
	_, err := retry.Do(context.Background(), op.Call, retry.Policy{MaxElapsed: time.Minute, Clock: clk})
	require.ErrorIs(t, err, retry.ErrDeadline)
	require.ErrorIs(t, err, errUnavailable)
	assert.Equal(t, 1, op.Calls())
	assert.Empty(t, clk.Waits())
	requireNoTimers(t, clk)
}

func TestCtxDeadlineGivesUpBeforeSleeping(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	ctx, cancel := clk.WithDeadline(context.Background(), clk.Now().Add(300*time.Millisecond))
	defer cancel()
	op := retrytest.Always(errUnavailable)
	// 200ms fits; the 400ms after it would not.
	done := start(ctx, op.Call, retry.Policy{Jitter: retry.NoJitter, Clock: clk})
	clk.Add(recv(t, clk.Waits(), "the first wait"))
	r := recv(t, done, "Do")
	require.ErrorIs(t, r.err, retry.ErrDeadline)
	require.NoError(t, ctx.Err(), "Do gave up before the ctx ended")
	require.ErrorIs(t, r.err, context.DeadlineExceeded, "the ctx deadline stopped Do: code that maps DeadlineExceeded must see it")
	require.ErrorIs(t, r.err, retry.ErrGaveUp)
	assert.Equal(t, 2, op.Calls())
}

func TestOnRetrySeesEachFailedAttemptBeforeItsWait(t *testing.T) {
	t.Parallel()
	type call struct {
		attempt int
		reason  string
		wait    time.Duration
	}
	var calls []call
	ctx := context.WithValue(context.Background(), ctxKey{}, "request-42")
	p := retry.Policy{
		MaxAttempts: 3,
		Jitter:      retry.NoJitter,
		OnRetry: func(hookCtx context.Context, a retry.Attempt, wait time.Duration) {
			assert.Equal(t, "request-42", hookCtx.Value(ctxKey{}), "OnRetry gets the caller's ctx")
			assert.ErrorIs(t, a.Err, errUnavailable)
			calls = append(calls, call{a.Number, a.Reason, wait})
		},
	}
	_, err := retrytest.Do(ctx, retrytest.Always(errUnavailable).Call, p)
	require.ErrorIs(t, err, retry.ErrExhausted)
	assert.Equal(t, []call{{1, "error", 200 * time.Millisecond}, {2, "error", 400 * time.Millisecond}}, calls,
		"OnRetry must not run after the last attempt")
}

type ctxKey struct{}

func TestOpGetsCallersValues(t *testing.T) {
	t.Parallel()
	ctx := context.WithValue(context.Background(), ctxKey{}, "v")
	_, err := retry.Do(ctx, func(ctx context.Context) error {
		if ctx.Value(ctxKey{}) != "v" {
			return retry.Permanent(errors.New("lost the caller's value"))
		}
		return nil
	}, retry.Policy{AttemptTimeout: time.Minute, MaxElapsed: time.Hour, Clock: retrytest.NewClock()})
	require.NoError(t, err)
}

func TestInvalidPolicyNeverCallsOp(t *testing.T) {
	t.Parallel()
	op := retrytest.Script()
	tr, err := retry.Do(context.Background(), op.Call, retry.Policy{Factor: 0.5})
	require.ErrorIs(t, err, retry.ErrInvalidPolicy)
	assert.Contains(t, err.Error(), "Factor")
	assert.Equal(t, 0, op.Calls())
	assert.Equal(t, 0, tr.Attempts())
}

func TestBadCallsGetClearErrors(t *testing.T) {
	t.Parallel()
	_, err := retry.Do(context.Background(), nil, retry.Policy{})
	require.EqualError(t, err, "retry: called with a nil op")
	_, _, err = retry.DoValue[int](context.Background(), nil, retry.Policy{})
	require.EqualError(t, err, "retry: called with a nil op")
	//lint:ignore SA1012 a nil ctx is the bad input under test
	_, err = retry.Do(nil, retrytest.Script().Call, retry.Policy{})
	require.EqualError(t, err, "retry: called with a nil Context")
}

func TestDoValueReturnsTheSuccessfulValue(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) { // real timers on the bubble's fake time
		n := 0
		v, tr, err := retry.DoValue(context.Background(), func(context.Context) (string, error) {
			n++
			if n < 3 {
				return "partial", errUnavailable
			}
			return "order-7", nil
		}, retry.Policy{Jitter: retry.NoJitter})
		require.NoError(t, err)
		assert.Equal(t, "order-7", v)
		assert.Equal(t, 3, tr.Attempts())
		assert.Equal(t, 600*time.Millisecond, tr.Elapsed())
	})
}

func TestDoValueReturnsTheLastValueOnFailure(t *testing.T) {
	t.Parallel()
	v, _, err := retry.DoValue(context.Background(), func(context.Context) (int, error) {
		return 404, retry.Permanent(errBadRequest)
	}, retry.Policy{})
	require.ErrorIs(t, err, errBadRequest)
	assert.Equal(t, 404, v)
}

// The fallback pattern: when retries run out, serve cached data instead of failing the
// user, and still know that it happened.
func TestFallbackOnGiveUp(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		cached := []string{"cached"}
		fetch := func(context.Context) ([]string, error) { return nil, errUnavailable }
		items, tr, err := retry.DoValue(context.Background(), fetch, retry.Policy{MaxAttempts: 2})
		if errors.Is(err, retry.ErrExhausted) {
			items = cached
		}
		assert.Equal(t, cached, items)
		require.ErrorIs(t, err, errUnavailable, "the caller can still tell why it got the fallback")
		assert.Equal(t, retry.StopExhausted, tr.Stop())
		assert.Equal(t, 2, tr.Attempts())
	})
}

func TestPanicsPropagateAndLeaveNothingRunning(t *testing.T) {
	t.Parallel()
	boom := func() { panic("boom") }
	failTwice := func() func(context.Context) error {
		n := 0
		return func(context.Context) error {
			n++
			if n == 3 {
				boom()
			}
			return errUnavailable
		}
	}
	cases := []struct {
		name string
		op   func(context.Context) error
		p    retry.Policy
	}{
		{"op, first attempt", func(context.Context) error { boom(); return nil }, retry.Policy{}},
		{"op, after waits", failTwice(), retry.Policy{}},
		{"op, with timeouts", failTwice(), retry.Policy{AttemptTimeout: time.Second, MaxElapsed: time.Hour}},
		{"classifier", retrytest.Always(errUnavailable).Call, retry.Policy{Classifier: func(context.Context, retry.Attempt) retry.Decision { boom(); return retry.Decision{} }}},
		{"OnRetry", retrytest.Always(errUnavailable).Call, retry.Policy{OnRetry: func(context.Context, retry.Attempt, time.Duration) { boom() }}},
		{"Jitter", retrytest.Always(errUnavailable).Call, retry.Policy{Jitter: panicJitter{}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clk := retrytest.NewClock()
			c.p.Clock = clk
			c.p.MaxElapsed = max(c.p.MaxElapsed, time.Hour) // a deadline timer that must be stopped too
			assert.PanicsWithValue(t, "boom", func() { _, _ = retrytest.Do(context.Background(), c.op, c.p) })
			requireNoTimers(t, clk)
		})
	}
}

type panicJitter struct{}

func (panicJitter) Wait(retry.Step, float64) time.Duration { panic("boom") }

func TestTraceRecordsEveryAttempt(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	clk.Add(time.Hour) // so that a zero Start cannot pass for a real one
	t0 := clk.Now()
	errs := []error{errUnavailable, retry.RetryAfter(errUnavailable, time.Second), nil}
	started, proceed := make(chan int), make(chan struct{})
	op := func(context.Context) error {
		started <- 0
		<-proceed
		err := errs[0]
		errs = errs[1:]
		return err
	}
	done := start(context.Background(), op, retry.Policy{Jitter: retry.NoJitter, Clock: clk})
	const slow = 30 * time.Millisecond
	for i := range 3 {
		recv(t, started, "an attempt")
		clk.Add(slow) // each attempt takes 30ms of fake time
		proceed <- struct{}{}
		if i < 2 {
			clk.Add(recv(t, clk.Waits(), "a wait"))
		}
	}
	r := recv(t, done, "Do")
	require.NoError(t, r.err)
	tr := r.trace

	attempts := slices.Collect(tr.All())
	require.Len(t, attempts, 3)
	// The first attempt is untimed: no MaxElapsed, so Do read no clock before it.
	assert.True(t, attempts[0].Start.IsZero())
	assert.Equal(t, "error", attempts[0].Reason)
	wantErr := attempts[1].Err // the RetryAfter-marked error, compared by identity
	require.ErrorIs(t, wantErr, errUnavailable)
	assert.Equal(t, retry.Attempt{Number: 2, Wait: 200 * time.Millisecond, Start: t0.Add(slow + 200*time.Millisecond), Duration: slow, Err: wantErr, Reason: "retry after"}, attempts[1])
	assert.Equal(t, retry.Attempt{Number: 3, Wait: 1400 * time.Millisecond, Start: t0.Add(2*slow + 1600*time.Millisecond), Duration: slow}, attempts[2])
	assert.Equal(t, attempts[2], tr.Last())
	assert.Equal(t, 1600*time.Millisecond+2*slow, tr.Elapsed(), "from the end of the untimed first attempt")
	assert.Equal(t, "3 attempts, waits [200ms 1.4s], 1.66s, ok", tr.String())
}

func TestTraceTimesTheFirstAttemptUnderMaxElapsed(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	t0 := clk.Now()
	op := func(context.Context) error { clk.Add(10 * time.Millisecond); return nil }
	tr, err := retry.Do(context.Background(), op, retry.Policy{MaxElapsed: time.Second, Clock: clk})
	require.NoError(t, err)
	assert.Equal(t, t0, tr.Last().Start)
	assert.Equal(t, 10*time.Millisecond, tr.Last().Duration)
	assert.Equal(t, 10*time.Millisecond, tr.Elapsed())
	assert.Equal(t, "1 attempt, 10ms, ok", tr.String())
	requireNoTimers(t, clk)
}

// recordingJitter records the steps Do asks it to shape and waits NoJitter's d.
type recordingJitter struct{ steps *[]retry.Step }

func (r recordingJitter) Wait(s retry.Step, _ float64) time.Duration {
	*r.steps = append(*r.steps, s)
	return s.Backoff
}

// A callee's After is a floor on one wait, not part of the backoff: the next
// Jitter sees only the previous jittered wait, or one long Retry-After would
// pin DecorrelatedJitter at MaxBackoff for good.
func TestJitterSeesThePreviousBackoffWithoutAfter(t *testing.T) {
	t.Parallel()
	var steps []retry.Step
	op := retrytest.Script(retry.RetryAfter(errUnavailable, 30*time.Second), errUnavailable)
	tr, err := retrytest.Do(context.Background(), op.Call, retry.Policy{Jitter: recordingJitter{&steps}})
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{30*time.Second + 200*time.Millisecond, 400 * time.Millisecond}, tr.Waits())
	require.Len(t, steps, 2)
	assert.Equal(t, retry.Step{N: 1, Backoff: 200 * time.Millisecond, PrevWait: 0, BaseBackoff: 200 * time.Millisecond, MaxBackoff: 5 * time.Second}, steps[0])
	assert.Equal(t, 200*time.Millisecond, steps[1].PrevWait, "PrevWait = the backoff alone, not 30.2s")
}
