package retryhttp

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/internal/clocks"
)

// maxPaced bounds the origins a pacer keeps, as maxHoldKeys bounds holds:
// past it, a new pace forgets another, so no traffic can grow a pacer.
const maxPaced = 1024

// pacer spaces out the requests to each origin whose last response said
// how many requests are left (R) and when the quota resets (T): one every
// T/R at most, until then (QuotaSpread). A request takes the next free
// turn with one compare-and-swap; the map is read without a lock. No
// request waits more than MaxRetryAfter for its turn, and a pace ends with
// its window.
type pacer struct {
	n atomic.Int32 // origins kept; 0 lets requests skip the map
	m sync.Map     // origin → *pace
}

// pace is one origin's. Times are Unix nanoseconds on the call's clock.
// interval and until are set apart from each other: a request that reads
// one response's interval and another's end still waits a time that one
// of them asked for.
type pace struct {
	interval atomic.Int64 // between turns
	until    atomic.Int64 // when the window ends, and the pace with it
	next     atomic.Int64 // the next free turn
}

// set paces origin by q, a quota read at now that is not used up; a
// quota without a reset or remaining requests paces nothing.
func (p *pacer) set(origin string, now time.Time, q QuotaState) {
	iv := q.Interval
	if iv <= 0 {
		return
	}
	pc, ok := p.m.Load(origin)
	if !ok {
		if p.n.Load() >= maxPaced {
			p.m.Range(func(k, _ any) bool { // any one: at worst it is paced no more
				if _, gone := p.m.LoadAndDelete(k); gone {
					p.n.Add(-1)
				}
				return false
			})
		}
		var loaded bool
		if pc, loaded = p.m.LoadOrStore(origin, new(pace)); !loaded {
			p.n.Add(1)
		}
	}
	pa := pc.(*pace)
	pa.interval.Store(int64(iv))
	pa.until.Store(now.Add(q.Reset).UnixNano())
}

// turn takes origin's next turn at now, and returns how long to wait for
// it: 0 for an origin not paced, or whose pace has ended. It returns a
// *guard.HeldError, taking no turn, when the turn is more than limit away,
// later than deadline (if set), or when failFast forbids any wait.
func (p *pacer) turn(origin string, now time.Time, limit time.Duration, deadline time.Time, failFast bool) (time.Duration, error) {
	if p.n.Load() == 0 {
		return 0, nil
	}
	pc, ok := p.m.Load(origin)
	if !ok {
		return 0, nil
	}
	pa := pc.(*pace)
	t := now.UnixNano()
	for {
		next := pa.next.Load()
		if t >= pa.until.Load() {
			if p.m.CompareAndDelete(origin, pa) {
				p.n.Add(-1)
			}
			return 0, nil
		}
		slot := max(next, t)
		wait := time.Duration(slot - t)
		if wait > 0 && (failFast || wait > limit || !deadline.IsZero() && deadline.UnixNano() < slot) {
			// Not a turn capped at limit: the requests past it would
			// all go at once, at the cap, as the burst pacing is for
			// avoiding. Past it, the server has no quota for them.
			return 0, &guard.HeldError{Left: wait}
		}
		if pa.next.CompareAndSwap(next, slot+pa.interval.Load()) {
			return wait, nil
		}
	}
}

// awaitPace waits, before an attempt of a request that QuotaSpread paces,
// for its origin's next turn, within call's deadline (see awaitHold).
func (c *call) awaitPace(call context.Context) error {
	if c.quota != QuotaSpread || c.t.paced.n.Load() == 0 {
		return nil
	}
	deadline, _ := call.Deadline()
	wait, err := c.t.paced.turn(c.origin(), clocks.Now(c.clk), c.t.maxRetryAfter(), deadline, c.t.Hold == HoldFailFast)
	if err != nil || wait <= 0 {
		return err
	}
	if !(retry.Policy{Clock: c.clk}).Sleep(call, wait) {
		return context.Cause(call)
	}
	return nil
}
