package retry

import (
	"context"
	"sync"
	"time"
)

// Time in Do goes through these helpers. A nil clock means the real one and
// takes the standard library's path directly: it is the fast path, and
// testing/synctest fakes it. A non-nil clock, typically a fake in a test,
// drives every wait and deadline of the loop.

func now(clk Clock) time.Time {
	if clk == nil {
		return time.Now()
	}
	return clk.Now()
}

// sleeper waits out the pauses between attempts. On the real clock it keeps
// one timer for the whole loop and resets it for each wait.
type sleeper struct {
	timer *time.Timer
}

// sleep waits d or until ctx ends, whichever comes first. It reports
// whether it waited the whole d and, if it waited, when the wait ended. It
// returns as soon as ctx ends: the cancel is seen at once, not at the end
// of the wait.
func (s *sleeper) sleep(ctx context.Context, clk Clock, d time.Duration) (woke time.Time, ok bool) {
	if d <= 0 {
		return time.Time{}, ctx.Err() == nil
	}
	if clk != nil {
		w, cancel := clk.WithTimeout(context.Background(), d)
		defer cancel()
		select {
		case <-w.Done():
			return clk.Now(), true
		case <-ctx.Done():
			return time.Time{}, false
		}
	}
	if s.timer == nil {
		s.timer = time.NewTimer(d)
	} else {
		s.timer.Reset(d)
	}
	select {
	case woke = <-s.timer.C:
		return woke, true
	case <-ctx.Done():
		s.timer.Stop()
		return time.Time{}, false
	}
}

// stop releases the timer; Do defers it, so it runs on every exit path,
// a panic in op included.
func (s *sleeper) stop() {
	if s.timer != nil {
		s.timer.Stop()
	}
}

// withDeadline is context.WithDeadline on clk's time.
func withDeadline(clk Clock, parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if clk == nil {
		return context.WithDeadline(parent, deadline)
	}
	if cur, ok := parent.Deadline(); ok && !cur.After(deadline) {
		return context.WithCancel(parent) // the parent ends first anyway
	}
	timer, stopTimer := clk.WithDeadline(context.Background(), deadline)
	c := &clockCtx{parent: parent, deadline: deadline, timer: timer, stopTimer: stopTimer}
	c.mu.Lock() // the callback may run at once on another goroutine
	c.stopParent = context.AfterFunc(parent, func() { c.cancel(parent.Err()) })
	c.mu.Unlock()
	return c, func() { c.cancel(context.Canceled) }
}

// withTimeout is context.WithTimeout on clk's time.
func withTimeout(clk Clock, parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if clk == nil {
		return context.WithTimeout(parent, d)
	}
	return withDeadline(clk, parent, clk.Now().Add(d))
}

// clockCtx is a context whose deadline is kept by an injected clock. Its
// Done channel is the one of the clock's own deadline context, which closes
// at the deadline or when clockCtx ends for another reason (it then cancels
// that context), so that no goroutine stands between a fake clock that
// reaches the deadline and op seeing its ctx end. It never reads Err of the
// clock's context: some fakes (benbjohnson/clock's) read their error field
// without a lock. Err is worked out here, under a lock of its own.
type clockCtx struct {
	parent     context.Context
	deadline   time.Time
	timer      context.Context // its Done closes at the deadline
	stopTimer  context.CancelFunc
	stopParent func() bool

	mu  sync.Mutex
	err error // set when clockCtx ended for a reason other than its deadline
}

// cancel ends c with err, unless it has ended already.
func (c *clockCtx) cancel(err error) {
	c.mu.Lock()
	if c.err == nil {
		select {
		case <-c.timer.Done(): // the deadline came first
			c.err = context.DeadlineExceeded
		default:
			c.err = err
		}
	}
	stopParent := c.stopParent
	c.mu.Unlock()
	c.stopTimer()
	if stopParent != nil {
		stopParent()
	}
}

func (c *clockCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *clockCtx) Done() <-chan struct{}       { return c.timer.Done() }
func (c *clockCtx) Value(key any) any           { return c.parent.Value(key) }

func (c *clockCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil {
		select {
		case <-c.timer.Done():
			c.err = context.DeadlineExceeded
		default:
		}
	}
	return c.err
}
