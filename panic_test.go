package retry_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPanicsReleaseEverything extends TestPanicsPropagateAndLeaveNothingRunning
// in two ways. It runs each panic on the real clock's code path too (the
// loop's reused time.Timer, context.WithDeadline), in a synctest bubble,
// which fails the test if a goroutine is left behind. And it checks that
// every ctx Do gave op has been canceled, not timed out, by the time the
// panic reaches the caller: Do's cleanup ran, which stops the MaxElapsed and
// AttemptTimeout timers and unregisters them from the caller's ctx, here one
// that can be canceled, so that they do hold a registration.
func TestPanicsReleaseEverything(t *testing.T) {
	t.Parallel()
	wheres := []string{"op, first attempt", "op, after waits", "Classifier", "OnRetry", "Jitter"}
	for _, where := range wheres {
		t.Run(where+"/mock clock", func(t *testing.T) {
			t.Parallel()
			clk := retrytest.NewClock()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			pc := newPanicCase(where)
			pc.p.Clock = clk
			require.PanicsWithValue(t, "boom", func() { _, _ = retrytest.Do(ctx, pc.op, pc.p) })
			pc.requireReleased(t, ctx)
			requireNoTimers(t, clk)
		})
		t.Run(where+"/real clock", func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				pc := newPanicCase(where)
				start := time.Now()
				require.PanicsWithValue(t, "boom", func() { _, _ = retry.Do(ctx, pc.op, pc.p) })
				pc.requireReleased(t, ctx)
				assert.Less(t, time.Since(start), time.Minute, "the panic waited for a timer")
			})
		})
	}
}

// panicCase is a Policy and op that panic at one place, on the third
// attempt where the place can wait that long.
type panicCase struct {
	p      retry.Policy
	op     func(context.Context) error
	opCtxs []context.Context // the ctx of each call of op
}

func newPanicCase(where string) *panicCase {
	pc := &panicCase{p: retry.Policy{
		MaxAttempts:    5,
		MaxElapsed:     time.Hour,   // a deadline timer pending throughout
		AttemptTimeout: time.Minute, // and one per attempt
		Jitter:         retry.NoJitter,
	}}
	pc.op = func(ctx context.Context) error {
		pc.opCtxs = append(pc.opCtxs, ctx)
		switch {
		case where == "op, first attempt",
			where == "op, after waits" && len(pc.opCtxs) == 3:
			panic("boom")
		}
		return errUnavailable
	}
	switch where {
	case "Classifier":
		pc.p.Classifier = func(ctx context.Context, a retry.Attempt) retry.Decision {
			if len(pc.opCtxs) == 3 {
				panic("boom")
			}
			return retry.DefaultClassifier(ctx, a)
		}
	case "OnRetry":
		pc.p.OnRetry = func(_ context.Context, a retry.Attempt, _ time.Duration) {
			if a.Number == 3 {
				panic("boom")
			}
		}
	case "Jitter":
		pc.p.Jitter = panicOnRetry{3}
	}
	return pc
}

// requireReleased checks that each ctx op got has been canceled by Do on its
// way out, while the caller's ctx lives on.
func (pc *panicCase) requireReleased(t *testing.T, caller context.Context) {
	t.Helper()
	require.NotEmpty(t, pc.opCtxs)
	for i, ctx := range pc.opCtxs {
		require.ErrorIs(t, ctx.Err(), context.Canceled, "op's ctx of attempt %d is still live or timed out", i+1)
	}
	require.NoError(t, caller.Err(), "Do must not cancel the caller's ctx")
}

// panicOnRetry is NoJitter until the given retry, where it panics.
type panicOnRetry struct{ at int }

func (j panicOnRetry) Wait(s retry.Step, u float64) time.Duration {
	if s.N == j.at {
		panic("boom")
	}
	return retry.NoJitter.Wait(s, u)
}
