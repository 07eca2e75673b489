package retrytest

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Clock is a fake [retry.Clock] that tells when Do starts a wait, and can
// skip each wait by itself.
//
// Time moves only when Add says so, on a clock from [NewAutoClock] when a
// wait starts (it then jumps to the end of that wait at once), and under
// [Clock.Run] when every call running there waits. Either way it only
// moves forward, and a deadline that time reaches ends its context before
// the move is done.
//
// A Clock may be shared by calls made one after another, and its methods
// are safe to call from many goroutines at once. But calls that run at the
// same time on one clock from NewAutoClock time each other out: each wait
// of one moves the time of all, so that 200 concurrent calls see the sum
// of their waits pass, and fail their MaxElapsed. Run them under
// [Clock.Run], which moves time only when every call running there waits,
// as testing/synctest does ([Do] does so by itself); or give each call a
// Clock of its own (retry.Policy is a value: copy it and set Clock).
//
// A Clock starts at the real time it was made, so that a ctx deadline made
// with the real clock (context.WithTimeout) lies as far ahead of it as in
// production: Do fails fast with ErrDeadline when a wait would pass it.
//
// Driving a plain *clock.Mock against Do races: a test that calls Add before
// Do has started its wait moves time past a wait that then never ends.
// Clock removes the race: it sends each wait on Waits only once its timer is
// set, so advancing by the received duration always ends that wait.
type Clock struct {
	auto  bool
	waits chan time.Duration

	advance sync.Mutex // held by Add, so that concurrent Adds take turns

	mu      sync.Mutex
	now     time.Time
	timers  []*timerCtx // pending, by deadline
	waiting int         // how many of timers are waits
	users   int         // calls under Run
	events  uint64      // counts changes to timers and time, for Run's idle watch
	watch   *idleWatch  // runs while users > 0
}

// NewClock returns a Clock that moves only when Add is called.
func NewClock() *Clock {
	// The buffer lets Do run ahead of a test that reads late; a test that
	// starts more unread waits than this blocks Do until it reads.
	return &Clock{now: time.Now().Round(0), waits: make(chan time.Duration, 1024)}
}

// NewAutoClock returns a Clock that ends each wait of Do as soon as it
// starts, by moving time to its end, so that a test needs no goroutine to
// drive it: an HTTP client with a retrying Transport, say, called straight
// from the test. Deadlines (MaxElapsed, AttemptTimeout) do not move it: only
// waits do, and deadlines that time passes on the way end then. Its Waits
// channel stays empty.
func NewAutoClock() *Clock {
	c := NewClock()
	c.auto = true
	return c
}

// Now returns the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Add moves time forward by d, ending every context whose deadline it
// reaches, in deadline order, before it returns. A negative d counts as 0.
func (c *Clock) Add(d time.Duration) {
	c.advance.Lock()
	defer c.advance.Unlock()
	c.mu.Lock()
	target := c.now.Add(max(d, 0))
	c.mu.Unlock()
	c.advanceTo(target)
}

// advanceTo moves time to target, ending each deadline on the way. The
// caller holds c.advance.
func (c *Clock) advanceTo(target time.Time) {
	for {
		c.mu.Lock()
		c.events++
		if len(c.timers) == 0 || c.timers[0].deadline.After(target) {
			if target.After(c.now) {
				c.now = target
			}
			c.mu.Unlock()
			return
		}
		t := c.timers[0]
		c.remove(0)
		c.now = t.deadline
		c.mu.Unlock()
		t.cancel(context.DeadlineExceeded)
	}
}

// remove drops timer i from the pending ones. The caller holds c.mu.
func (c *Clock) remove(i int) {
	if c.timers[i].wait {
		c.waiting--
	}
	c.timers = slices.Delete(c.timers, i, i+1)
	c.events++
}

// Pending returns how many deadlines and waits are set and have neither
// been reached nor released: zero once every Do has cleaned up after itself.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Waits yields the length of each wait that Do starts on c, once its timer
// is set: c.Add(<-c.Waits()) ends the wait.
func (c *Clock) Waits() <-chan time.Duration {
	return c.waits
}

// WithDeadline implements [retry.Clock]: the context ends when time reaches
// d, when parent ends, or when cancel is called.
func (c *Clock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	t := c.start(parent, d, false)
	return t, func() { t.cancel(context.Canceled) }
}

// WithTimeout implements [retry.Clock]. Do calls it for its waits only:
// while a call runs under [Clock.Run], the wait ends once every call there
// waits; otherwise a Clock sends d on Waits, or, from NewAutoClock, moves
// time by d at once.
func (c *Clock) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	t := c.start(parent, c.Now().Add(d), true)
	switch {
	case c.running():
		c.settle()
	case c.auto:
		c.Add(d)
	default:
		c.waits <- d
	}
	return t, func() { t.cancel(context.Canceled) }
}

// start makes a context that ends at deadline and registers it.
func (c *Clock) start(parent context.Context, deadline time.Time, wait bool) *timerCtx {
	t := &timerCtx{clock: c, parent: parent, deadline: deadline, wait: wait, done: make(chan struct{})}
	c.mu.Lock()
	if !deadline.After(c.now) {
		c.mu.Unlock()
		t.cancel(context.DeadlineExceeded)
		return t
	}
	i, _ := slices.BinarySearchFunc(c.timers, deadline, func(t *timerCtx, d time.Time) int {
		if t.deadline.After(d) {
			return 1
		}
		return -1 // equal deadlines keep the order they were set in
	})
	c.timers = slices.Insert(c.timers, i, t)
	if wait {
		c.waiting++
	}
	c.events++
	c.mu.Unlock()
	if parent.Done() != nil {
		stop := context.AfterFunc(parent, func() { t.cancel(parent.Err()) })
		t.mu.Lock()
		t.stopParent = stop
		t.mu.Unlock()
	}
	return t
}

// forget removes t from the pending timers, if it is there.
func (c *Clock) forget(t *timerCtx) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if i := slices.Index(c.timers, t); i >= 0 {
		c.remove(i)
	}
}

// timerCtx is a context that ends at a deadline on a Clock.
type timerCtx struct {
	clock    *Clock
	parent   context.Context
	deadline time.Time
	wait     bool // set by WithTimeout: one of Do's waits
	done     chan struct{}

	mu         sync.Mutex
	err        error
	stopParent func() bool
	afterFuncs []func()
}

func (t *timerCtx) cancel(err error) {
	// Forgotten first, by every caller: a cancel that finds another under
	// way returns at once, and must not return while t is still pending
	// (Do's deferred cancel racing the AfterFunc of an ended parent would
	// otherwise leave Pending at 1 just after Do returned).
	t.clock.forget(t)
	t.mu.Lock()
	if t.err != nil {
		t.mu.Unlock()
		return
	}
	t.err = err
	close(t.done)
	stopParent, fs := t.stopParent, t.afterFuncs
	t.afterFuncs = nil
	t.mu.Unlock()
	if stopParent != nil {
		stopParent()
	}
	for _, f := range fs {
		if f != nil { // nil: stopped
			f()
		}
	}
}

func (t *timerCtx) Deadline() (time.Time, bool) { return t.deadline, true }
func (t *timerCtx) Done() <-chan struct{}       { return t.done }
func (t *timerCtx) Value(key any) any           { return t.parent.Value(key) }

func (t *timerCtx) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

// AfterFunc lets context.AfterFunc, and the contexts that the context
// package derives from this one, learn that it ended without a goroutine
// each to watch it.
func (t *timerCtx) AfterFunc(f func()) (stop func() bool) {
	t.mu.Lock()
	if t.err != nil {
		t.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	// Each registration gets its own slot, so that stop finds it by index
	// even after other registrations are stopped.
	id := len(t.afterFuncs)
	t.afterFuncs = append(t.afterFuncs, f)
	t.mu.Unlock()
	return func() bool {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.err != nil || t.afterFuncs[id] == nil {
			return false
		}
		t.afterFuncs[id] = nil
		return true
	}
}
