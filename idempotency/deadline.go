package idempotency

import (
	"context"
	"sync"
	"time"
)

// deadlineCtx is the HandlerTimeout of a handler's ctx on real time, for a
// ctx that its client's departure does not end: a context.WithTimeout
// without the timer, until the flight is still running at its first
// deadline (see sweep.go). It ends with context.DeadlineExceeded at its
// deadline, as a WithTimeout would, and the ctx that the handler gets, a
// context.WithCancelCause of it, follows it through AfterFunc, so that the
// handler's ctx and every ctx derived from it end with that error too, as
// they would under a WithTimeout.
//
// It lives in the flight, so it costs no allocation of its own.
type deadlineCtx struct {
	f        *flight         // whose ctx it is
	parent   context.Context // the request's ctx, without its cancellation: never done
	deadline time.Time
	done     chan struct{}

	mu      sync.Mutex
	err     error
	stopped bool        // the handler returned: no timer is set any more
	timer   *time.Timer // set once the flight is handed over
	first   afterFunc   // the one AfterFunc that a WithCancelCause of it registers
	more    []*afterFunc
}

type afterFunc struct{ f func() }

func (c *deadlineCtx) init(f *flight, parent context.Context, deadline time.Time) {
	c.f, c.parent, c.deadline, c.done = f, parent, deadline, make(chan struct{})
}

func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *deadlineCtx) Done() <-chan struct{}       { return c.done }
func (c *deadlineCtx) Value(key any) any {
	if _, ok := key.(leaseKey); ok {
		return c.f // for FromContext, without a WithValue of its own
	}
	return c.parent.Value(key)
}
func (c *deadlineCtx) String() string { return "idempotency.handlerDeadline" }

func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// AfterFunc runs f once the ctx ends; the context package calls it for a
// ctx derived from this one, whose Err is then this one's.
func (c *deadlineCtx) AfterFunc(f func()) (stop func() bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		go f()
		return func() bool { return false }
	}
	a := &c.first
	if a.f != nil {
		a = &afterFunc{}
		c.more = append(c.more, a)
	}
	a.f = f
	// The one caller, the WithCancelCause of this ctx that the handler
	// gets, calls stop once it is canceled itself, and f cancels it: run
	// late, f does nothing. So stop needs to stop nothing, and a closure
	// per request would cost an allocation for nothing.
	return noStop
}

func noStop() bool { return false }

// arm sets the timer, for a flight still running at its first deadline.
func (c *deadlineCtx) arm() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err == nil && !c.stopped && c.timer == nil {
		c.timer = time.AfterFunc(time.Until(c.deadline), c.expire)
	}
}

// stop releases the timer, if any, once the handler has returned.
func (c *deadlineCtx) stop() {
	c.mu.Lock()
	c.stopped = true
	t := c.timer
	c.mu.Unlock()
	if t != nil {
		t.Stop()
	}
}

// expire ends the ctx with context.DeadlineExceeded.
func (c *deadlineCtx) expire() {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return
	}
	c.err = context.DeadlineExceeded
	close(c.done)
	fs := make([]func(), 0, 1+len(c.more))
	for _, a := range append([]*afterFunc{&c.first}, c.more...) {
		if a.f != nil {
			fs = append(fs, a.f)
			a.f = nil
		}
	}
	c.mu.Unlock()
	for _, f := range fs {
		f()
	}
}
