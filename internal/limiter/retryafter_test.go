package limiter_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/stormguard/retry/internal/limiter"
)

// A server whose work hangs admits nothing while it sheds everything: a
// spread counted per request admitted would tell the shed to stay away for
// the whole maxWait, long after the server has healed. Counted per
// request the limit lets through at the recent latency, the spread stays
// what the server can serve: 1,000 shed in a second by a limit of 2 at
// 10 ms (200 a second) spread over 5 windows of the 1 s base.
func TestRetryAfterOfAHungServer(t *testing.T) {
	t.Parallel()
	l := limiter.New(limiter.Config{Algorithm: limiter.Fixed, Initial: 2, Min: 1, Max: 2})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range limiter.Window {
		assert.True(t, l.TryAcquire(0))
		l.Release(now, now.Add(10*time.Millisecond), limiter.Success)
	}
	assert.Equal(t, 2*time.Second, l.RetryAfter(now, 30*time.Second, 0.99, 0), "nothing shed yet: 1s + 0.99 × the least window, 2s, rounded down")
	assert.True(t, l.TryAcquire(0)) // the work that hangs
	assert.True(t, l.TryAcquire(0))
	for i := range 1000 {
		adm, _ := l.Enqueue(&limiter.Waiter{Notify: func(bool) {}}, 2, now.Add(time.Duration(i)*time.Millisecond))
		assert.Equal(t, limiter.Refused, adm)
	}
	got := l.RetryAfter(now.Add(time.Second), 30*time.Second, 0.99, 0)
	assert.Equal(t, 5*time.Second, got, "1s + 0.99 × 5 windows of 1s, rounded down")
	assert.Equal(t, time.Second, l.RetryAfter(now.Add(time.Second), 30*time.Second, 0, 0), "u = 0: the base")
}

// While the lower levels are turned away by the bar, a shed request of a
// level above it is told to come back within a least window of one second,
// not two: its own refusals are few, and its clients' requests are the
// work the server is for. The levels turned away keep the two seconds.
func TestRetryAfterWhileTheLowerAreTurnedAway(t *testing.T) {
	t.Parallel()
	l := limiter.New(limiter.Config{Algorithm: limiter.Fixed, Initial: 2, Min: 1, Max: 2})
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range limiter.Window {
		assert.True(t, l.TryAcquire(0))
		l.Release(now, now.Add(10*time.Millisecond), limiter.Success)
	}
	assert.True(t, l.TryAcquire(2))
	assert.True(t, l.TryAcquire(2))
	const critical = 2
	assert.Equal(t, 2*time.Second, l.RetryAfter(now, 30*time.Second, 0.99, critical), "nothing turned away: the least window is 2s")
	adm, _ := l.Enqueue(&limiter.Waiter{Notify: func(bool) {}}, critical, now)
	assert.Equal(t, limiter.Refused, adm)
	adm, _ = l.Enqueue(&limiter.Waiter{Notify: func(bool) {}}, 0, now)
	assert.Equal(t, limiter.Barred, adm, "a level under a Critical shed")
	assert.Equal(t, time.Second, l.RetryAfter(now, 30*time.Second, 0.99, critical), "1s + 0.99 × 1s, rounded down")
	assert.Equal(t, 2*time.Second, l.RetryAfter(now, 30*time.Second, 0.99, 0), "the level turned away")
	assert.Equal(t, 2*time.Second, l.RetryAfter(now.Add(limiter.BarFor), 30*time.Second, 0.99, critical), "a second later, nothing is turned away")
}
