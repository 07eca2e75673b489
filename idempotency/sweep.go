package idempotency

import (
	"sync"
	"time"
)

// A request that holds its key has two deadlines: its first lease renewal
// (Lease/3 after its claim) and HandlerTimeout. Most requests end before
// either, so on real time they get no timer of their own: a runtime timer
// set on a server whose threads wait in the network poller wakes the
// poller, or an idle thread, whenever it is the earliest timer, and on
// loopback that costs more than the rest of the middleware. A sweeper
// holds the flights instead, with one timer for them all; a flight still
// running at its first deadline is handed to timers of its own (its
// renewal, lease.go; its HandlerTimeout, deadline.go), as if it had had
// them from the start.
//
// Every flight of a Middleware has the same Lease and HandlerTimeout, so
// flights reach their first deadline in the order they were added: a queue
// in that order, not a heap, with O(1) adds and removals. Two flights added
// at almost the same time may be out of order by as much; the later one
// is handed over with the earlier one.
//
// It serves real time only. Inside a testing/synctest bubble, whose clock
// is its own, flights get their timers from the start, as a sweeper shared
// by several bubbles (a Middleware made in one test and used in the
// bubbles of its subtests) could not tell their times apart.

// sweeper is the queue of flights waiting for their first deadline. Its
// zero value is ready.
type sweeper struct {
	mu         sync.Mutex
	head, tail *flight
	armed      bool // a timer is pending, due at at
	at         time.Time
	gen        uint64 // of the last timer set
}

// sweepLinks are a flight's place in the sweeper's queue; guarded by
// sweeper.mu.
type sweepLinks struct {
	prev, next *flight
	queued     bool
	sweepAt    time.Time // the flight's first deadline
}

// add queues f until at, its first deadline.
func (s *sweeper) add(f *flight, at time.Time) {
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	f.sweepAt, f.queued, f.prev, f.next = at, true, s.tail, nil
	if s.tail != nil {
		s.tail.next = f
	} else {
		s.head = f
	}
	s.tail = f
	// A new timer for an earlier deadline, or beside an overdue one (due,
	// but its callback has not run yet): the old one, when it fires, hands
	// over what is due and leaves the next timer to the new one.
	if !s.armed || at.Before(s.at) || s.at.Before(now) {
		first := s.head.sweepAt // at, but for a flight queued out of order
		if at.Before(first) {
			first = at
		}
		s.arm(now, first)
	}
}

// remove takes f off the queue, if it is on it. The timer stays: it fires
// once more for nothing at worst, and costs less than being stopped and
// set again by each request.
func (s *sweeper) remove(f *flight) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.queued {
		s.unlink(f)
	}
}

// unlink takes f off the queue. s.mu is held.
func (s *sweeper) unlink(f *flight) {
	if f.prev != nil {
		f.prev.next = f.next
	} else {
		s.head = f.next
	}
	if f.next != nil {
		f.next.prev = f.prev
	} else {
		s.tail = f.prev
	}
	f.prev, f.next, f.queued = nil, nil, false
}

// arm sets a timer for at. s.mu is held.
func (s *sweeper) arm(now, at time.Time) {
	s.gen++
	gen := s.gen
	s.armed, s.at = true, at
	time.AfterFunc(at.Sub(now), func() { s.fire(gen) })
}

// fire hands over every flight that is due, and sets the next timer if it
// is the last timer set.
func (s *sweeper) fire(gen uint64) {
	now := time.Now()
	var due *flight // a list through next, off the queue
	s.mu.Lock()
	for f := s.head; f != nil && !now.Before(f.sweepAt); f = s.head {
		s.unlink(f)
		f.next, due = due, f
	}
	if gen == s.gen {
		s.armed = false
		if s.head != nil {
			s.arm(now, s.head.sweepAt)
		}
	}
	s.mu.Unlock()
	for f := due; f != nil; {
		next := f.next
		f.next = nil
		f.handOver()
		f = next
	}
}

// inBubble reports whether now was read inside a testing/synctest bubble,
// whose time.Now has no monotonic clock reading (the runtime leaves it out
// there), where time.Now outside a bubble always has one.
func inBubble(now time.Time) bool {
	return now == now.Round(0) // Round(0) strips the monotonic reading
}
