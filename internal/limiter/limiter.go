package limiter

import (
	"sync"
	"sync/atomic"
	"time"
)

// Levels is the number of priority levels; 0 is the lowest.
const Levels = 4

// Outcome is what the caller of Release saw of the work.
type Outcome uint8

const (
	// Success: the work ran; its latency is a sample.
	Success Outcome = iota
	// Overloaded: the work showed overload (a timeout, a dependency's
	// refusal); the algorithm backs off.
	Overloaded
	// Ignored: the work says nothing of the load (a client's bad request,
	// a cancel); no sample.
	Ignored
)

// Config is a resolved configuration; the wrappers validate and default it.
type Config struct {
	Algorithm    Algorithm
	Initial      int
	Min, Max     int
	MaxQueue     int           // 0: no queue
	QueueTimeout time.Duration // how long a waiter may wait; with QueueFactor, at most
	// QueueFactor, if positive, makes the queue timeout that many times
	// the baseline latency, at least a millisecond and at most
	// QueueTimeout (QueueTimeout until there is a baseline).
	QueueFactor float64
	Tolerance   float64 // Gradient: latency ratio to the minimum taken as no queueing
	Smoothing   float64 // Gradient: weight of a new limit
	NoSamples   bool    // Fixed with no use for latency: Release takes no lock
}

// Limiter is a concurrency limit with a priority queue.
type Limiter struct {
	inflight atomic.Int64
	limit    atomic.Int64 // floor of alg.limit, at least 1
	waiting  atomic.Int64 // waiters in the queues

	admitted, shed, timeouts atomic.Uint64

	mu        sync.Mutex
	cfg       Config
	alg       algo
	queues    [Levels]list
	busySince time.Time // when the queue last became non-empty

	rate shedRate

	// bar is the level under which every request is refused, until
	// barUntil (ns since the epoch; under mu): a level at bar or above was
	// shed lately. 0 (nothing is under level 0) once it has lapsed.
	bar      atomic.Int64
	barUntil int64
	barHit   int64 // when the bar last refused a request, ns; under mu
}

// New returns a Limiter for a resolved Config.
func New(c Config) *Limiter {
	l := &Limiter{cfg: c}
	l.alg = newAlgo(c)
	l.limit.Store(int64(l.alg.limit))
	return l
}

// TryAcquire takes a slot if one is free and nobody waits for one: the
// lock-free path.
func (l *Limiter) TryAcquire(level int) bool {
	if l.waiting.Load() != 0 || int64(level) < l.bar.Load() {
		return false
	}
	return l.take()
}

// take takes a slot if the count in flight is under the limit.
func (l *Limiter) take() bool {
	for {
		n := l.inflight.Load()
		if n >= l.limit.Load() {
			return false
		}
		if l.inflight.CompareAndSwap(n, n+1) {
			l.admitted.Add(1)
			return true
		}
	}
}

// Waiter is one request that waits for a slot. Notify is called once,
// under the Limiter's lock, when a slot is given to it (true) or when it
// is shed to make room for a higher level (false); it must not block nor
// call back into the Limiter. A waiter that gives up first calls Cancel.
type Waiter struct {
	Notify func(granted bool)

	// Under the Limiter's lock: the dispatcher sets granted, an eviction
	// evicted, and a waiter that gives up removes itself, so exactly one
	// of the three happens.
	prev, next *Waiter
	level      int
	granted    bool
	evicted    bool // shed to make room for a higher level
}

// Admission is what Enqueue did.
type Admission uint8

const (
	// Granted: a slot was free; the caller holds it.
	Granted Admission = iota
	// Queued: the caller waits for Notify, or gives up with Cancel.
	Queued
	// Refused: no slot and no queue place for the caller's level.
	Refused
	// Barred: the caller's level is under the bar: a higher one was shed
	// lately.
	Barred
)

// Enqueue takes a slot for level if one is free (queue order respected),
// or queues w, or refuses it. A full queue makes room for a higher level
// by shedding the newest waiter of the lowest level below it.
//
// For Queued it also returns how long w may wait: QueueTimeout, or a
// twentieth of it once the queue has stayed busy for longer than
// QueueTimeout. That is CoDel as Facebook applies it to server queues
// ("Fail at Scale", 2015: 5 ms once the queue has not been empty for 100
// ms): a queue that never drains is not absorbing a burst, it is adding
// latency.
func (l *Limiter) Enqueue(w *Waiter, level int, now time.Time) (Admission, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.barred(level, now) {
		l.shed.Add(1)
		return Barred, 0
	}
	if l.waiting.Load() == 0 && l.take() {
		return Granted, 0
	}
	if l.cfg.MaxQueue <= 0 {
		l.refuse(level, now)
		return Refused, 0
	}
	if int(l.waiting.Load()) >= l.cfg.MaxQueue && !l.evictBelow(level) {
		l.refuse(level, now)
		return Refused, 0
	}
	w.prev, w.next, w.level, w.granted, w.evicted = nil, nil, level, false, false
	if l.waiting.Load() == 0 {
		l.busySince = now
	}
	l.queues[level].pushBack(w)
	l.waiting.Add(1)
	l.dispatch(now, w)
	if w.granted {
		return Granted, 0
	}
	return Queued, l.timeout(now, level)
}

// Refuse counts a refusal of a request of level at now by a Limiter with
// no queue, unless a slot came free since TryAcquire failed and level is
// not barred, which it then takes (Granted).
func (l *Limiter) Refuse(level int, now time.Time) Admission {
	if l.bar.Load() == 0 && l.take() {
		return Granted
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.barred(level, now) {
		l.shed.Add(1)
		return Barred
	}
	if l.take() {
		return Granted
	}
	l.refuse(level, now)
	return Refused
}

// timeout is how long a request queued now may wait. Under mu.
func (l *Limiter) timeout(now time.Time, level int) time.Duration {
	if l.cfg.QueueFactor > 0 && l.turningAway(level, now) {
		// The lower levels' refusals keep the queue short; a request of a
		// level the server is for waits as long as the cap, since a shed
		// costs its caller a whole Retry-After, and the server the
		// caller's next requests.
		return l.cfg.QueueTimeout
	}
	t := l.queueTimeout()
	if l.cfg.QueueFactor <= 0 && l.overloaded(now) {
		// A timeout relative to the latency is already CoDel's short one.
		return min(t, max(t/20, time.Millisecond))
	}
	return t
}

// queueTimeout is the queue timeout: QueueTimeout, or QueueFactor times
// the baseline within [1ms, QueueTimeout]. Under mu.
func (l *Limiter) queueTimeout() time.Duration {
	t := l.cfg.QueueTimeout
	if b := l.alg.base(); l.cfg.QueueFactor > 0 && b > 0 {
		t = min(t, max(time.Millisecond, time.Duration(b*l.cfg.QueueFactor)))
	}
	return t
}

// overloaded reports whether the queue has stayed busy for longer than
// its timeout: sustained overload. Under mu.
func (l *Limiter) overloaded(now time.Time) bool {
	return l.waiting.Load() > 0 && now.Sub(l.busySince) > l.queueTimeout()
}

// evictBelow sheds the newest waiter of the lowest level under level.
func (l *Limiter) evictBelow(level int) bool {
	for lv := 0; lv < level; lv++ {
		if v := l.queues[lv].tail; v != nil {
			l.queues[lv].remove(v)
			l.waiting.Add(-1)
			v.evicted = true
			l.shed.Add(1)
			v.Notify(false)
			return true
		}
	}
	return false
}

// Cancel removes w from the queue if it still waits, and reports whether
// it did: false means Notify was or is being called. A canceled waiter
// that timed out (at now) counts as shed when timedOut.
func (l *Limiter) Cancel(w *Waiter, timedOut bool, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if w.granted || w.evicted {
		return false
	}
	l.queues[w.level].remove(w)
	l.waiting.Add(-1)
	if timedOut {
		l.refuse(w.level, now)
		l.timeouts.Add(1)
	}
	return true
}

// dispatch gives free slots to waiters, the highest level first; in a
// level, oldest first, or newest first once the queue has stayed busy for
// longer than QueueTimeout (sustained overload: the oldest are the ones
// whose callers have most likely given up). self, if granted, is not
// notified: Enqueue returns Granted instead.
func (l *Limiter) dispatch(now time.Time, self *Waiter) {
	for l.waiting.Load() > 0 {
		var q *list
		for lv := Levels - 1; lv >= 0; lv-- {
			if l.queues[lv].n > 0 {
				q = &l.queues[lv]
				break
			}
		}
		if !l.take() {
			return
		}
		w := q.head
		if l.overloaded(now) {
			w = q.tail
		}
		q.remove(w)
		l.waiting.Add(-1)
		w.granted = true
		if l.waiting.Load() == 0 {
			l.busySince = time.Time{}
		}
		if w != self {
			w.Notify(true)
		}
	}
}

// Release gives back a slot taken at start, feeds the algorithm the
// latency start→now and the outcome, and hands free slots to waiters.
// With NoSamples, start and now are not read.
func (l *Limiter) Release(start, now time.Time, o Outcome) {
	l.inflight.Add(-1)
	if l.cfg.NoSamples && l.waiting.Load() == 0 {
		return
	}
	l.mu.Lock()
	if !l.cfg.NoSamples && o != Ignored {
		l.alg.sample(start, now, int(l.inflight.Load())+1, o == Overloaded)
		l.limit.Store(max(1, int64(l.alg.limit)))
	}
	if l.waiting.Load() > 0 {
		l.dispatch(now, nil)
	}
	l.mu.Unlock()
}

// Stats is a snapshot of a Limiter.
type Stats struct {
	Limit, InFlight, Queued  int
	Admitted, Shed, Timeouts uint64
	MinLatency, Latency      time.Duration
}

// Stats returns a snapshot.
func (l *Limiter) Stats() Stats {
	l.mu.Lock()
	minRTT, short := l.alg.base(), l.alg.latency()
	l.mu.Unlock()
	return Stats{
		Limit:      int(l.limit.Load()),
		InFlight:   int(l.inflight.Load()),
		Queued:     int(l.waiting.Load()),
		Admitted:   l.admitted.Load(),
		Shed:       l.shed.Load(),
		Timeouts:   l.timeouts.Load(),
		MinLatency: time.Duration(minRTT),
		Latency:    time.Duration(short),
	}
}
