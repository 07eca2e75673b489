package retry_test

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The clocks of github.com/benbjohnson/clock assign to Policy.Clock as they
// are, and so does retrytest's.
var (
	_ retry.Clock = clock.NewMock()
	_ retry.Clock = clock.New()
	_ retry.Clock = retrytest.NewClock()
)

// On a *clock.Mock, Do leaves no timer behind, whichever way it ends:
// WaitForAllTimers then has nothing to fire and time stays put.
func TestNoTimerLeftOnABenbjohnsonMock(t *testing.T) {
	t.Parallel()
	t.Run("success under timeouts", func(t *testing.T) {
		t.Parallel()
		clk := clock.NewMock()
		_, err := retry.Do(context.Background(), retrytest.Script().Call, retry.Policy{Clock: clk, MaxElapsed: time.Minute, AttemptTimeout: time.Second})
		require.NoError(t, err)
		before := clk.Now()
		assert.Equal(t, before, clk.WaitForAllTimers(), "a timer was left armed on the clock")
	})
	t.Run("canceled as the wait starts", func(t *testing.T) {
		t.Parallel()
		clk := clock.NewMock()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		p := retry.Policy{Clock: clk, MaxElapsed: time.Minute, AttemptTimeout: time.Second,
			OnRetry: func(context.Context, retry.Attempt, time.Duration) { cancel() }}
		tr, err := retry.Do(ctx, retrytest.Always(errUnavailable).Call, p)
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, retry.StopContextDone, tr.Stop())
		before := clk.Now()
		assert.Equal(t, before, clk.WaitForAllTimers(), "a timer was left armed on the clock")
	})
	t.Run("attempt timeout on the mock", func(t *testing.T) {
		t.Parallel()
		clk := clock.NewMock()
		op := func(ctx context.Context) error {
			clk.Add(2 * time.Second) // the attempt takes longer than its timeout
			<-ctx.Done()
			return ctx.Err()
		}
		tr, err := retry.Do(context.Background(), op, retry.Policy{Clock: clk, MaxAttempts: 1, AttemptTimeout: time.Second})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, "attempt timed out", tr.Last().Reason)
		before := clk.Now()
		assert.Equal(t, before, clk.WaitForAllTimers())
	})
}

// Any other fake adapts in a few lines: here one with only Now and
// AfterFunc, as k8s.io/utils/clock's fake has.
func TestAnotherFakeAdaptsInAFewLines(t *testing.T) {
	t.Parallel()
	fake := &afterFuncFake{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	clk := adapted{fake}
	p := retry.Policy{Clock: clk, Jitter: retry.NoJitter, MaxElapsed: time.Minute}
	done := make(chan result, 1)
	op := retrytest.Script(errUnavailable, errUnavailable)
	go func() {
		tr, err := retry.Do(context.Background(), op.Call, p)
		done <- result{tr, err}
	}()
	for stepped := 0; ; {
		select {
		case r := <-done:
			require.NoError(t, r.err)
			assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}, r.trace.Waits())
			assert.Equal(t, 2, stepped)
			assert.Equal(t, 0, fake.pending(), "Do stopped every timer it set")
			return
		default:
		}
		if d, ok := fake.nextWait(); ok {
			fake.advance(d)
			stepped++
		}
		runtime.Gosched()
	}
}

// adapted turns afterFuncFake into a retry.Clock, as the Clock doc shows.
type adapted struct{ *afterFuncFake }

func (c adapted) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	stop := c.AfterFunc(d.Sub(c.Now()), cancel)
	return ctx, func() { stop(); cancel() }
}

func (c adapted) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return c.WithDeadline(parent, c.Now().Add(d))
}

// afterFuncFake is a minimal fake clock of another design: Now, AfterFunc,
// and a test-side advance.
type afterFuncFake struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*fakeTimer]bool
}

type fakeTimer struct {
	at time.Time
	f  func()
}

func (c *afterFuncFake) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *afterFuncFake) AfterFunc(d time.Duration, f func()) (stop func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.timers == nil {
		c.timers = map[*fakeTimer]bool{}
	}
	t := &fakeTimer{at: c.now.Add(d), f: f}
	c.timers[t] = true
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.timers, t)
	}
}

func (c *afterFuncFake) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// nextWait returns how far the nearest timer lies ahead, if it is a wait:
// the waits here are under a second, and the MaxElapsed deadline is at
// least 58s ahead whenever the test looks.
func (c *afterFuncFake) nextWait() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next time.Duration
	found := false
	for t := range c.timers {
		if d := t.at.Sub(c.now); !found || d < next {
			next, found = d, true
		}
	}
	return next, found && next < 10*time.Second
}

func (c *afterFuncFake) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []func()
	for t := range c.timers {
		if !t.at.After(c.now) {
			due = append(due, t.f)
			delete(c.timers, t)
		}
	}
	c.mu.Unlock()
	for _, f := range due {
		f()
	}
}
