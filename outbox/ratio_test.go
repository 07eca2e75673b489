package outbox_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A ratio budget on the Outbox's Policy counts each op's first attempt,
// each retry Next allows, and a retry it refused once the op, having
// waited, is sent after all: so the ops' retries stay within the budget's
// bound however long they wait.
func TestRatioBudgetCountsWhatTheOutboxSends(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	// Ratio 1 over a day, and a floor of 0.35 retries a day: no whole one.
	budget, err := guard.NewBudget(guard.BudgetOptions{Ratio: 1, MinPerSecond: 4e-6, TTL: 24 * time.Hour, Clock: clk})
	require.NoError(t, err)
	floor := budget.Tokens()
	require.Less(t, floor, 1.0)
	budget.Retrying() // another caller's retry: the op's first failure cannot be retried yet
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{
		Clock:  clk,
		Policy: retry.Policy{MaxAttempts: 3, Budget: budget, Clock: clk},
	})
	var calls atomic.Int32
	o.Handle("pay", func(context.Context, outbox.Op) error {
		if calls.Add(1) == 1 {
			return errors.New("503")
		}
		return nil
	})
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	run(t, o)

	// The first attempt failed, Next refused the retry, and the op waits.
	w := recvWait(t, clk)
	assert.Equal(t, int32(1), calls.Load())
	assert.InDelta(t, floor, budget.Tokens(), 1e-9, "the op's first attempt earned the other caller's retry")
	budget.Started() // another call: room for one retry
	clk.Add(w)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Succeeded, r.State)
	assert.Equal(t, 2, r.Attempts)
	assert.InDelta(t, floor, budget.Tokens(), 1e-9, "the retry sent after the wait was counted")
}

// recvWait returns the next wait the Outbox starts on clk.
func recvWait(t *testing.T, clk *retrytest.Clock) time.Duration {
	t.Helper()
	select {
	case w := <-clk.Waits():
		return w
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the Outbox started no wait")
		return 0
	}
}
