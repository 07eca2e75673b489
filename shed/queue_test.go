package shed_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/shed"
)

// queued starts n callers that wait, in order, and records the order in
// which they are admitted.
type queued struct {
	mu    sync.Mutex
	order []int
	shed  []int
	wg    sync.WaitGroup
}

func (q *queued) enter(l *shed.Limiter, i int) {
	q.wg.Go(func() {
		release, err := l.Acquire(context.Background(), shed.Critical)
		q.mu.Lock()
		if err != nil {
			q.shed = append(q.shed, i)
		} else {
			q.order = append(q.order, i)
		}
		q.mu.Unlock()
		if err == nil {
			release(shed.Success)
		}
	})
	synctest.Wait()
}

// A burst is served oldest first: the queue absorbs it.
func TestBurstIsServedInOrder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, QueueTimeout: time.Second})
		hold, err := l.Acquire(context.Background(), shed.Critical)
		require.NoError(t, err)
		var q queued
		for i := range 4 {
			q.enter(l, i)
		}
		hold(shed.Success)
		q.wg.Wait()
		assert.Equal(t, []int{0, 1, 2, 3}, q.order)
	})
}

// Once the queue has stayed busy for longer than QueueTimeout, the newest
// are served first (adaptive LIFO), and a request queued then may wait a
// twentieth of QueueTimeout (CoDel).
func TestSustainedOverloadServesNewestFirst(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const timeout = 200 * time.Millisecond
		l := newLimiter(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, QueueTimeout: timeout})
		hold, err := l.Acquire(context.Background(), shed.Critical)
		require.NoError(t, err)

		// Two callers that keep the queue busy: each waits until it times
		// out and comes back at once; offset by 5 ms, they never both
		// leave it, so it never empties.
		ctx, stop := context.WithCancel(context.Background())
		var busy sync.WaitGroup
		for range 2 {
			busy.Go(func() {
				for ctx.Err() == nil {
					if release, err := l.Acquire(ctx, shed.Sheddable); err == nil {
						time.Sleep(time.Millisecond)
						release(shed.Ignored)
					}
				}
			})
			synctest.Wait()
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(timeout) // sustained: busy for longer than QueueTimeout

		// A request queued now may wait a twentieth of QueueTimeout.
		start := time.Now()
		_, err = l.Acquire(context.Background(), shed.CriticalPlus)
		require.ErrorIs(t, err, shed.ErrShed)
		assert.Equal(t, timeout/20, time.Since(start))

		// And the newest are served first.
		var q queued
		for i := range 3 {
			q.enter(l, i)
		}
		hold(shed.Success)
		q.wg.Wait()
		assert.Equal(t, []int{2, 1, 0}, q.order, "newest first")
		stop()
		busy.Wait()
	})
}

// Under real concurrency, with callers that give up, time out and
// release at once, the count in flight never passes the limit and every
// slot comes back.
func TestNeverAboveTheLimit(t *testing.T) {
	t.Parallel()
	l := newLimiter(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 4, MaxQueue: 8, QueueTimeout: time.Millisecond})
	var inside, most atomic.Int64
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 300 {
				ctx, cancel := context.WithCancel(context.Background())
				if (g+i)%7 == 0 {
					cancel()
				}
				p := shed.Priority(i%4) + shed.Sheddable
				release, err := l.Acquire(ctx, p)
				cancel()
				if err != nil {
					continue
				}
				n := inside.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				inside.Add(-1)
				release(shed.Success)
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, most.Load(), int64(4))
	s := l.Stats()
	assert.Zero(t, s.InFlight)
	assert.Zero(t, s.Queued)
}
