package guard_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// flight counts the attempts inside an op at once, and the most seen.
type flight struct{ now, peak atomic.Int64 }

func (f *flight) enter() {
	n := f.now.Add(1)
	for p := f.peak.Load(); n > p && !f.peak.CompareAndSwap(p, n); p = f.peak.Load() {
	}
}

func (f *flight) leave() { f.now.Add(-1) }

func newLimiter(t *testing.T, o guard.LimiterOptions) *guard.Limiter {
	t.Helper()
	l, err := guard.NewLimiter(o)
	require.NoError(t, err)
	return l
}

func TestLimiterOptionsInvalid(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o     guard.LimiterOptions
		field string
	}{
		{guard.LimiterOptions{Max: -1}, "LimiterOptions.Max"},
		{guard.LimiterOptions{QueueTimeout: -time.Second}, "LimiterOptions.QueueTimeout"},
	} {
		_, err := guard.NewLimiter(tc.o)
		require.ErrorIs(t, err, guard.ErrInvalidOptions)
		assert.Contains(t, err.Error(), tc.field)
		_, err = guard.NewLimiters(tc.o, 10)
		require.ErrorIs(t, err, guard.ErrInvalidOptions)
	}
	_, err := guard.NewLimiters(guard.LimiterOptions{}, 0)
	require.ErrorIs(t, err, guard.ErrInvalidOptions)
	assert.Contains(t, err.Error(), "maxKeys")
}

// However many goroutines call, no more than Max attempts are ever in
// flight, and the limit is reached: the others wait in the queue.
func TestLimiterFixedBoundsConcurrency(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		l    func(t *testing.T) *guard.Limiter
		max  int64
	}{
		{"Max 4", func(t *testing.T) *guard.Limiter {
			return newLimiter(t, guard.LimiterOptions{Max: 4, MaxQueue: 100, QueueTimeout: time.Minute})
		}, 4},
		{"zero Limiter", func(*testing.T) *guard.Limiter { return new(guard.Limiter) }, 25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				l := tc.l(t)
				var f flight
				var wg sync.WaitGroup
				var failed atomic.Int64
				for range 50 {
					wg.Go(func() {
						_, err := retry.Do(t.Context(), func(context.Context) error {
							f.enter()
							defer f.leave()
							time.Sleep(time.Millisecond)
							return nil
						}, retry.Policy{Limiter: l})
						if err != nil {
							failed.Add(1)
						}
					})
				}
				wg.Wait()
				assert.Equal(t, tc.max, f.peak.Load(), "most in flight")
				if tc.max < 50 {
					assert.Zero(t, failed.Load(), "calls refused: the queue holds them all")
				}
				s := l.Stats()
				assert.Equal(t, guard.LimiterStats{Limit: int(tc.max), Admitted: 50 - uint64(failed.Load()), Refused: uint64(failed.Load())}, s)
			})
		})
	}
}

// The same on the real clock, with the race detector: goroutines that
// share a Limiter never have more than Max attempts in flight.
func TestLimiterFixedBoundsConcurrencyRealTime(t *testing.T) {
	t.Parallel()
	l := newLimiter(t, guard.LimiterOptions{Max: 3, MaxQueue: -1})
	var f flight
	var wg sync.WaitGroup
	var refused atomic.Int64
	for range 8 {
		wg.Go(func() {
			for range 200 {
				_, err := retry.Do(t.Context(), func(context.Context) error {
					f.enter()
					defer f.leave()
					return nil
				}, retry.Policy{Limiter: l, MaxAttempts: 1})
				if errors.Is(err, retry.ErrLimited) {
					refused.Add(1)
				} else {
					require.NoError(t, err)
				}
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, f.peak.Load(), int64(3), "most in flight")
	s := l.Stats()
	assert.Equal(t, 0, s.InFlight)
	assert.Equal(t, uint64(1600), s.Admitted+s.Refused)
	assert.Equal(t, uint64(refused.Load()), s.Refused)
}

// hold runs a Do through l whose attempt holds a slot until release is
// closed; it returns once the attempt runs, and a channel with its error.
func hold(t *testing.T, l *guard.Limiter, release <-chan struct{}) <-chan error {
	t.Helper()
	running, done := make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := retry.Do(context.Background(), func(context.Context) error {
			close(running)
			<-release
			return nil
		}, retry.Policy{Limiter: l, MaxAttempts: 1})
		done <- err
	}()
	<-running
	return done
}

// An attempt that finds the Limiter full waits in its queue for a slot,
// for QueueTimeout at most; then it is refused, never sent, with
// StopLimited and an error matching ErrLimited and ErrGaveUp.
func TestLimiterQueueTimeout(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, guard.LimiterOptions{Max: 1, QueueTimeout: 50 * time.Millisecond})
		release := make(chan struct{})
		held := hold(t, l, release)

		start := time.Now()
		sent := false
		tr, err := retry.Do(t.Context(), func(context.Context) error { sent = true; return nil }, retry.Policy{Limiter: l})
		require.ErrorIs(t, err, retry.ErrLimited)
		require.ErrorIs(t, err, retry.ErrGaveUp)
		assert.Equal(t, retry.StopLimited, tr.Stop())
		assert.Equal(t, "limited", tr.Stop().String())
		assert.Contains(t, tr.String(), "limited", "the Trace shows why the call stopped")
		assert.Equal(t, "retry: limited before the first attempt", err.Error())
		assert.False(t, sent, "a refused attempt is sent")
		assert.Equal(t, 50*time.Millisecond, time.Since(start), "waited in the queue")
		assert.Equal(t, uint64(1), l.Stats().Refused)

		// A slot that comes free within QueueTimeout goes to the waiter.
		got := make(chan error, 1)
		go func() {
			_, err := retry.Do(t.Context(), func(context.Context) error { return nil }, retry.Policy{Limiter: l})
			got <- err
		}()
		synctest.Wait()
		assert.Equal(t, 1, l.Stats().Queued)
		time.Sleep(20 * time.Millisecond)
		close(release)
		require.NoError(t, <-held)
		require.NoError(t, <-got)
		assert.Equal(t, guard.LimiterStats{Limit: 1, Admitted: 2, Refused: 1}, l.Stats())
	})
}

// With no queue, a full Limiter refuses at once; a caller whose ctx ends
// while it waits stops with StopContextDone.
func TestLimiterNoQueueAndCancel(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, guard.LimiterOptions{Max: 1, MaxQueue: -1})
		release := make(chan struct{})
		held := hold(t, l, release)
		start := time.Now()
		tr, err := retry.Do(t.Context(), func(context.Context) error { return nil }, retry.Policy{Limiter: l})
		require.ErrorIs(t, err, retry.ErrLimited)
		assert.Equal(t, retry.StopLimited, tr.Stop())
		assert.Zero(t, time.Since(start), "no queue: refused at once")

		q := newLimiter(t, guard.LimiterOptions{Max: 1, QueueTimeout: time.Hour})
		heldQ := hold(t, q, release)
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		tr, err = retry.Do(ctx, func(context.Context) error { return nil }, retry.Policy{Limiter: q})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.NotErrorIs(t, err, retry.ErrLimited)
		assert.Equal(t, retry.StopContextDone, tr.Stop())
		assert.Equal(t, time.Second, time.Since(start), "waited until ctx ended")
		close(release)
		require.NoError(t, <-held)
		require.NoError(t, <-heldQ)
	})
}

// A refused attempt is not sent, so it counts as nothing for the Budget,
// the Breaker and the Throttle: not a failure, not a request.
func TestLimiterRefusalNotCounted(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, guard.LimiterOptions{Max: 1, MaxQueue: -1})
		br, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, FailureRatio: 0.1})
		require.NoError(t, err)
		th, err := guard.NewThrottle(guard.ThrottleOptions{})
		require.NoError(t, err)
		b, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
		require.NoError(t, err)
		release := make(chan struct{})
		held := hold(t, l, release)
		p := retry.Policy{Limiter: l, Breaker: br, Throttle: th, Budget: b, Jitter: retry.NoJitter}
		for range 50 {
			tr, err := retry.Do(t.Context(), func(context.Context) error { return errors.New("503") }, p)
			require.ErrorIs(t, err, retry.ErrLimited)
			require.Equal(t, retry.StopLimited, tr.Stop())
		}
		assert.Equal(t, guard.BreakerClosed, br.State(), "refusals opened the breaker")
		assert.Zero(t, th.RejectProbability(), "refusals counted by the throttle")
		assert.Equal(t, 10.0, b.Tokens(), "refusals spent the budget")
		close(release)
		require.NoError(t, <-held)
		assert.Equal(t, uint64(50), l.Stats().Refused)
	})
}

// A slot is held for one attempt, never across the wait between attempts:
// while one caller waits to retry, another gets the slot at once.
func TestLimiterSlotReleasedDuringBackoff(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, guard.LimiterOptions{Max: 1, MaxQueue: -1})
		p := retry.Policy{Limiter: l, Jitter: retry.NoJitter, BaseBackoff: time.Second}
		failedOnce := make(chan struct{})
		var attempts atomic.Int64
		done := make(chan error, 1)
		go func() {
			_, err := retry.Do(t.Context(), func(context.Context) error {
				if attempts.Add(1) == 1 {
					close(failedOnce)
					return errors.New("503")
				}
				return nil
			}, p)
			done <- err
		}()
		<-failedOnce
		synctest.Wait() // the first caller sleeps its backoff
		assert.Equal(t, 0, l.Stats().InFlight, "slot held across the wait")
		start := time.Now()
		_, err := retry.Do(t.Context(), func(context.Context) error { return nil }, p)
		require.NoError(t, err, "the second caller got no slot")
		assert.Zero(t, time.Since(start))
		require.NoError(t, <-done)
		assert.Equal(t, int64(2), attempts.Load())
		assert.Equal(t, guard.LimiterStats{Limit: 1, Admitted: 3}, l.Stats())
	})
}

// A Do inside an attempt that holds a slot of the same Limiter takes no
// second one: with a limit of one it would wait for itself. It holds for
// an outer loop of one attempt, and for an inner one that retries on its
// own.
func TestLimiterNestedTakesOneSlot(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		outer, inner retry.Policy
	}{
		{"outer retries", retry.Policy{}, retry.Policy{}},
		{"outer makes one attempt", retry.Policy{MaxAttempts: 1}, retry.Policy{}},
		{"inner retries nested", retry.Policy{}, retry.Policy{RetryNested: true}},
		{"outer nested in a loop without a limiter", retry.Policy{}, retry.Policy{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLimiter(t, guard.LimiterOptions{Max: 1, MaxQueue: -1})
			tc.outer.Limiter, tc.inner.Limiter = l, l
			var innerRan bool
			call := func(ctx context.Context) error {
				_, err := retry.Do(ctx, func(ctx context.Context) error {
					_, err := retry.Do(ctx, func(context.Context) error {
						innerRan = true
						assert.Equal(t, 1, l.Stats().InFlight)
						return nil
					}, tc.inner)
					return err
				}, tc.outer)
				return err
			}
			var err error
			if tc.name == "outer nested in a loop without a limiter" {
				_, err = retry.Do(t.Context(), call, retry.Policy{})
			} else {
				err = call(t.Context())
			}
			require.NoError(t, err)
			assert.True(t, innerRan)
			assert.Equal(t, guard.LimiterStats{Limit: 1, Admitted: 1}, l.Stats())
		})
	}
}

// A Do with a Limiter of another downstream inside an attempt takes a
// slot of that one.
func TestLimiterNestedOtherLimiter(t *testing.T) {
	t.Parallel()
	a := newLimiter(t, guard.LimiterOptions{Max: 1, MaxQueue: -1})
	b := newLimiter(t, guard.LimiterOptions{Max: 1, MaxQueue: -1})
	_, err := retry.Do(t.Context(), func(ctx context.Context) error {
		_, err := retry.Do(ctx, func(context.Context) error {
			assert.Equal(t, 1, b.Stats().InFlight)
			return nil
		}, retry.Policy{Limiter: b})
		return err
	}, retry.Policy{Limiter: a})
	require.NoError(t, err)
	assert.Equal(t, uint64(1), a.Stats().Admitted)
	assert.Equal(t, uint64(1), b.Stats().Admitted)
}

// A panic in op gives the slot back.
func TestLimiterPanicReleases(t *testing.T) {
	t.Parallel()
	l := newLimiter(t, guard.LimiterOptions{Max: 1})
	assert.Panics(t, func() {
		_, _ = retry.Do(t.Context(), func(context.Context) error { panic("boom") }, retry.Policy{Limiter: l})
	})
	assert.Equal(t, 0, l.Stats().InFlight)
	_, err := retry.Do(t.Context(), func(context.Context) error { return nil }, retry.Policy{Limiter: l, MaxAttempts: 1})
	require.NoError(t, err)
}
