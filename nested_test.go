package retry_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stormguard/retry"
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
	assert.Equal(t, "deferred to outer retry loop", inner.Reason())
	assert.Equal(t, 1, inner.Attempts())
}

func TestNestedLoopsCanOptIn(t *testing.T) {
	t.Parallel()
	calls, inner := layers(t, true)
	assert.Equal(t, int32(27), calls)
	assert.Equal(t, "attempts exhausted", inner.Reason())
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
