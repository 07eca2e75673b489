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
)

// twoFailures is what each concurrent call of the tests below does: it
// fails twice and then succeeds, so it waits 200ms and 400ms, and its
// MaxElapsed leaves room for those waits only if no other call's waits are
// counted against it.
func twoFailures() retry.Policy {
	return retry.Policy{Jitter: retry.NoJitter, MaxElapsed: time.Second}
}

// checkOwnWaits asserts that each call succeeded and saw its own waits only.
func checkOwnWaits(t *testing.T, traces []retry.Trace, errs []error) {
	t.Helper()
	failed := 0
	for i, tr := range traces {
		if errs[i] != nil {
			failed++
			continue
		}
		assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}, tr.Waits(), "call %d", i)
		assert.Equal(t, 600*time.Millisecond, tr.Elapsed(), "call %d: its own waits, no one else's", i)
	}
	assert.Zero(t, failed, "calls that failed, of %d", len(traces))
}

// 200 calls at once through retrytest.Do on one shared auto clock do not
// time each other out: Do runs each under Run, where time moves only when
// every call waits.
func TestDoConcurrentOnASharedClock(t *testing.T) {
	t.Parallel()
	const n = 200
	clk := retrytest.NewAutoClock()
	traces, errs := make([]retry.Trace, n), make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p := twoFailures()
			p.Clock = clk
			op := retrytest.Script(errors.New("503"), errors.New("503"))
			traces[i], errs[i] = retrytest.Do(context.Background(), op.Call, p)
		})
	}
	wg.Wait()
	checkOwnWaits(t, traces, errs)
	assert.Zero(t, clk.Pending())
}

// The same for retry.Do called under Run, on a clock from NewClock or
// NewAutoClock.
func TestRunConcurrentCalls(t *testing.T) {
	t.Parallel()
	for name, clk := range map[string]*retrytest.Clock{"NewClock": retrytest.NewClock(), "NewAutoClock": retrytest.NewAutoClock()} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			const n = 200
			traces, errs := make([]retry.Trace, n), make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					p := twoFailures()
					p.Clock = clk
					op := retrytest.Script(errors.New("503"), errors.New("503"))
					clk.Run(func() { traces[i], errs[i] = retry.Do(context.Background(), op.Call, p) })
				})
			}
			wg.Wait()
			checkOwnWaits(t, traces, errs)
			assert.Zero(t, clk.Pending())
			assert.Empty(t, clk.Waits(), "waits under Run are not sent")
		})
	}
}

// An attempt that hangs (here until its ctx ends, as on a server that never
// answers) on a clock that moves only when told does not hang the test:
// Run, and so retrytest.Do, moves time to the attempt's deadline once
// nothing else happens on the clock.
func TestRunEndsAHangingAttempt(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	hang := func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	p := retry.Policy{Clock: clk, AttemptTimeout: time.Second, MaxAttempts: 2, MaxElapsed: time.Minute, Jitter: retry.NoJitter}
	tr, err := retrytest.Do(context.Background(), hang, p)
	require.ErrorIs(t, err, retry.ErrExhausted)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, 2, tr.Attempts())
	assert.Equal(t, 2*time.Second+200*time.Millisecond, tr.Elapsed(), "two timeouts and one wait, in fake time")
	assert.Zero(t, clk.Pending())
}

// A panic under Run goes on up, and the clock lets go of the call: a later
// call on it still runs.
func TestRunPanics(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	assert.PanicsWithValue(t, "boom", func() { clk.Run(func() { panic("boom") }) })
	tr, err := retrytest.Do(context.Background(), retrytest.Script(errors.New("503")).Call, retry.Policy{Clock: clk, Jitter: retry.NoJitter})
	require.NoError(t, err)
	assert.Equal(t, []time.Duration{200 * time.Millisecond}, tr.Waits())
}
