package retry_test

import (
	"context"
	"errors"
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

// layers nests three retry loops, as an HTTP client inside a repository
// inside a task queue, over an op that always fails, and counts its calls.
func layers(t *testing.T, nested bool) (bottomCalls int32, inner retry.Trace) {
	t.Helper()
	var calls atomic.Int32
	p := retry.Policy{MaxAttempts: 3, RetryNested: nested}
	synctest.Test(t, func(t *testing.T) {
		bottom := func(ctx context.Context) error {
			tr, err := retry.Do(ctx, func(context.Context) error {
				calls.Add(1)
				return errUnavailable
			}, p)
			inner = tr
			return err
		}
		middle := func(ctx context.Context) error {
			_, err := retry.Do(ctx, bottom, p)
			return err
		}
		_, err := retry.Do(context.Background(), middle, retry.Policy{MaxAttempts: 3})
		require.ErrorIs(t, err, errUnavailable)
	})
	return calls.Load(), inner
}

func TestNestedLoopsHaveOneOwner(t *testing.T) {
	t.Parallel()
	calls, inner := layers(t, false)
	assert.Equal(t, int32(3), calls, "3 layers of 3 attempts must not make 27 calls")
	assert.Equal(t, retry.StopDeferred, inner.Stop())
	assert.Equal(t, 1, inner.Attempts())
}

func TestNestedLoopsCanOptIn(t *testing.T) {
	t.Parallel()
	calls, inner := layers(t, true)
	assert.Equal(t, int32(27), calls)
	assert.Equal(t, retry.StopExhausted, inner.Stop())
}

// The deferring loop returns op's error as it is, so the outer loop judges
// it as if it had called op itself: a permanent error stops both.
func TestDeferringLoopPassesTheErrorThrough(t *testing.T) {
	t.Parallel()
	op := retrytest.Always(retry.Permanent(errBadRequest))
	outer := 0
	_, err := retrytest.Do(context.Background(), func(ctx context.Context) error {
		outer++
		_, err := retry.Do(ctx, op.Call, retry.Policy{})
		return err
	}, retry.Policy{})
	require.ErrorIs(t, err, errBadRequest)
	assert.NotErrorIs(t, err, retry.ErrExhausted)
	assert.Equal(t, 1, outer)
	assert.Equal(t, 1, op.Calls())
}

// An outer loop that makes a single attempt retries nothing, so it does not
// take the job away from the loops inside it.
func TestSingleAttemptLoopDoesNotClaimOwnership(t *testing.T) {
	t.Parallel()
	op := retrytest.Script(errUnavailable, errUnavailable)
	_, err := retry.Do(context.Background(), func(ctx context.Context) error {
		_, err := retrytest.Do(ctx, op.Call, retry.Policy{})
		return err
	}, retry.Policy{MaxAttempts: 1})
	require.NoError(t, err)
	assert.Equal(t, 3, op.Calls())
}

// A deferring Do tells its caller so: the error is a *StopError whose Stop
// is StopDeferred, distinct from an error the Classifier refused, and it
// still reads and matches as op's error.
func TestDeferringLoopSaysItDeferred(t *testing.T) {
	t.Parallel()
	var inner error
	_, _ = retrytest.Do(context.Background(), func(ctx context.Context) error {
		_, inner = retry.Do(ctx, retrytest.Always(errUnavailable).Call, retry.Policy{})
		return inner
	}, retry.Policy{MaxAttempts: 2})
	var stop *retry.StopError
	require.ErrorAs(t, inner, &stop)
	assert.Equal(t, retry.StopDeferred, stop.Stop)
	assert.Equal(t, 1, stop.Attempts)
	assert.ErrorIs(t, inner, errUnavailable)
	assert.NotErrorIs(t, inner, retry.ErrGaveUp)
	assert.EqualError(t, inner, errUnavailable.Error(), "no prefix piles up in stacked layers")
}

// The mark on op's ctx dies with the loop that made it: a ctx that op kept
// (a background job, context.WithoutCancel, a stored ctx) does not switch
// retrying off for every later Do made with it.
func TestNestedMarkEndsWithItsLoop(t *testing.T) {
	t.Parallel()
	var kept context.Context
	inside := retrytest.Script(errUnavailable)
	_, err := retry.Do(context.Background(), func(ctx context.Context) error {
		kept = context.WithoutCancel(ctx)
		tr, err := retrytest.Do(kept, inside.Call, retry.Policy{})
		assert.Equal(t, 1, tr.Attempts(), "while the outer loop runs, it owns retrying")
		return err
	}, retry.Policy{MaxAttempts: 2, BaseBackoff: time.Millisecond, Jitter: retry.NoJitter})
	require.NoError(t, err)
	require.Equal(t, 2, inside.Calls())

	op := retrytest.Script(errUnavailable, errUnavailable)
	tr, err := retrytest.Do(kept, op.Call, retry.Policy{})
	require.NoError(t, err)
	assert.Equal(t, 3, op.Calls(), "the outer loop has returned: nobody else will retry")
	assert.Equal(t, retry.StopSuccess, tr.Stop())
}

// A nested Do that shares the outer loop's Budget leaves the accounting to
// it: each failure costs one token, not two, and each success gives one
// refund, not two.
func TestNestedLoopSharingABudgetChargesOnce(t *testing.T) {
	t.Parallel()
	measure := func(t *testing.T, share bool) float64 {
		outer, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 100, TokenRatio: 0.1})
		require.NoError(t, err)
		inner := outer
		if !share {
			inner = nil
		}
		op := retrytest.Script(errUnavailable, errUnavailable, errUnavailable)
		_, err = retrytest.Do(context.Background(), func(ctx context.Context) error {
			_, err := retry.Do(ctx, op.Call, retry.Policy{Budget: inner})
			return err
		}, retry.Policy{Budget: outer})
		require.NoError(t, err)
		return outer.Tokens()
	}
	// Three failures and a success: 100 − 3 + 0.1.
	assert.InDelta(t, 97.1, measure(t, false), 1e-9, "the outer loop alone")
	assert.InDelta(t, 97.1, measure(t, true), 1e-9, "sharing the budget with the nested Do must not count twice")
}

// With a shared budget of 10 tokens, a dead service gets its retries cut
// after maxTokens/2 failing calls, nested or not.
func TestNestedSharedBudgetTripsWhereASingleLoopDoes(t *testing.T) {
	t.Parallel()
	trip := func(nested bool) int {
		b, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
		require.NoError(t, err)
		for call := 1; call <= 20; call++ {
			op := retrytest.Always(errUnavailable)
			_, err := retrytest.Do(context.Background(), func(ctx context.Context) error {
				if !nested {
					return op.Call(ctx)
				}
				_, err := retry.Do(ctx, op.Call, retry.Policy{Budget: b})
				return err
			}, retry.Policy{MaxAttempts: 2, Budget: b})
			if errors.Is(err, retry.ErrBudgetExhausted) {
				return call
			}
		}
		return -1
	}
	assert.Equal(t, trip(false), trip(true))
}
