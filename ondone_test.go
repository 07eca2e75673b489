package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// done records the calls of OnDone.
type done struct {
	calls int
	ctx   context.Context
	trace retry.Trace
	err   error
}

func (d *done) hook(ctx context.Context, t retry.Trace, err error) {
	d.calls++
	d.ctx, d.trace, d.err = ctx, t, err
}

// OnDone runs once for every way Do can end after it started, with the
// Trace and the error Do returns.
func TestOnDoneSeesEveryStop(t *testing.T) {
	t.Parallel()
	budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 2, TokenRatio: 0.1})
	require.NoError(t, err)
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	type key struct{}
	cases := []struct {
		name string
		ctx  context.Context
		op   func(context.Context) error
		p    retry.Policy
		want retry.StopReason
	}{
		{"success", context.Background(), retrytest.Script(errUnavailable).Call, retry.Policy{}, retry.StopSuccess},
		{"not retryable", context.Background(), retrytest.Always(retry.Permanent(errBadRequest)).Call, retry.Policy{}, retry.StopNotRetryable},
		{"exhausted", context.Background(), retrytest.Always(errUnavailable).Call, retry.Policy{MaxAttempts: 2}, retry.StopExhausted},
		{"deadline", context.Background(), retrytest.Always(errUnavailable).Call, retry.Policy{MaxElapsed: 100 * time.Millisecond, BaseBackoff: time.Second}, retry.StopDeadline},
		{"budget", context.Background(), retrytest.Always(errUnavailable).Call, retry.Policy{Budget: budget}, retry.StopBudget},
		{"ctx ended", canceled, retrytest.Always(errUnavailable).Call, retry.Policy{}, retry.StopContextDone},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var d done
			c.p.OnDone = d.hook
			ctx := context.WithValue(c.ctx, key{}, c.name)
			tr, err := retrytest.Do(ctx, c.op, c.p)
			require.Equal(t, 1, d.calls)
			assert.Equal(t, c.want, d.trace.Stop())
			assert.Equal(t, tr, d.trace)
			assert.Equal(t, err, d.err)
			assert.Equal(t, c.name, d.ctx.Value(key{}), "OnDone gets the caller's ctx")
		})
	}

	t.Run("deferred", func(t *testing.T) {
		var d done
		_, _ = retrytest.Do(context.Background(), func(ctx context.Context) error {
			_, err := retry.Do(ctx, retrytest.Always(errUnavailable).Call, retry.Policy{OnDone: d.hook})
			return err
		}, retry.Policy{MaxAttempts: 2})
		assert.Equal(t, 2, d.calls, "once per inner Do")
		assert.Equal(t, retry.StopDeferred, d.trace.Stop())
	})

	t.Run("DoValue", func(t *testing.T) {
		var d done
		v, _, err := retrytest.DoValue(context.Background(), func(context.Context) (int, error) { return 7, nil }, retry.Policy{OnDone: d.hook})
		require.NoError(t, err)
		assert.Equal(t, 7, v)
		assert.Equal(t, 1, d.calls)
		assert.Equal(t, retry.StopSuccess, d.trace.Stop())
	})

	t.Run("invalid", func(t *testing.T) {
		var d done
		_, err := retry.Do(context.Background(), retrytest.Script().Call, retry.Policy{Factor: 0.5, OnDone: d.hook})
		require.ErrorIs(t, err, retry.ErrInvalidPolicy)
		assert.Zero(t, d.calls, "Do never started")
	})
}

// A panic in op or in a hook reaches the caller after OnDone has seen it.
func TestOnDoneSeesAPanicBeforeItGoesOn(t *testing.T) {
	t.Parallel()
	boom := func() { panic("boom") }
	cases := map[string]retry.Policy{
		"op":         {},
		"Classifier": {Classifier: func(context.Context, retry.Attempt) retry.Decision { boom(); return retry.Decision{} }},
		"OnRetry":    {OnRetry: func(context.Context, retry.Attempt, time.Duration) { boom() }},
	}
	for where, p := range cases {
		t.Run(where, func(t *testing.T) {
			var d done
			p.OnDone = d.hook
			op := retrytest.Always(errUnavailable).Call
			if where == "op" {
				op = func(context.Context) error { boom(); return nil }
			}
			assert.PanicsWithValue(t, "boom", func() { _, _ = retry.Do(context.Background(), op, p) })
			require.Equal(t, 1, d.calls)
			assert.Equal(t, retry.StopPanicked, d.trace.Stop())
			assert.Equal(t, 1, d.trace.Attempts())
			assert.Error(t, d.err)
			assert.False(t, errors.Is(d.err, errUnavailable))
		})
	}
}

// An observed call's Trace spans it whole, even a first success: Do reads
// the clock at its start when OnDone is set.
func TestOnDoneTraceTimesAFirstSuccess(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	var got retry.Trace
	op := func(context.Context) error { clk.Add(25 * time.Millisecond); return nil }
	_, err := retry.Do(context.Background(), op, retry.Policy{Clock: clk, OnDone: func(_ context.Context, t retry.Trace, _ error) { got = t }})
	require.NoError(t, err)
	assert.Equal(t, 25*time.Millisecond, got.Elapsed())
}
