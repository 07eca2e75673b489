package guard

import (
	"context"
	"time"
)

// Outcome is how an attempt, or a call, went for a Breaker and a Throttle.
type Outcome int8

// The outcomes.
const (
	// OutcomeNone: canceled by its caller, or never sent; it counts as
	// nothing, and a probe so ended is given back.
	OutcomeNone Outcome = iota
	// OutcomeSuccess: a success, or an error that is not worth a retry
	// (a 400: the service answered).
	OutcomeSuccess
	// OutcomeFailure: an error worth a retry (a 503, UNAVAILABLE, a
	// timeout): the service failed it.
	OutcomeFailure
)

// OutcomeOf is the outcome of an attempt that failed with its caller's
// ctx in state ctxErr (nil while alive), when a retry would (retryable)
// or would not help: a caller who canceled tells nothing about the
// service, but a deadline that a hanging service ran out does.
func OutcomeOf(ctxErr error, retryable bool) Outcome {
	switch {
	case ctxErr == context.Canceled:
		return OutcomeNone
	case ctxErr != nil || retryable:
		return OutcomeFailure
	}
	return OutcomeSuccess
}

// Refusal says why [Call.Admit] refused an attempt.
type Refusal uint8

// The refusals.
const (
	// NotRefused: the attempt may be sent.
	NotRefused Refusal = iota
	// RefusedByBreaker: the Breaker is open, or half-open with no probe
	// left, or not closed for a retry.
	RefusedByBreaker
	// RefusedByThrottle: the Throttle shed the attempt.
	RefusedByThrottle
	// RefusedRestart: a call begun with [Call.StartFast] found the breaker
	// no longer closed at its first attempt; nothing was counted, and the
	// call must begin again with [Call.Start], under a deferred End.
	RefusedRestart
	// RefusedByLimiter: the Limiter had no slot free, and none came in its
	// queue in time (or Admit, which does not queue, found none).
	RefusedByLimiter
)

// Call is what one logical call, its attempts and retries, holds of its
// Throttle, Breaker and Limiter: the breaker's ticket, when the throttle
// counted the latest attempt, and the limiter's slot. Its zero value guards nothing; begin it with
// [Call.Start]. A Call is used by one goroutine, and must not be copied
// once begun.
//
// The protocol, which retry.Do follows:
//
//	var c guard.Call
//	c.Start(th, br)
//	c.Limit(lim)      // if any: each attempt holds a slot until it is told of
//	defer c.Abandon() // a panic counts as nothing, and gives back a probe and a slot
//	for n := 1; ; n++ {
//		if r := c.AdmitContext(ctx, n); r != guard.NotRefused {
//			break // not sent: stop, or wait and ask again
//		}
//		err := send()
//		if err == nil {
//			c.Succeeded()
//			break
//		}
//		c.Attempted(guard.OutcomeOf(ctx.Err(), retryable(err)))
//		...
//	}
//	c.End() // the call's outcome, if Succeeded has not told it
//
// retry.Policy.Next calls Attempted itself for the Call in its Progress,
// and retry.Policy.Admit and Succeeded call Admit and Succeeded: a loop
// that drives Next calls neither twice.
type Call struct {
	th       *Throttle
	br       *Breaker
	tk       ticket
	pending  bool    // the breaker admitted the call and has not been told how it went
	shared   bool    // th and br read the same clock: the breaker reuses at
	outcome  Outcome // of the latest attempt
	mayProbe bool    // a deferred End or Abandon holds the call: Admit may take a half-open probe
	restart  bool    // Admit refused a probe for want of mayProbe
	at       int64   // when the throttle counted the latest attempt, coarse.Nanos
	epoch    int64   // of at in the throttle's window

	lim   *limiterState
	slots int32     // of lim, held by attempts not yet told of (a Hedge's copies: several)
	since time.Time // when the first of them was taken, for an adaptive limit's latency
}

// Start begins a call through th and br, either or both nil. The call may
// take a half-open breaker's probe, so End or Abandon must run however the
// call ends: defer one of them.
func (c *Call) Start(th *Throttle, br *Breaker) {
	c.init(th, br)
	c.mayProbe = true
}

// StartFast begins a call as Start does, for a caller that defers nothing:
// it reports false, having begun nothing, when br is not closed (begin
// with Start then). A call so begun holds no probe, so a panic loses
// nothing; if the breaker leaves closed before the first attempt, Admit
// refuses it with RefusedRestart.
func (c *Call) StartFast(th *Throttle, br *Breaker) bool {
	if br != nil && !br.AllowRetry() {
		return false
	}
	c.init(th, br)
	return true
}

// init makes c the guard of a call through th and br, in place: a Call
// returned by value and copied would be stored in pieces and loaded whole,
// which stalls the store forwarding.
func (c *Call) init(th *Throttle, br *Breaker) {
	*c = Call{th: th, br: br}
	// A clock read costs more than the rest of an allowed attempt (tens of
	// nanoseconds, more in some sandboxes): one read serves both when they
	// share a clock, as they should.
	if th != nil && br != nil {
		// Both on the real clock, the common case, skips the comparison
		// of two interfaces (a runtime call).
		c.shared = th.clk == nil && br.clk == nil || th.clkCmp && br.clkComparable && th.clk == br.clk
	}
}

// Limit makes each attempt that c admits hold a slot of l, from Admit
// until Succeeded or Attempted tells c how it went (End or Abandon give
// back any still held); a nil l limits nothing. Call it after Start or
// StartFast, which forget any Limiter.
func (c *Call) Limit(l *Limiter) {
	c.lim = nil
	if l != nil {
		c.lim = l.state()
	}
}

// Admit reports whether attempt n (1 for the first) may be sent, or why
// not. The breaker goes first: an open one refuses without the throttle
// counting a request. Only a first attempt may take a half-open probe;
// a retry or a hedge goes only while the breaker is closed. Then the
// Limiter, if any, gives the attempt a slot if one is free now (Admit
// never waits: see AdmitContext), and the throttle goes last, so that it
// counts only attempts that are sent. An admitted attempt must be
// followed by Succeeded or Attempted.
func (c *Call) Admit(n int) Refusal { return c.admit(context.Background(), false, n) }

// AdmitContext is Admit, but an attempt that finds the Limiter full waits
// in its queue for a slot, at most its QueueTimeout, and is refused with
// RefusedByLimiter if none comes or ctx ends first.
func (c *Call) AdmitContext(ctx context.Context, n int) Refusal { return c.admit(ctx, true, n) }

// admit is Admit, waiting for a slot with ctx if wait.
func (c *Call) admit(ctx context.Context, wait bool, n int) Refusal {
	if c.br != nil {
		if n == 1 {
			// A closed breaker admits with one load, here: admit is for
			// the others.
			if s := c.br.state.Load(); BreakerState(s&3) == BreakerClosed {
				c.tk = ticket{state: s}
			} else if !c.mayProbe {
				c.restart = true
				return RefusedRestart
			} else if c.tk, c.pending = c.br.admit(); !c.pending {
				return RefusedByBreaker
			}
			c.pending = true
		} else if !c.br.AllowRetry() {
			return RefusedByBreaker
		}
	}
	if c.lim != nil && !c.take(ctx, wait) {
		return RefusedByLimiter
	}
	if th := c.th; th != nil {
		// Throttle.nowNs and the first test of allowSlow, by hand: their
		// fast paths inline here, which saves an allowed attempt three
		// calls.
		if th.coarse != nil {
			c.at = th.coarse.Nanos()
		} else {
			c.at = th.nowNs()
		}
		c.epoch = th.w.epochNs(c.at, th.bucketWidth())
		if !zeroKnown(th.zeroIn.Load(), c.epoch) && !th.allowSlow(c.at, c.epoch) {
			if c.lim != nil {
				c.give(OutcomeNone) // not sent: the slot says nothing of the load
			}
			return RefusedByThrottle
		}
	}
	return NotRefused
}

// take takes a slot of c's Limiter for an attempt, waiting with ctx if
// wait.
func (c *Call) take(ctx context.Context, wait bool) bool {
	at, ok := c.lim.take(ctx, wait)
	if ok {
		if c.slots == 0 {
			c.since = at
		}
		c.slots++
	}
	return ok
}

// give gives back a slot of c's Limiter, if an attempt holds one, with the
// attempt's outcome. With several (a Hedge's copies), the latency is the
// first one's: the call's, as its caller saw it.
func (c *Call) give(o Outcome) {
	if c.slots == 0 {
		return
	}
	c.slots--
	c.lim.give(c.since, o)
}

// Restarting reports whether Admit refused with RefusedRestart: begin the
// call again with Start.
func (c *Call) Restarting() bool { return c.restart }

// Succeeded tells the guards that the latest attempt succeeded, and that
// the call is over: the breaker hears of it at once rather than at End. A
// closed breaker's success is Breaker.record's fast path by hand, and an
// accept Throttle.answered's: a load and an atomic add each, no call.
func (c *Call) Succeeded() {
	c.outcome = OutcomeSuccess
	if c.slots != 0 {
		c.give(OutcomeSuccess)
	}
	if th := c.th; th != nil && !th.w.addCur(c.epoch, 1<<32|1) {
		th.w.addNew(c.epoch, 1<<32|1)
	}
	br := c.br
	switch {
	case br == nil:
		return
	case br.countAttempts:
		c.report()
		c.tk.probe = false
		return
	case !c.pending:
		return
	case c.tk.probe:
		c.report()
		return
	}
	c.pending = false
	if br.state.Load() != c.tk.state {
		return // the breaker has moved on since this call began
	}
	ns := c.sharedAt()
	if ns == 0 {
		ns = br.nowNs()
	}
	if e := br.w.epochNs(ns, br.bucketWidth()); !br.w.addCur(e, 1<<32) {
		br.w.addNew(e, 1<<32)
	}
}

// Attempted tells the throttle, and the breaker if it counts attempts,
// how an admitted attempt went; the breaker hears the call's outcome, the
// latest attempt's, at End. OutcomeNone (a cancel by the caller, an attempt
// held back and never sent) counts as nothing for either.
func (c *Call) Attempted(o Outcome) {
	c.outcome = o
	c.give(o)
	if c.th != nil && o != OutcomeNone { // a cancel, or an attempt never sent: no evidence either way
		c.th.answered(c.epoch, o != OutcomeFailure)
	}
	if c.br != nil && c.br.countAttempts {
		c.report()
		c.tk.probe = false // only the first attempt probes
	}
}

// End tells the breaker how the call went, the latest attempt's outcome,
// unless it was told already, and gives back any slot of the Limiter still
// held, as saying nothing of the load. Deferred, it reports a call that panicked
// as its latest attempt went, as Hedge does.
func (c *Call) End() {
	for c.slots != 0 { // a Hedge's copies that lost the race, canceled
		c.give(OutcomeNone)
	}
	if c.pending {
		c.report()
	}
}

// Abandon ends a call that did not finish, a panic or a runtime.Goexit:
// unless End or Succeeded told the breaker already, the call counts as
// nothing and gives back its probe, and any slot of the Limiter it holds. Defer it, and call End when the call
// returns.
func (c *Call) Abandon() {
	for c.slots != 0 {
		c.give(OutcomeNone)
	}
	if c.pending {
		c.outcome = OutcomeNone
		c.report()
	}
}

// report tells the breaker the outcome of the latest attempt, as the
// call's, or as the attempt's if it counts attempts.
func (c *Call) report() {
	c.pending = false
	c.br.record(c.tk, c.outcome, c.sharedAt())
}

// sharedAt is the time the throttle read for the latest attempt, if the
// breaker may use it, or else 0.
func (c *Call) sharedAt() int64 {
	if c.shared {
		return c.at
	}
	return 0
}
