package retry

import (
	"sync/atomic"
	"time"
)

// maxCoarseTick is the most a coarse clock lags the real one.
const maxCoarseTick = 10 * time.Millisecond

// coarse is the real clock read at most once per tick while it is used:
// what a Throttle and a Breaker on the real clock count an attempt with. A
// read of the real clock costs more than the rest of an allowed attempt
// (100 ns and more in some sandboxes, against a few for two atomics), and
// their windows slide by a sixteenth of a span of seconds, which a lag of
// a few milliseconds does not move.
//
// The first read after a tick reads the clock and sets a runtime timer
// that ends the tick; reads until then get that time. An idle coarse clock
// sets no timer, and there is no goroutine but the timer's, for an instant
// per tick while in use. A Breakers or Throttles shares one among its
// members, so that a thousand keys cost one timer per tick.
type coarse struct {
	tick   time.Duration
	ns     atomic.Int64 // the time read, UnixNano
	fresh  atomic.Bool  // ns is less than a tick old
	expire func()       // made once: a method value would allocate per tick
}

// newCoarse returns a coarse clock that lags at most tick (and at most
// maxCoarseTick).
func newCoarse(tick time.Duration) *coarse {
	c := &coarse{tick: max(min(tick, maxCoarseTick), time.Microsecond)}
	c.expire = func() { c.fresh.Store(false) }
	return c
}

// now returns the time, at most a tick old.
func (c *coarse) now() time.Time {
	if c.fresh.Load() {
		return time.Unix(0, c.ns.Load())
	}
	t := time.Now()
	c.ns.Store(t.UnixNano())
	if c.fresh.CompareAndSwap(false, true) {
		time.AfterFunc(c.tick, c.expire)
	}
	return t
}
