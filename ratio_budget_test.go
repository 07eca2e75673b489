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

// newRatioBudget is a ratio budget of ratio 1 whose floor is one retry,
// on clk: its Tokens are the first attempts counted, plus one, less the
// retries.
func newRatioBudget(t *testing.T, clk guard.Clock) *guard.Budget {
	t.Helper()
	b, err := guard.NewBudget(guard.BudgetOptions{Ratio: 1, MinPerSecond: 0.1, TTL: 10 * time.Second, Clock: clk})
	require.NoError(t, err)
	return b
}

// TestLoopOfOwnCountsForARatioBudget: Admit counts a first attempt that
// it admits, and Next the retry it allows, as Do does.
func TestLoopOfOwnCountsForARatioBudget(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewAutoClock()
	b := newRatioBudget(t, clk)
	p := retry.Policy{MaxAttempts: 3, Budget: b, Clock: clk}
	var pr retry.Progress
	require.Equal(t, retry.StopNone, p.Admit(&pr, nil).Stop)
	assert.Equal(t, 2.0, b.Tokens(), "a first attempt counted")
	a := retry.Attempt{Number: 1, Err: errors.New("503")}
	pr.Attempts = 1
	v := p.Next(context.Background(), &a, &pr)
	require.Equal(t, retry.StopNone, v.Stop)
	assert.Equal(t, 1.0, b.Tokens(), "the retry counted as Next allowed it")
	require.Equal(t, retry.StopNone, p.Admit(&pr, a.Err).Stop)
	assert.Equal(t, 1.0, b.Tokens(), "a retry's admission counts nothing more")
}

// TestHedgeCountsForARatioBudget: Hedge counts its first attempt, and
// each hedge as a retry.
func TestHedgeCountsForARatioBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := newRatioBudget(t, nil)
		h := &retry.Hedger{Delay: 10 * time.Millisecond, MaxFraction: 1}
		var n atomic.Int32
		_, err := retry.Hedge(context.Background(), h, func(ctx context.Context) error {
			if n.Add(1) == 1 { // the first is slow: a hedge goes after 10 ms
				select {
				case <-time.After(time.Second):
				case <-ctx.Done():
				}
				return ctx.Err()
			}
			return nil
		}, retry.Policy{Budget: b})
		require.NoError(t, err)
		assert.Equal(t, int32(2), n.Load())
		assert.Equal(t, 1.0, b.Tokens(), "one first attempt and one hedge")
	})
}
