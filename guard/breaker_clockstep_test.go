package guard_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// A clock set back an hour (an operator, a VM resumed from an old
// snapshot, NTP on a fake clock's scale) must not blind the breaker: its
// window's buckets are then "from the future", and a window that trusted
// them would drop every count until the clock caught up, and send every
// call to a dead service. (The real clock counts on its monotonic
// reading, which a step of the wall clock does not move.)
func TestBreakerCountsAfterTheClockStepsBack(t *testing.T) {
	t.Parallel()
	clk := clock.NewMock()
	clk.Set(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	b, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 10, Clock: clk})
	require.NoError(t, err)
	p := retry.Policy{MaxAttempts: 1, Breaker: b, Clock: clk}
	ok := func(context.Context) error { return nil }
	for range 40 { // healthy for a whole window: every bucket is written
		_, _ = retry.Do(context.Background(), ok, p)
		clk.Add(time.Second)
	}
	clk.Set(clk.Now().Add(-time.Hour))

	var sent atomic.Int64
	for range 600 {
		_, _ = retry.Do(context.Background(), outage(&sent), p)
	}
	assert.Equal(t, guard.BreakerOpen, b.State())
	assert.Less(t, sent.Load(), int64(50), "the breaker opened after a few failures, not after the hour")
}

// With the real clock, the breaker's times are monotonic readings: a time
// it hands out (HalfOpensAt) is OpenFor after the failure that opened it.
func TestBreakerRealClockHalfOpensAt(t *testing.T) {
	t.Parallel()
	b, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, OpenFor: time.Hour})
	require.NoError(t, err)
	before := time.Now()
	_, _ = retry.Do(context.Background(), failOp, retry.Policy{MaxAttempts: 1, Breaker: b})
	require.Equal(t, guard.BreakerOpen, b.State())
	at := b.HalfOpensAt()
	assert.WithinDuration(t, before.Add(time.Hour), at, time.Second)
}
