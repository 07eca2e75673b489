package main

import (
	"container/heap"
	"context"
	"sync/atomic"
	"time"
)

// vsim runs real retry.Do calls in virtual time. Each caller runs on a
// goroutine of its own, but only one goroutine runs at a time: the
// scheduler wakes one, then waits until it hands control back, by waiting
// (a retry's pause, which Do takes through vsim's WithTimeout, or a
// backend's latency, through sleep) or by returning. Time moves only
// between hand-offs, to the next wake-up in (time, scheduling) order, so a
// run does the same thing every time, and the Throttle, the Breaker and
// the Budget under test are the library's own, driven by Do itself.
//
// vsim is the retry.Clock of the Policies it runs. It keeps no deadlines:
// the scenarios set neither MaxElapsed nor AttemptTimeout (validate checks
// it), and its WithDeadline panics.
type vsim struct {
	epoch time.Time
	now   atomic.Int64 // virtual time since epoch; written by the scheduler only
	q     wakeups
	seq   uint64
	back  chan struct{} // the running goroutine hands control back on it
}

func newVsim() *vsim {
	return &vsim{epoch: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), back: make(chan struct{})}
}

// wakeup is something that happens at an instant: a channel to close or
// to send on (a goroutine waits on it), or a function to run on the
// scheduler's goroutine (it must not block).
type wakeup struct {
	at       time.Duration
	seq      uint64
	ch       chan struct{}
	send     chan struct{} // a goroutine that waits on it is woken by a send, and may wait on it again
	inline   func()
	canceled *bool
}

// Elapsed returns the virtual time since the run began.
func (s *vsim) Elapsed() time.Duration { return time.Duration(s.now.Load()) }

// Now implements retry.Clock.
func (s *vsim) Now() time.Time { return s.epoch.Add(s.Elapsed()) }

// Wake wakes, at virtual time at, the goroutine that waits to receive
// from ch; it must hand control back (or wait) before the next wake-up.
func (s *vsim) Wake(at time.Duration, ch chan struct{}) { s.push(wakeup{at: at, send: ch}) }

// Yield hands control back to the scheduler; the running goroutine must
// then block until woken, or return.
func (s *vsim) Yield() { s.back <- struct{}{} }

// At runs f at virtual time at on the scheduler's goroutine, between two
// hand-offs: a sampler of state, which must neither block nor wait.
func (s *vsim) At(at time.Duration, f func()) { s.push(wakeup{at: at, inline: f}) }

// Caller runs a caller on a goroutine of its own: step at virtual time
// start, then again at each time step returns, until it returns one at or
// past end. One goroutine per caller, not per call, which the race
// detector makes costly.
func (s *vsim) Caller(start, end time.Duration, step func(t time.Duration) (next time.Duration)) {
	if start >= end {
		return
	}
	wake := make(chan struct{})
	go func() {
		<-wake
		for t := start; ; {
			if t = step(t); t >= end {
				s.Yield()
				return
			}
			s.Wake(t, wake)
			s.Yield()
			<-wake
		}
	}()
	s.Wake(start, wake)
}

// sleep blocks the running goroutine for d of virtual time.
func (s *vsim) sleep(d time.Duration) {
	ch := make(chan struct{})
	s.push(wakeup{at: s.Elapsed() + d, ch: ch})
	s.back <- struct{}{}
	<-ch
}

// WithTimeout implements retry.Clock. Do calls it for a pause between
// attempts and blocks on the context's Done at once, so the call hands
// control back here: nothing it does until Done closes touches the
// simulation.
func (s *vsim) WithTimeout(_ context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	ch, canceled := make(chan struct{}), new(bool)
	s.push(wakeup{at: s.Elapsed() + d, ch: ch, canceled: canceled})
	s.back <- struct{}{}
	return doneCtx{ch}, func() { *canceled = true }
}

// WithDeadline implements retry.Clock; see vsim.
func (s *vsim) WithDeadline(context.Context, time.Time) (context.Context, context.CancelFunc) {
	panic("stormsim: the simulator keeps no deadlines (MaxElapsed, AttemptTimeout)")
}

func (s *vsim) push(w wakeup) {
	w.at = max(w.at, s.Elapsed())
	s.seq++
	w.seq = s.seq
	heap.Push(&s.q, w)
}

// run plays every wake-up out, those scheduled meanwhile included, and
// returns when none is left: every call has returned.
func (s *vsim) run() {
	for s.q.Len() > 0 {
		w := heap.Pop(&s.q).(wakeup)
		if w.canceled != nil && *w.canceled {
			continue // a wait that ended early; none does in these scenarios
		}
		s.now.Store(int64(w.at))
		switch {
		case w.inline != nil:
			w.inline()
			continue
		case w.send != nil:
			w.send <- struct{}{}
		default:
			close(w.ch)
		}
		<-s.back
	}
}

// doneCtx is a context that is done when its channel is closed: all Do
// reads of a wait's context is Done.
type doneCtx struct{ ch chan struct{} }

func (doneCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (c doneCtx) Done() <-chan struct{}     { return c.ch }
func (doneCtx) Value(any) any               { return nil }
func (c doneCtx) Err() error {
	select {
	case <-c.ch:
		return context.DeadlineExceeded
	default:
		return nil
	}
}

// wakeups is a min-heap ordered by time, then scheduling order.
type wakeups []wakeup

func (h wakeups) Len() int { return len(h) }
func (h wakeups) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h wakeups) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *wakeups) Push(x any)   { *h = append(*h, x.(wakeup)) }
func (h *wakeups) Pop() any {
	old := *h
	w := old[len(old)-1]
	*h = old[:len(old)-1]
	return w
}
