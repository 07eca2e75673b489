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

// Inside a synctest bubble the real clock is fake: leave Policy.Clock nil and
// Do's real timers and context deadlines run on the bubble's time, which
// jumps ahead whenever every goroutine is waiting.
func TestSynctestRunsTheRealClockPath(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		op := retrytest.Script(errUnavailable, errUnavailable)
		tr, err := retry.Do(context.Background(), op.Call, retry.Policy{Jitter: retry.NoJitter})
		require.NoError(t, err)
		assert.Equal(t, 600*time.Millisecond, time.Since(start))
		assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}, tr.Waits())
		assert.Equal(t, 600*time.Millisecond, tr.Elapsed())
	})
}

func TestSynctestCtxDeadlineGivesUpBeforeSleeping(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		start := time.Now()
		op := retrytest.Always(errUnavailable)
		_, err := retry.Do(ctx, op.Call, retry.Policy{Jitter: retry.NoJitter})
		require.ErrorIs(t, err, retry.ErrDeadline)
		assert.Equal(t, 2, op.Calls())
		assert.Equal(t, 200*time.Millisecond, time.Since(start), "gave up at once instead of sleeping 400ms into the deadline")
		assert.NoError(t, ctx.Err())
	})
}

func TestSynctestCancelIsSeenMidWait(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		time.AfterFunc(100*time.Millisecond, cancel)
		op := retrytest.Always(errUnavailable)
		_, err := retry.Do(ctx, op.Call, retry.Policy{BaseBackoff: time.Hour, Jitter: retry.NoJitter})
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, 100*time.Millisecond, time.Since(start), "the cancel ended the hour-long wait at once")
		assert.Equal(t, 1, op.Calls())
	})
}

func TestSynctestAttemptTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		n := 0
		op := func(ctx context.Context) error {
			n++
			if n == 1 {
				<-ctx.Done() // the first attempt hangs until its timeout
				return ctx.Err()
			}
			return nil
		}
		start := time.Now()
		tr, err := retry.Do(context.Background(), op, retry.Policy{AttemptTimeout: time.Second, Jitter: retry.NoJitter})
		require.NoError(t, err)
		assert.Equal(t, 2, tr.Attempts())
		assert.Equal(t, time.Second+200*time.Millisecond, time.Since(start))
	})
}
