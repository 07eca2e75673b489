package main

import (
	"slices"
	"time"

	"github.com/stormguard/retry/internal/limiter"
)

// shedSecond is what happened in one second of a shed run.
type shedSecond struct {
	Arrivals  int // attempts that reached the server
	Served    int // attempts it finished serving
	Good      int // of those, answered to a client that still waited: goodput
	GoodCrit  int // of those, Critical ones
	Shed      int // attempts answered 503 with a Retry-After
	TimedOut  int // attempts whose client stopped waiting first
	Calls     int // calls that started in the second
	Succeeded int // of those, calls that succeeded
	InTime    int // of those, calls that succeeded within callPatience
	CritCalls int // calls of Critical clients that started in the second
	Limit     int // the limiter's limit at the end of the second
	Queued    int // and the requests in its queue
}

// shedRecorder keeps the per-second series of one run and the latencies
// of the attempts the server served.
type shedRecorder struct {
	l       shedLoad
	Seconds []shedSecond
	// latencies are arrival-to-answer times of the attempts served after
	// Settled, queueing in the limiter and in the server included.
	latencies []time.Duration
	// waits are the same attempts' waits in the limiter's queue.
	waits []time.Duration
}

func newShedRecorder(l shedLoad) *shedRecorder {
	return &shedRecorder{l: l, Seconds: make([]shedSecond, int(l.Length/time.Second)+1)}
}

func (r *shedRecorder) at(t time.Duration) *shedSecond {
	i := int(t / time.Second)
	for i >= len(r.Seconds) {
		r.Seconds = append(r.Seconds, shedSecond{})
	}
	return &r.Seconds[i]
}

func (r *shedRecorder) arrival(t time.Duration)  { r.at(t).Arrivals++ }
func (r *shedRecorder) shed(t time.Duration)     { r.at(t).Shed++ }
func (r *shedRecorder) timedOut(t time.Duration) { r.at(t).TimedOut++ }

func (r *shedRecorder) served(t, latency, wait time.Duration, good, critical bool) {
	b := r.at(t)
	b.Served++
	if good {
		b.Good++
		if critical {
			b.GoodCrit++
		}
	}
	if t >= r.l.Settled && t < r.l.Length {
		r.latencies = append(r.latencies, latency)
		r.waits = append(r.waits, wait)
	}
}

// callPatience is how long a call may take and still count as succeeding
// in time after the outage.
const callPatience = 10 * time.Second

func (r *shedRecorder) call(start, end time.Duration, ok, critical bool) {
	b := r.at(start)
	b.Calls++
	if ok {
		b.Succeeded++
		if end-start <= callPatience {
			b.InTime++
		}
	}
	if critical {
		b.CritCalls++
	}
}

func (r *shedRecorder) sample(t time.Duration, lim *limiter.Limiter) {
	if lim == nil {
		return
	}
	st := lim.Stats()
	b := r.at(t)
	b.Limit, b.Queued = st.Limit, st.Queued
}

// p99 is the 99th percentile of the served attempts' latencies (nearest
// rank), or 0 if none was served.
func (r *shedRecorder) p99() time.Duration { return p99(r.latencies) }

// p99 is the 99th percentile of d (nearest rank), or 0 if d is empty.
func p99(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	l := slices.Clone(d)
	slices.Sort(l)
	return l[(len(l)*99+99)/100-1]
}

// sum adds up the seconds [from, to).
func (r *shedRecorder) sum(from, to time.Duration) shedSecond {
	var t shedSecond
	for i := int(from / time.Second); i < int(to/time.Second) && i < len(r.Seconds); i++ {
		b := r.Seconds[i]
		t.Arrivals += b.Arrivals
		t.Served += b.Served
		t.Good += b.Good
		t.GoodCrit += b.GoodCrit
		t.Shed += b.Shed
		t.TimedOut += b.TimedOut
		t.Calls += b.Calls
		t.Succeeded += b.Succeeded
		t.InTime += b.InTime
		t.CritCalls += b.CritCalls
	}
	return t
}
