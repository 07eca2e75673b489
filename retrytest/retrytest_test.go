package retrytest_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var errFlaky = errors.New("flaky")

func TestScriptFailsAsToldThenSucceeds(t *testing.T) {
	t.Parallel()
	other := errors.New("other")
	op := retrytest.Script(errFlaky, other)
	ctx := context.Background()
	assert.Equal(t, errFlaky, op.Call(ctx))
	assert.Equal(t, other, op.Call(ctx))
	assert.NoError(t, op.Call(ctx))
	assert.NoError(t, op.Call(ctx))
	assert.Equal(t, 4, op.Calls())
}

func TestAlwaysFails(t *testing.T) {
	t.Parallel()
	op := retrytest.Always(errFlaky)
	for range 5 {
		assert.Equal(t, errFlaky, op.Call(context.Background()))
	}
	assert.Equal(t, 5, op.Calls())
}

func TestOpCountsConcurrentCalls(t *testing.T) {
	t.Parallel()
	op := retrytest.Script()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_ = op.Call(context.Background())
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 800, op.Calls())
}

func TestDoSkipsEveryWait(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	t0 := clk.Now()
	op := retrytest.Script(errFlaky, errFlaky, errFlaky)
	tr, err := retrytest.Do(context.Background(), op.Call, retry.Policy{Jitter: retry.NoJitter, Clock: clk})
	require.NoError(t, err)
	assert.Equal(t, 4, op.Calls())
	assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}, tr.Waits())
	assert.Equal(t, t0.Add(1400*time.Millisecond), clk.Now(), "Do used the given clock")
}

func TestDoValueReturnsTheValue(t *testing.T) {
	t.Parallel()
	n := 0
	v, tr, err := retrytest.DoValue(context.Background(), func(context.Context) (int, error) {
		n++
		if n < 2 {
			return 0, errFlaky
		}
		return 42, nil
	}, retry.Policy{})
	require.NoError(t, err)
	assert.Equal(t, 42, v)
	assert.Equal(t, 2, tr.Attempts())
}

func TestDoRaisesPanicsInTheCaller(t *testing.T) {
	t.Parallel()
	assert.PanicsWithValue(t, "boom", func() {
		_, _ = retrytest.Do(context.Background(), func(context.Context) error { panic("boom") }, retry.Policy{})
	})
}

// A wait appears on Waits only once its timer is set, so that advancing by
// it always ends the wait, however the goroutines are scheduled.
func TestWaitsAreSentOnceTheTimerIsSet(t *testing.T) {
	t.Parallel()
	for range 100 {
		clk := retrytest.NewClock()
		fired := make(chan struct{})
		go func() {
			w, cancel := clk.WithTimeout(context.Background(), time.Second)
			defer cancel()
			<-w.Done()
			close(fired)
		}()
		clk.Add(<-clk.Waits())
		<-fired // would hang if the Add could come before the timer
	}
}

func TestSeededRepeatsItsWaits(t *testing.T) {
	t.Parallel()
	step := retry.Step{N: 1, Backoff: time.Second, BaseBackoff: time.Second, MaxBackoff: time.Second}
	a, b := retrytest.Seeded(retry.FullJitter, 3), retrytest.Seeded(retry.FullJitter, 3)
	var seen []time.Duration
	for range 10 {
		w := a.Wait(step, 0)
		assert.Equal(t, w, b.Wait(step, 0.99), "the draw u is replaced by the seeded one")
		seen = append(seen, w)
	}
	assert.NotEqual(t, seen[0], seen[1])
}

func TestScriptValueReturnsTheValueAfterTheErrors(t *testing.T) {
	t.Parallel()
	op := retrytest.ScriptValue("order-1", errFlaky, errFlaky)
	v, tr, err := retrytest.DoValue(context.Background(), op.Call, retry.Policy{})
	require.NoError(t, err)
	assert.Equal(t, "order-1", v)
	assert.Equal(t, 3, op.Calls())
	assert.Equal(t, 3, tr.Attempts())
	v, err = op.Call(context.Background())
	assert.Equal(t, "order-1", v)
	assert.NoError(t, err)
}

// One Policy with one Clock shared by many concurrent retrytest.Do calls:
// time only moves forward, and every call ends.
func TestSharedClockAcrossConcurrentDos(t *testing.T) {
	t.Parallel()
	for _, clk := range []*retrytest.Clock{retrytest.NewClock(), retrytest.NewAutoClock()} {
		p := retry.Policy{Clock: clk, MaxAttempts: 6, MaxElapsed: time.Hour, AttemptTimeout: time.Minute}
		start := clk.Now()
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 20 {
					op := retrytest.Script(errFlaky, errFlaky, errFlaky)
					_, err := retrytest.Do(context.Background(), op.Call, p)
					assert.NoError(t, err)
					assert.False(t, clk.Now().Before(start), "time went backwards")
				}
			})
		}
		wg.Wait()
		assert.Zero(t, clk.Pending(), "a timer was left on the clock")
	}
}

// Time on a Clock never goes backwards, whoever moves it.
func TestClockIsMonotonicUnderConcurrentAdds(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	start := clk.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			last := clk.Now()
			for range 1000 {
				clk.Add(time.Millisecond)
				now := clk.Now()
				assert.False(t, now.Before(last))
				last = now
			}
		})
	}
	wg.Wait()
	assert.Equal(t, 8*time.Second, clk.Now().Sub(start))
}

// An auto-advancing Clock ends each wait as it starts: Do runs straight
// from the test, with no goroutine to drive it, and time moves by exactly
// the waits.
func TestAutoClockSkipsWaitsWithoutADriver(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewAutoClock()
	start := clk.Now()
	op := retrytest.Script(errFlaky, errFlaky)
	tr, err := retry.Do(context.Background(), op.Call, retry.Policy{Clock: clk, Jitter: retry.NoJitter, AttemptTimeout: time.Second})
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}, tr.Waits())
	assert.Equal(t, 600*time.Millisecond, clk.Now().Sub(start))
	assert.Empty(t, clk.Waits())
	assert.Zero(t, clk.Pending())
}

// Deadlines do not move an auto clock: only waits do. An attempt that
// outlasts its timeout times out because the test moved time, not by itself.
func TestAutoClockLeavesDeadlinesAlone(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewAutoClock()
	ctx, cancel := clk.WithDeadline(context.Background(), clk.Now().Add(time.Second))
	defer cancel()
	assert.NoError(t, ctx.Err())
	clk.Add(time.Second)
	assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
}

// retrytest.Do behaves as production does with a real ctx deadline: a wait
// that would pass it fails fast with ErrDeadline instead of being waited
// out on fake time.
func TestDoHonoursARealCtxDeadline(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	op := retrytest.Always(retry.RetryAfter(errFlaky, 10*time.Second))
	tr, err := retrytest.Do(ctx, op.Call, retry.Policy{})
	require.ErrorIs(t, err, retry.ErrDeadline)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, 1, op.Calls())
	assert.Equal(t, retry.StopDeadline, tr.Stop())
}

// Seeded forwards Validate, so a bad parameter cannot hide behind it.
func TestSeededForwardsValidate(t *testing.T) {
	t.Parallel()
	require.Error(t, retry.Policy{Jitter: retrytest.Seeded(retry.BandJitter(2), 1)}.Validate())
	require.NoError(t, retry.Policy{Jitter: retrytest.Seeded(retry.BandJitter(0.3), 1)}.Validate())
	require.NoError(t, retry.Policy{Jitter: retrytest.Seeded(retry.FullJitter, 1)}.Validate())
}
