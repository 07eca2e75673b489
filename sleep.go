package retry

import (
	"context"
	"sync"
	"time"

	"github.com/benbjohnson/clock"
)

// Time in Do goes through these helpers. A nil clock means the real one and
// takes the standard library's path directly: it is the fast path, and
// testing/synctest fakes it. A non-nil clock, typically a *clock.Mock, drives
// every wait and deadline of the loop.

func now(clk clock.Clock) time.Time {
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
// whether it waited the whole d and, if a timer ran, the time the timer
// delivered when it fired. It returns as soon as ctx ends: the cancel is
// seen at once, not at the end of the wait.
func (s *sleeper) sleep(ctx context.Context, clk clock.Clock, d time.Duration) (woke time.Time, ok bool) {
	if d <= 0 {
		return time.Time{}, ctx.Err() == nil
	}
	if clk != nil {
		t := clk.Timer(d)
		defer t.Stop()
		select {
		case woke = <-t.C:
			return woke, true
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
func withDeadline(clk clock.Clock, parent context.Context, deadline time.Time) (context.Context, context.CancelFunc) {
	if clk == nil {
		return context.WithDeadline(parent, deadline)
	}
	if cur, ok := parent.Deadline(); ok && !cur.After(deadline) {
		return context.WithCancel(parent) // the parent ends first anyway
	}
	c := &clockCtx{parent: parent, deadline: deadline, done: make(chan struct{})}
	d := clk.Until(deadline)
	c.mu.Lock() // either callback may run at once on another goroutine
	c.stopParent = context.AfterFunc(parent, func() { c.cancel(parent.Err()) })
	if d > 0 {
		c.timer = clk.AfterFunc(d, func() { c.cancel(context.DeadlineExceeded) })
	}
	c.mu.Unlock()
	if d <= 0 {
		c.cancel(context.DeadlineExceeded)
	}
	return c, func() { c.cancel(context.Canceled) }
}

// withTimeout is context.WithTimeout on clk's time.
func withTimeout(clk clock.Clock, parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if clk == nil {
		return context.WithTimeout(parent, d)
	}
	return withDeadline(clk, parent, clk.Now().Add(d))
}

// clockCtx is a context whose deadline is kept by an injected clock. The
// clock package has its own, but it reads its error field without a lock,
// which the race detector rightly reports when a test advances a mock clock
// while Do reads ctx.Err().
type clockCtx struct {
	parent     context.Context
	deadline   time.Time
	done       chan struct{}
	stopParent func() bool

	mu    sync.Mutex
	err   error
	timer *clock.Timer
}

func (c *clockCtx) cancel(err error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = err
	close(c.done)
	t, stopParent := c.timer, c.stopParent
	c.mu.Unlock()
	if t != nil {
		t.Stop()
	}
	stopParent()
}

func (c *clockCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *clockCtx) Done() <-chan struct{}       { return c.done }
func (c *clockCtx) Value(key any) any           { return c.parent.Value(key) }

func (c *clockCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}
