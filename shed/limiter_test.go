package shed_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/shed"
)

func newLimiter(t *testing.T, o shed.Options) *shed.Limiter {
	t.Helper()
	l, err := shed.New(o)
	require.NoError(t, err)
	return l
}

// The zero Options is adaptive, with the documented defaults.
func TestZeroOptions(t *testing.T) {
	t.Parallel()
	l := newLimiter(t, shed.Options{})
	s := l.Stats()
	assert.Equal(t, shed.DefaultInitialLimit, s.Limit)
	assert.Zero(t, s.InFlight)
	release, err := l.Acquire(context.Background(), shed.Critical)
	require.NoError(t, err)
	assert.Equal(t, 1, l.Stats().InFlight)
	release(shed.Success)
	assert.Equal(t, 0, l.Stats().InFlight)
	assert.EqualValues(t, 1, l.Stats().Admitted)
}

// A full limit queues, a full queue sheds at once with a wait in whole
// seconds, and a release hands the slot to the one that waits.
func TestFixedLimitQueuesThenSheds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 2, MaxQueue: 1, MaxRetryAfter: 5 * time.Second})
		ctx := context.Background()
		r1, err := l.Acquire(ctx, shed.Critical)
		require.NoError(t, err)
		r2, err := l.Acquire(ctx, shed.Critical)
		require.NoError(t, err)

		got := make(chan error, 1)
		go func() {
			release, err := l.Acquire(ctx, shed.Critical)
			if err == nil {
				release(shed.Success)
			}
			got <- err
		}()
		synctest.Wait()
		assert.Equal(t, 1, l.Stats().Queued)

		_, err = l.Acquire(ctx, shed.Critical)
		require.ErrorIs(t, err, shed.ErrShed)
		ra := shed.RetryAfterOf(err)
		assert.GreaterOrEqual(t, ra, time.Second)
		assert.LessOrEqual(t, ra, 5*time.Second)
		assert.Zero(t, ra%time.Second, "whole seconds: %v", ra)

		r1(shed.Success)
		require.NoError(t, <-got)
		r2(shed.Success)
		s := l.Stats()
		assert.EqualValues(t, 3, s.Admitted)
		assert.EqualValues(t, 1, s.Shed)
		assert.Zero(t, s.InFlight+s.Queued)
	})
}

// A request that waits its QueueTimeout is shed, and counted as a timeout.
func TestQueueTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, QueueTimeout: 40 * time.Millisecond})
		release, err := l.Acquire(context.Background(), shed.Critical)
		require.NoError(t, err)
		start := time.Now()
		_, err = l.Acquire(context.Background(), shed.Critical)
		require.ErrorIs(t, err, shed.ErrShed)
		assert.Equal(t, 40*time.Millisecond, time.Since(start))
		var se *shed.ShedError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "queue timeout", se.Reason)
		assert.EqualValues(t, 1, l.Stats().QueueTimeouts)
		release(shed.Success)
	})
}

// A caller that gives up while it waits gets its ctx's error, not ErrShed,
// and leaves the queue.
func TestCancelWhileQueued(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1})
		release, err := l.Acquire(context.Background(), shed.Critical)
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		_, err = l.Acquire(ctx, shed.Critical)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, shed.ErrShed)
		assert.Zero(t, l.Stats().Queued)
		assert.Zero(t, l.Stats().Shed)
		release(shed.Success)
		assert.Zero(t, l.Stats().InFlight)
	})
}

// A higher Priority takes the queue place of a lower one, and is served
// before it.
func TestPriorityOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: 2, QueueTimeout: time.Second})
		ctx := context.Background()
		hold, err := l.Acquire(ctx, shed.Critical)
		require.NoError(t, err)

		var mu sync.Mutex
		var order []string
		var wg sync.WaitGroup
		errs := map[string]error{}
		enter := func(name string, p shed.Priority) {
			wg.Go(func() {
				release, err := l.Acquire(ctx, p)
				mu.Lock()
				errs[name] = err
				if err == nil {
					order = append(order, name)
				}
				mu.Unlock()
				if err == nil {
					release(shed.Success)
				}
			})
			synctest.Wait()
		}
		enter("sheddable-1", shed.Sheddable)
		enter("sheddable-2", shed.Sheddable)
		enter("critical", shed.Critical) // full: evicts the newest sheddable
		enter("critical-plus", shed.CriticalPlus)
		enter("sheddable-3", shed.Sheddable) // full of higher ones: shed at once

		hold(shed.Success)
		wg.Wait()
		assert.Equal(t, []string{"critical-plus", "critical"}, order)
		for _, name := range []string{"sheddable-1", "sheddable-2", "sheddable-3"} {
			require.ErrorIs(t, errs[name], shed.ErrShed, name)
		}
		var se *shed.ShedError
		require.ErrorAs(t, errs["sheddable-2"], &se)
		assert.Equal(t, "evicted", se.Reason)
		require.ErrorAs(t, errs["sheddable-3"], &se)
		assert.Equal(t, "queue full", se.Reason)
	})
}

// Invalid options are refused with an error that names the field.
func TestInvalidOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		o     shed.Options
		field string
	}{
		{"algorithm", shed.Options{Algorithm: 9}, "Algorithm"},
		{"initial negative", shed.Options{InitialLimit: -1}, "InitialLimit"},
		{"min negative", shed.Options{MinLimit: -1}, "MinLimit"},
		{"max below min", shed.Options{MinLimit: 10, MaxLimit: 5, InitialLimit: 5}, "MaxLimit"},
		{"initial above max", shed.Options{InitialLimit: 50, MaxLimit: 10}, "InitialLimit"},
		{"queue timeout", shed.Options{QueueTimeout: -time.Second}, "QueueTimeout"},
		{"retry after", shed.Options{MaxRetryAfter: 500 * time.Millisecond}, "MaxRetryAfter"},
		{"tolerance", shed.Options{Tolerance: 0.5}, "Tolerance"},
		{"smoothing", shed.Options{Smoothing: 2}, "Smoothing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := shed.New(tc.o)
			require.ErrorIs(t, err, shed.ErrInvalidOptions)
			assert.Contains(t, err.Error(), tc.field)
		})
	}
	assert.Zero(t, shed.RetryAfterOf(errors.New("other")))
}
