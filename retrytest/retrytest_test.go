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
	op := retrytest.Script(errFlaky, errFlaky, errFlaky)
	tr, err := retrytest.Do(context.Background(), op.Call, retry.Policy{Jitter: retry.NoJitter, Clock: clk})
	require.NoError(t, err)
	assert.Equal(t, 4, op.Calls())
	assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond}, tr.Delays())
	assert.Equal(t, time.Unix(0, 0).Add(1400*time.Millisecond), clk.Now(), "Do used the given clock")
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
	step := retry.Step{Retry: 1, Delay: time.Second, Base: time.Second, Max: time.Second}
	a, b := retrytest.Seeded(retry.FullJitter, 3), retrytest.Seeded(retry.FullJitter, 3)
	var seen []time.Duration
	for range 10 {
		w := a.Wait(step, 0)
		assert.Equal(t, w, b.Wait(step, 0.99), "the draw u is replaced by the seeded one")
		seen = append(seen, w)
	}
	assert.NotEqual(t, seen[0], seen[1])
}
