package main

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/stormguard/retry/internal/limiter"
)

// The shed scenario's server: Capacity workers that each serve one request
// in Service, and behind them a FIFO queue with no bound, so that work
// admitted beyond Capacity waits inside the server and its latency grows,
// as a CPU's run queue does. In front of them, optionally, the engine of
// package shed (internal/limiter) admits, queues or sheds each request by
// its own rules: Enqueue, the CoDel queue timeout, dispatch by priority,
// Release with the latency, RetryAfter. Every step runs on vsim: a
// waiter's Notify and its queue timeout are wake-ups at the current
// instant, never a goroutine of their own.

// answer is how the server answered one attempt.
type answer uint8

const (
	answerPending answer = iota
	answerOK             // served
	answerShed           // 503 with a Retry-After
	answerTimeout        // the client stopped waiting first
)

// exchange is one attempt as its client waits for it: the first of the
// server's answer and the client's timeout sets it and wakes the client.
type exchange struct {
	ch         chan struct{}
	got        answer
	retryAfter time.Duration
}

// request is one attempt inside the server.
type request struct {
	arrived time.Duration
	start   time.Time // when the limiter admitted it: Release's start
	level   int
	w       limiter.Waiter
	x       *exchange
}

// shedServer is the server of one run.
type shedServer struct {
	s        *vsim
	l        shedLoad
	lim      *limiter.Limiter // nil: no shedding
	rng      *rand.Rand       // the Retry-After draws
	maxWait  time.Duration
	busy     int
	fifo     []*request // admitted, waiting for a worker
	head     int
	rec      *shedRecorder
	critical func(level int) bool
	draws    *rand.Rand // the service times' draws, with Spread
}

// arrive takes an attempt at the current instant.
func (v *shedServer) arrive(r *request) {
	v.rec.arrival(v.s.Elapsed())
	if v.lim == nil {
		v.admit(r)
		return
	}
	r.w.Notify = func(granted bool) {
		// Under the limiter's lock: act on it at this instant, after.
		v.s.At(v.s.Elapsed(), func() {
			if granted {
				v.admit(r)
			} else {
				v.shed(r)
			}
		})
	}
	adm, timeout := v.lim.Enqueue(&r.w, r.level, v.s.Now())
	switch adm {
	case limiter.Granted:
		v.admit(r)
	case limiter.Refused, limiter.Barred:
		v.shed(r)
	case limiter.Queued:
		v.s.At(v.s.Elapsed()+timeout, func() {
			if v.lim.Cancel(&r.w, true, v.s.Now()) {
				v.shed(r)
			}
		})
	}
}

// admit gives r a worker, or a place in the server's own queue.
func (v *shedServer) admit(r *request) {
	r.start = v.s.Now()
	if v.busy < v.l.Capacity {
		v.work(r)
		return
	}
	v.fifo = append(v.fifo, r)
}

// work serves r on a free worker; a worker makes no progress while the
// server hangs (the outage), and resumes where it stopped.
func (v *shedServer) work(r *request) {
	v.busy++
	now := v.s.Elapsed()
	end := now + v.service()
	if h0, h1 := v.l.HangFrom, v.l.HangFrom+v.l.Hang; v.l.Hang > 0 && end > h0 && now < h1 {
		end += h1 - max(now, h0)
	}
	v.s.At(end, func() {
		v.busy--
		if v.head < len(v.fifo) {
			next := v.fifo[v.head]
			v.fifo[v.head] = nil
			v.head++
			if v.head == len(v.fifo) {
				v.fifo, v.head = v.fifo[:0], 0
			}
			v.work(next)
		}
		if v.lim != nil {
			v.lim.Release(r.start, v.s.Now(), limiter.Success)
		}
		v.rec.served(v.s.Elapsed(), v.s.Elapsed()-r.arrived, r.start.Sub(v.s.epoch)-r.arrived, r.x.got == answerPending, v.critical(r.level))
		v.answer(r.x, answerOK, 0)
	})
}

// service is one request's work: Service, or with Spread a lognormal draw
// of mean Service.
func (v *shedServer) service() time.Duration {
	if v.l.Spread == 0 {
		return v.l.Service
	}
	s := v.l.Spread
	return time.Duration(float64(v.l.Service) * math.Exp(s*v.draws.NormFloat64()-s*s/2))
}

// shed answers r with a 503 and the engine's jittered Retry-After.
func (v *shedServer) shed(r *request) {
	v.rec.shed(v.s.Elapsed())

	v.answer(r.x, answerShed, v.lim.RetryAfter(v.s.Now(), v.maxWait, v.rng.Float64(), r.level))
}

// answer wakes x's client with a, unless it stopped waiting.
func (v *shedServer) answer(x *exchange, a answer, retryAfter time.Duration) {
	if x.got != answerPending {
		return
	}
	x.got, x.retryAfter = a, retryAfter
	v.s.Wake(v.s.Elapsed(), x.ch)
}

// send is one attempt of a client, on the client's goroutine: it reaches
// the server at once and returns its answer, or answerTimeout once the
// client has waited Timeout.
func (v *shedServer) send(level int) *exchange {
	x := &exchange{ch: make(chan struct{})}
	v.arrive(&request{arrived: v.s.Elapsed(), level: level, x: x})
	v.s.At(v.s.Elapsed()+v.l.Timeout, func() {
		if x.got == answerPending {
			v.rec.timedOut(v.s.Elapsed())
			v.answer(x, answerTimeout, 0)
		}
	})
	v.s.Yield()
	<-x.ch
	return x
}
