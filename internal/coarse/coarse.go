// Package coarse is the real clock read at most once per tick while it is
// used: for the hot paths of retry's Throttle and Breaker and retryhttp's
// log sampler, which count events in windows of seconds or minutes, where
// a lag of milliseconds moves nothing and a read of the real clock costs
// more than the rest of the work (100 ns and more in some sandboxes,
// against a few for the atomics of a hit).
package coarse

import (
	"math"
	"sync/atomic"
	"time"
)

// MaxTick is the most a Clock lags the real one.
const MaxTick = 10 * time.Millisecond

// Clock is the real clock, read at most once per Tick. The first read
// after a tick reads the real clock and sets a runtime timer that ends the
// tick; reads until then get that time. An idle Clock sets no timer, and
// there is no goroutine but the timer's, for an instant per tick while in
// use. The zero Clock lags at most MaxTick. A Clock must not be copied
// after first use; it is safe for concurrent use.
type Clock struct {
	// Tick is the most the Clock lags [MaxTick]; at most MaxTick.
	Tick time.Duration

	ns     atomic.Int64 // the time read, UnixNano
	mono   atomic.Int64 // the same, as Nanos
	fresh  atomic.Bool  // ns is less than a tick old
	expire atomic.Pointer[func()]
}

// Now returns the time, at most a tick old. It has no monotonic reading:
// use it for UnixNano and for comparisons with times of this Clock.
func (c *Clock) Now() time.Time {
	if c.fresh.Load() {
		return time.Unix(0, c.ns.Load())
	}
	t := time.Now()
	c.ns.Store(t.UnixNano())
	c.mono.Store(Nanos(t))
	if c.fresh.CompareAndSwap(false, true) {
		f := c.expire.Load()
		if f == nil { // made once: a method value would allocate per tick
			fn := func() { c.fresh.Store(false) }
			c.expire.CompareAndSwap(nil, &fn)
			f = c.expire.Load()
		}
		time.AfterFunc(c.tick(), *f)
	}
	return t.Round(0)
}

// UnixNano is Now().UnixNano() without building a time.Time: within a
// tick, two atomic loads (the hot paths count in nanoseconds).
func (c *Clock) UnixNano() int64 {
	if c.fresh.Load() {
		return c.ns.Load()
	}
	return c.read()
}

// read is UnixNano between ticks, kept out of it so that it inlines.
func (c *Clock) read() int64 { return c.Now().UnixNano() }

// Nanos is Nanos(Now()) without building a time.Time: the time on the
// monotonic clock, for counts in windows that a step of the wall clock
// must not move.
func (c *Clock) Nanos() int64 {
	if c.fresh.Load() {
		return c.mono.Load()
	}
	c.Now()
	return c.mono.Load()
}

// base is the origin of Nanos: a reading with a monotonic part, made once,
// and never changed.
var base = time.Now()

// baseWall is base in UnixNano.
var baseWall = base.UnixNano()

// Nanos returns t as nanoseconds since a fixed instant of this process.
// For a time of the real clock (time.Now, which has a monotonic reading)
// it is measured on the monotonic clock, so that a wall clock stepped back
// or forward (NTP, a VM's resume, an operator) moves no window, lease or
// OpenFor; for a time without one (a fake clock's, a time from Round(0),
// testing/synctest's) on the wall clock, as UnixNano is. Times more than
// 292 years from now saturate.
func Nanos(t time.Time) int64 { return int64(t.Sub(base)) }

// Time is the wall time of a Nanos value, as time.Unix(0, ns) is of a
// UnixNano one: for a time of the real clock, the wall time it would have
// been had the wall clock not been stepped since the process started. It
// has no monotonic reading.
func Time(ns int64) time.Time {
	switch {
	case baseWall > 0 && ns > math.MaxInt64-baseWall:
		return time.Unix(0, math.MaxInt64)
	case baseWall < 0 && ns < math.MinInt64-baseWall:
		return time.Unix(0, math.MinInt64)
	}
	return time.Unix(0, baseWall+ns)
}

func (c *Clock) tick() time.Duration {
	if c.Tick <= 0 || c.Tick > MaxTick {
		return MaxTick
	}
	return max(c.Tick, time.Microsecond)
}
