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

		// A request queued now may wait a twentieth of QueueTimeout. (Of
		// the lowest Priority: a higher one shed would bar the lower ones.)
		start := time.Now()
		_, err = l.Acquire(context.Background(), shed.Sheddable)
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

// Once a request of a Priority has been shed, the lower ones are refused
// at once for a second, free slots or not, and the higher and equal ones
// are not: a server sheds a criticality only once it sheds all of the
// lower ones (the SRE book, "Handling Overload"), and a Sheddable request
// does not take, while the Critical shed wait to come back, a slot they
// will need.
func TestAShedBarsTheLowerPriorities(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: 1, QueueTimeout: 10 * time.Millisecond})
		hold, err := l.Acquire(context.Background(), shed.Critical)
		require.NoError(t, err)
		_, err = l.Acquire(context.Background(), shed.Critical) // waits 10 ms, is shed
		require.ErrorIs(t, err, shed.ErrShed)
		hold(shed.Success) // the slot is free again

		_, err = l.Acquire(context.Background(), shed.Sheddable)
		require.ErrorIs(t, err, shed.ErrShed, "a Sheddable request, with a slot free, after a Critical one was shed")
		var se *shed.ShedError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, "a higher priority is being shed", se.Reason)
		_, err = l.Acquire(context.Background(), shed.SheddablePlus)
		require.ErrorIs(t, err, shed.ErrShed)

		for _, p := range []shed.Priority{shed.Critical, shed.CriticalPlus} {
			release, err := l.Acquire(context.Background(), p)
			require.NoError(t, err, "%v is not under the bar", p)
			release(shed.Success)
		}

		time.Sleep(time.Second)
		release, err := l.Acquire(context.Background(), shed.Sheddable)
		require.NoError(t, err, "a second later, the bar has lapsed")
		release(shed.Success)
	})
}

// A shed of the lowest Priority bars nothing; a refusal of a Limiter
// without a queue bars the lower ones as a timeout does.
func TestABarWithoutAQueue(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: -1})
		hold, err := l.Acquire(context.Background(), shed.Critical)
		require.NoError(t, err)
		_, err = l.Acquire(context.Background(), shed.Sheddable)
		require.ErrorIs(t, err, shed.ErrShed)
		hold(shed.Success)
		release, err := l.Acquire(context.Background(), shed.Sheddable)
		require.NoError(t, err, "a Sheddable shed bars nothing")

		_, err = l.Acquire(context.Background(), shed.CriticalPlus)
		require.ErrorIs(t, err, shed.ErrShed)
		release(shed.Success)
		_, err = l.Acquire(context.Background(), shed.Critical)
		require.ErrorIs(t, err, shed.ErrShed, "barred by the CriticalPlus refused")
	})
}

// The zero QueueTimeout is a third of the minimum latency once one is
// measured (100 ms before): a request that waits longer than that for a
// slot would be answered later than twice the unloaded latency.
func TestDefaultQueueTimeoutFollowsTheLatency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{InitialLimit: 1, MinLimit: 1, MaxLimit: 1})
		waitFor := func() time.Duration {
			hold, err := l.Acquire(context.Background(), shed.Critical)
			require.NoError(t, err)
			start := time.Now()
			_, err = l.Acquire(context.Background(), shed.Critical)
			require.ErrorIs(t, err, shed.ErrShed)
			waited := time.Since(start)
			hold(shed.Ignored)
			time.Sleep(2 * time.Second) // let the bar lapse, and the queue empty
			return waited
		}
		assert.Equal(t, shed.DefaultQueueTimeout, waitFor(), "before any latency is measured")
		for range 25 { // one window of 30 ms requests
			release, err := l.Acquire(context.Background(), shed.Critical)
			require.NoError(t, err)
			time.Sleep(30 * time.Millisecond)
			release(shed.Success)
		}
		require.Equal(t, 30*time.Millisecond, l.Stats().MinLatency)
		assert.Equal(t, 10*time.Millisecond, waitFor(), "a third of the minimum latency")
	})
}

// While the lower Priorities are being turned away, a request of a higher
// one waits for a slot as long as DefaultQueueTimeout, not a third of the
// latency: the refusals of the lower ones keep the queue short, and a
// Critical request shed would cost its client a whole Retry-After.
func TestAHigherPriorityWaitsLongerWhileTheLowerAreTurnedAway(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, shed.Options{InitialLimit: 1, MinLimit: 1, MaxLimit: 1})
		for range 25 { // one window of 30 ms requests: a queue timeout of 10 ms
			release, err := l.Acquire(context.Background(), shed.Critical)
			require.NoError(t, err)
			time.Sleep(30 * time.Millisecond)
			release(shed.Success)
		}
		hold, err := l.Acquire(context.Background(), shed.Critical)
		require.NoError(t, err)
		start := time.Now()
		_, err = l.Acquire(context.Background(), shed.Critical)
		require.ErrorIs(t, err, shed.ErrShed)
		require.Equal(t, 10*time.Millisecond, time.Since(start), "nothing turned away yet")

		_, err = l.Acquire(context.Background(), shed.Sheddable)
		require.ErrorIs(t, err, shed.ErrShed, "barred")
		start = time.Now()
		_, err = l.Acquire(context.Background(), shed.Critical)
		require.ErrorIs(t, err, shed.ErrShed)
		assert.Equal(t, shed.DefaultQueueTimeout, time.Since(start), "while Sheddable requests are turned away")
		hold(shed.Ignored)
	})
}
