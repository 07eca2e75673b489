package main

import (
	"fmt"
	"time"
)

// event is something that happens to one client at an instant of virtual
// time. What kind and arg mean is up to the scenario that schedules it.
type event struct {
	at     time.Duration // virtual time since the start of the run
	seq    uint64        // scheduling order: breaks ties first in, first out
	kind   uint8
	client int32
	arg    int64
}

// queue is the clock and agenda of a discrete-event simulation: a min-heap
// of events ordered by time, then by the order they were scheduled in, so
// that events at the same instant run in a fixed order and a run is
// deterministic. Popping an event moves the clock to its time; nothing
// sleeps. The zero queue is empty at time 0.
type queue struct {
	heap []event
	seq  uint64
	now  time.Duration
}

// reset empties q and turns its clock back to 0, keeping its memory.
func (q *queue) reset() {
	q.heap, q.seq, q.now = q.heap[:0], 0, 0
}

// Now returns the time of the event popped last.
func (q *queue) Now() time.Duration { return q.now }

// Len returns how many events are scheduled.
func (q *queue) Len() int { return len(q.heap) }

// After schedules an event d from now. A negative d would move time
// backwards: that is a bug in the scenario, so After panics.
func (q *queue) After(d time.Duration, kind uint8, client int, arg int64) {
	if d < 0 {
		panic(fmt.Sprintf("stormsim: event scheduled %v in the past", -d))
	}
	q.seq++
	q.heap = append(q.heap, event{at: q.now + d, seq: q.seq, kind: kind, client: int32(client), arg: arg})
	q.up(len(q.heap) - 1)
}

// Pop removes the earliest event, moves the clock to its time and returns
// it; ok is false when nothing is scheduled.
func (q *queue) Pop() (e event, ok bool) {
	n := len(q.heap)
	if n == 0 {
		return event{}, false
	}
	e = q.heap[0]
	q.heap[0] = q.heap[n-1]
	q.heap = q.heap[:n-1]
	q.down(0)
	q.now = e.at
	return e, true
}

func (q *queue) less(i, j int) bool {
	a, b := &q.heap[i], &q.heap[j]
	return a.at < b.at || a.at == b.at && a.seq < b.seq
}

func (q *queue) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			return
		}
		q.heap[i], q.heap[parent] = q.heap[parent], q.heap[i]
		i = parent
	}
}

func (q *queue) down(i int) {
	n := len(q.heap)
	for {
		least := i
		if l := 2*i + 1; l < n && q.less(l, least) {
			least = l
		}
		if r := 2*i + 2; r < n && q.less(r, least) {
			least = r
		}
		if least == i {
			return
		}
		q.heap[i], q.heap[least] = q.heap[least], q.heap[i]
		i = least
	}
}
