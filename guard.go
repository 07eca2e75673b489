package retry

import (
	"context"
	"reflect"
)

// guard is what a retry loop holds of its Policy's Breaker and Throttle
// for one call: the breaker's ticket, and when the throttle counted the
// current attempt. A Policy with neither pays two nil checks per attempt.
type guard struct {
	th       *Throttle
	br       *Breaker
	tk       ticket
	pending  bool  // the breaker admitted the call and has not been told how it went
	shared   bool  // th and br read the same clock: the breaker reuses at
	outcome  int8  // of the latest attempt
	mayProbe bool  // a deferred done holds the call: before may take a half-open probe
	retake   bool  // before refused a probe for want of mayProbe: run the call again with it
	at       int64 // when the throttle counted the latest attempt, UnixNano
	epoch    int64 // of at in the throttle's window
}

// before reports whether attempt n may be sent, or why not. The breaker
// goes first: an open one refuses without the throttle counting a request.
func (g *guard) before(n int) StopReason {
	if g.br != nil {
		if n == 1 {
			// A closed breaker admits with one load, here: admit is for
			// the others.
			if s := g.br.state.Load(); BreakerState(s&3) == BreakerClosed {
				g.tk = ticket{state: s}
			} else if !g.mayProbe {
				// The breaker left closed since the call began: a probe
				// must be held by a defer, and this call has none.
				g.retake = true
				return StopBreakerOpen
			} else if g.tk, g.pending = g.br.admit(); !g.pending {
				return StopBreakerOpen
			}
			g.pending = true
		} else if !g.br.allowRetry() {
			return StopBreakerOpen
		}
	}
	if th := g.th; th != nil {
		// Throttle.nowNs and Throttle.allow, by hand: their fast paths
		// inline here, which saves an allowed attempt three calls.
		if th.coarse != nil {
			g.at = th.coarse.UnixNano()
		} else {
			g.at = th.nowNs()
		}
		g.epoch = th.w.epochNs(g.at, th.bucketWidth())
		if th.zeroIn.Load() != g.epoch+1 && !th.allowSlow(g.at, g.epoch) {
			return StopThrottled
		}
	}
	return StopNone
}

// succeeded is attempted(outcomeSuccess), the hot path: the call is over,
// and the breaker hears of it at once rather than from report. A closed
// breaker's success is Breaker.record's fast path by hand, and an accept
// Throttle.answered's: a load and an atomic add each, no call.
func (g *guard) succeeded() {
	g.outcome = outcomeSuccess
	if th := g.th; th != nil && !th.w.addCur(g.epoch, 1<<32|1) {
		th.w.addNew(g.epoch, 1<<32|1)
	}
	br := g.br
	switch {
	case br == nil:
		return
	case br.countAttempts:
		g.report()
		g.tk.probe = false
		return
	case !g.pending:
		return
	case g.tk.probe:
		g.report()
		return
	}
	g.pending = false
	if br.state.Load() != g.tk.state {
		return // the breaker has moved on since this call began
	}
	ns := g.sharedAt()
	if ns == 0 {
		ns = br.nowNs()
	}
	if e := br.w.epochNs(ns, br.bucketWidth()); !br.w.addCur(e, 1<<32) {
		br.w.addNew(e, 1<<32)
	}
}

// attempted tells the throttle, and the breaker if it counts attempts, how
// an attempt other than a success went (see succeeded).
func (g *guard) attempted(outcome int8) {
	g.outcome = outcome
	if g.th != nil {
		g.th.answered(g.epoch, outcome != outcomeFailure)
	}
	if g.br != nil && g.br.countAttempts {
		g.report()
		g.tk.probe = false // only the first attempt probes
	}
}

// report tells the breaker the outcome of the latest attempt, as the
// call's, or as the attempt's if it counts attempts.
func (g *guard) report() {
	g.pending = false
	g.br.record(g.tk, g.outcome, g.sharedAt())
}

// done is deferred by a Do that may hold a half-open probe: if the call
// has not reported, it panicked (or its goroutine exited) before it could;
// it counts as nothing, and gives back its probe.
func (g *guard) done() {
	if g.pending {
		g.outcome = outcomeNone
		g.report()
	}
}

// finish is deferred by a Hedge: it reports how the call went, on every
// exit, a panic included.
func (g *guard) finish() {
	if g.pending {
		g.report()
	}
}

// init makes g the guard of a call through th and br, either or both nil.
// It fills g in place: a guard returned by value and copied would be
// stored in pieces and loaded whole, which stalls the store forwarding.
func (g *guard) init(th *Throttle, br *Breaker) {
	g.th, g.br = th, br
	// A clock read costs more than the rest of an allowed attempt (tens of
	// nanoseconds, more in some sandboxes): one read serves both when they
	// share a clock, as they should.
	if th != nil && br != nil {
		// Both on the real clock, the common case, skips the comparison
		// of two interfaces (a runtime call).
		g.shared = th.clk == nil && br.clk == nil || th.clkCmp && br.clkComparable && th.clk == br.clk
	}
}

// sharedAt is the time the throttle read for the latest attempt, if the
// breaker may use it, or else 0.
func (g *guard) sharedAt() int64 {
	if g.shared {
		return g.at
	}
	return 0
}

// comparableClock reports whether clk can be compared with == without a
// panic.
func comparableClock(clk Clock) bool {
	return clk == nil || reflect.TypeOf(clk).Comparable()
}

// failedOutcome is the outcome of an attempt that failed with the caller's
// ctx in state cerr (nil while alive) and the Classifier's verdict retry:
// a caller who canceled tells nothing about the service, but a deadline
// that a hanging service ran out does.
func failedOutcome(cerr error, retry bool) int8 {
	switch {
	case cerr == context.Canceled:
		return outcomeNone
	case cerr != nil || retry:
		return outcomeFailure
	}
	return outcomeSuccess
}
