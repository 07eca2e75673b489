package limiter

import (
	"math"
	"sync"
	"time"
)

// shedRate measures the requests shed for each one admitted, once a
// second.
type shedRate struct {
	mu                  sync.Mutex
	since               time.Time
	lastShed, lastAdmit uint64
	ratio               float64
}

// RetryAfter is the wait a request shed at now is told: at least the time
// the queue needs to drain at the recent latency (and one second), plus a
// share u ∈ [0, 1) of a window of at least two seconds, as many times
// that as requests were shed in the last second for each one the server
// can serve in it, so that the shed come back spread over more time than
// they took to arrive rather than at one instant. The window is cut to
// fit under maxWait, not clamped, so that the cap is not where the fleet
// piles up. Whole seconds, rounded down, at least one.
//
// A request of a level for which lower ones are being turned away (see
// turningAway) has a least window of one second, not two: the lower
// levels take the bulk of the refusals, its own are few, and its clients'
// next requests are the work the server is for; a whole second's hold,
// spread by the client, already keeps them from returning at one instant.
func (l *Limiter) RetryAfter(now time.Time, maxWait time.Duration, u float64, level int) time.Duration {
	recent, least := l.recent(now, level)
	base := max(time.Second, l.drain(recent))
	if base >= maxWait {
		return maxWait.Truncate(time.Second)
	}
	window := max(least, time.Duration(float64(base)*l.shedRatio(now, recent)))
	window = min(window, maxWait-base)
	d := (base + time.Duration(float64(window)*u)).Truncate(time.Second)
	return min(max(d, time.Second), maxWait)
}

// shedRatio is the requests shed for each one the server can serve, over
// the last second or more, capped at 60. What it can serve is what it
// admitted, or, if more, what its limit lets through at the recent
// latency: a server whose work hangs admits nothing, and counting only
// what it admitted would tell the shed to stay away for maxWait, long
// after it has healed.
func (l *Limiter) shedRatio(now time.Time, recent float64) float64 {
	r := &l.rate
	r.mu.Lock()
	defer r.mu.Unlock()
	if d := now.Sub(r.since); d >= time.Second || d < 0 {
		shed, admit := l.shed.Load(), l.admitted.Load()
		served := float64(admit - r.lastAdmit)
		if recent > 0 && d > 0 {
			served = max(served, float64(l.limit.Load())*float64(d)/recent)
		}
		r.ratio = min(60, float64(shed-r.lastShed)/max(served, 1))
		r.since, r.lastShed, r.lastAdmit = now, shed, admit
	}
	return r.ratio
}

// recent is the recent latency, ns, and the least window for level at
// now, read under the lock once per answer.
func (l *Limiter) recent(now time.Time, level int) (float64, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	least := 2 * time.Second
	if l.turningAway(level, now) {
		least = time.Second
	}
	return l.alg.latency(), least
}

// drain estimates how long the work queued needs to start at the recent
// latency: (queued+1) rounds of limit each.
func (l *Limiter) drain(recent float64) time.Duration {
	limit := float64(max(1, l.limit.Load()))
	rounds := math.Ceil(float64(l.waiting.Load()+1) / limit)
	return time.Duration(min(rounds*recent, float64(24*time.Hour)))
}
