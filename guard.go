package retry

import (
	"context"
	"reflect"
)

// guard is what a retry loop holds of its Policy's Breaker and Throttle
// for one call: the breaker's ticket, and when the throttle counted the
// current attempt. A Policy with neither pays two nil checks per attempt.
type guard struct {
	th      *Throttle
	br      *Breaker
	tk      ticket
	pending bool  // the breaker admitted the call and has not been told how it went
	shared  bool  // th and br read the same clock: the breaker reuses at
	outcome int8  // of the latest attempt
	at      int64 // when the throttle counted the latest attempt, UnixNano
	epoch   int64 // of at in the throttle's window
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

// attempted tells the throttle, and the breaker if it counts attempts, how
// an attempt went.
func (g *guard) attempted(outcome int8) {
	g.outcome = outcome
	if g.th != nil {
		if outcome != outcomeFailure { // Throttle.answered's fast path, inline
			g.th.w.addIn(g.epoch, 1, 1)
		} else {
			g.th.answered(g.epoch, false)
		}
	}
	if g.br != nil && g.br.countAttempts {
		g.br.record(g.tk, outcome, g.sharedAt())
		g.pending, g.tk.probe = false, false // only the first attempt probes
	}
}

// done tells the breaker how the call went, once. A call that panicked
// before an outcome counts as nothing, and gives back its probe.
func (g *guard) done() {
	if g.pending {
		g.record()
	}
}

// record is done's report, kept out of it so that it inlines. A closed
// breaker's success, the hot path, is Breaker.record's fast path by hand:
// one load and one atomic add, no call.
//
//go:noinline
func (g *guard) record() {
	g.pending = false
	br, ns := g.br, g.sharedAt()
	if g.outcome != outcomeSuccess || g.tk.probe {
		br.recordSlow(g.tk, g.outcome, ns)
		return
	}
	if br.state.Load() != g.tk.state {
		return // the breaker has moved on since this call began
	}
	if ns == 0 {
		ns = br.nowNs()
	}
	width := br.width
	if width == 0 {
		width = bucketWidth(defaultBreakerWindow)
	}
	br.w.addIn(br.w.epochNs(ns, width), 1, 0)
}

// newGuard returns the guard of a call through th and br, either or both
// nil.
func newGuard(th *Throttle, br *Breaker) guard {
	g := guard{th: th, br: br}
	// A clock read costs more than the rest of an allowed attempt (tens of
	// nanoseconds, more in some sandboxes): one read serves both when they
	// share a clock, as they should.
	if th != nil && br != nil {
		// Both on the real clock, the common case, skips the comparison
		// of two interfaces (a runtime call).
		g.shared = th.clk == nil && br.clk == nil || th.clkCmp && br.clkComparable && th.clk == br.clk
	}
	return g
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
