package retry

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry/guard"
)

// Hedge calls op as [Do] does, and also starts another copy of it while
// the attempts that run are slow, as h says; the first success wins and the
// other attempts' contexts are canceled. Use it only where op is safe to run
// several times at once: it is a separate entry point for that reason, so
// that no Policy turns a plain Do into concurrent calls by surprise.
//
// p applies as to Do: MaxAttempts counts every attempt, hedges and retries
// alike; an error the Classifier will not retry ends the call at once, and
// one it would retry lets the others run (and, after the hedge delay or
// the failure's RetryAfter, whichever is longer, a replacement start); when
// none is left running, Do's rules take over (a wait, then a retry, or a
// stop). Each hedge costs its Budget a token, as a retry does, and one of
// the Hedger's MaxFraction; when either runs out, no new hedge starts, and
// those that run are not canceled. The Trace records every attempt, those started as hedges
// marked Hedged; the winner is the attempt whose Err is nil, and the
// attempts still running when it won end with context.Canceled and the
// Reason "lost the race". OnDone fires once, with every attempt made, a
// panic included. A panic in op is raised again in the caller's goroutine.
// Each attempt's ctx carries the mark of a retry loop, as Do's op ctx does,
// so that a Do inside op makes one attempt and leaves retrying to Hedge.
func Hedge(ctx context.Context, h *Hedger, op func(context.Context) error, p Policy) (Trace, error) {
	if op == nil {
		return Trace{stop: StopInvalid}, errNilOp
	}
	_, t, err := HedgeValue(ctx, h, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, op(ctx)
	}, nil, p)
	return t, err
}

// HedgeValue is [Hedge] for an op that returns a value. It returns the
// value of the attempt that ended the call, whatever its error: the
// winner's, or on failure the last failed attempt's, as DoValue does.
// release, if not nil, is called once with the value of every other
// attempt, whatever its error (the zero value included): of each failed
// attempt as soon as a later one makes it moot (before the wait that
// precedes a retry, at the latest), and of each attempt that answers after
// the call ended, on a goroutine of its own. So nothing an
// attempt holds, a response body say, is left unreleased.
//
// op's ctx ends when HedgeValue returns, for the winner as for the others:
// a value that must outlive the call, such as a response body, needs a
// context of its own, which op cancels only while no answer has come.
func HedgeValue[T any](ctx context.Context, h *Hedger, op func(context.Context) (T, error), release func(T), p Policy) (v T, t Trace, err error) {
	if op == nil || h == nil {
		t.stop = StopInvalid
		if h == nil {
			return v, t, errNilHedger
		}
		return v, t, errNilOp
	}
	if release == nil {
		release = func(T) {}
	}
	// The run fills t in place, so that OnDone sees the attempts made
	// even when one panicked.
	r := hedgeRun[T]{h: h, op: op, release: release, p: p, t: &t}
	if p.OnDone != nil {
		onDone := p.OnDone
		r.p.OnDone = nil
		returned := false
		defer func() { callOnDone(ctx, onDone, &t, &err, returned) }()
		v, err = r.run(ctx)
		returned = true
		return v, t, err
	}
	v, err = r.run(ctx)
	return v, t, err
}

var errNilHedger = errors.New("retry: Hedge called with a nil Hedger")

// hedgeRun is one call of HedgeValue: the attempts it started, their
// results, and its timers. Its fields are used only on the caller's
// goroutine; the attempts reach it through results.
type hedgeRun[T any] struct {
	h       *Hedger
	op      func(context.Context) (T, error)
	release func(T)
	p       Policy
	t       *Trace

	results      chan hedgeResult[T]
	cancels      map[int]context.CancelFunc // of the attempts running, by number
	inFlight     int
	started      int
	returnedKept bool      // the kept failed value is the call's, not to release
	round        time.Time // when the latest attempt that was not a hedge started: the call's latency runs from it
}

// returnKept returns v, the kept failed value, as the call's.
func (r *hedgeRun[T]) returnKept(v T) T {
	r.returnedKept = true
	return v
}

type hedgeResult[T any] struct {
	n              int
	v              T
	err            error
	panicV         any
	started, ended time.Time
}

func (r *hedgeRun[T]) run(ctx context.Context) (v T, err error) {
	p, t := &r.p, r.t
	switch {
	case ctx == nil:
		t.stop = StopInvalid
		return v, errNilContext
	}
	if err := p.resolve(); err != nil {
		t.stop = StopInvalid
		return v, err
	}
	if ctx.Err() != nil {
		t.stop = StopContextDone
		return v, ctxStop(ctx, nil, 0)
	}
	maxAttempts, maxInFlight := p.MaxAttempts, r.h.maxInFlight()
	// One retry owner: nested in another loop's op, Hedge still races its
	// copies, but leaves retrying after failures to that loop; otherwise it
	// marks its attempts' ctx as a loop's, so that a Do in op defers to it.
	deferred := outerLoop(ctx) != nil && !p.RetryNested
	lim := p.Limiter
	if lim != nil && slotHeld(ctx, lim) {
		lim = nil // the attempt this call runs in holds a slot of it already
	}
	var callCtx context.Context = ctx
	var marked *atomic.Bool
	if !deferred {
		mark := &loopMark{Context: ctx, budget: p.Budget}
		marked, callCtx = &mark.done, mark
	}
	if lim != nil {
		callCtx, marked = markSlots(callCtx, lim, marked)
	}
	if marked != nil {
		defer marked.Store(true)
	}
	callCtx, cancelCall := context.WithCancel(callCtx)
	defer cancelCall()
	var deadline time.Time
	if p.MaxElapsed > 0 {
		deadline = now(p.Clock).Add(p.MaxElapsed)
		var cancel context.CancelFunc
		callCtx, cancel = withDeadline(p.Clock, callCtx, deadline)
		defer cancel()
	}
	// Each attempt sends one result, and the buffer has room for all that
	// can run at once: an attempt never blocks on a call that has returned.
	r.results = make(chan hedgeResult[T], maxInFlight)
	r.cancels = make(map[int]context.CancelFunc, maxInFlight)
	defer r.finish(t)

	var hedge, retryWait timer
	defer hedge.stop()
	defer retryWait.stop()
	// The Breaker, the Limiter and the Throttle see the first attempt,
	// each retry and each hedge before it starts; a hedge they refuse is
	// not started, and never takes a half-open breaker's probe. Each
	// attempt in flight holds a slot of the Limiter; the first attempt and
	// a retry may wait for one, a hedge does not.
	var g guard.Call
	guarded := p.Throttle != nil || p.Breaker != nil || lim != nil
	if guarded {
		g.Start(p.Throttle, p.Breaker)
		g.Limit(lim)
		defer g.End()
		if r := g.AdmitContext(callCtx, 1); r != guard.NotRefused {
			if ctx.Err() != nil {
				t.stop = StopContextDone
				return v, ctxStop(ctx, nil, 0)
			}
			t.stop = refusalStop(r)
			return v, refusedError(t.stop, 0, nil)
		}
	}
	if b := p.Budget; b != nil {
		if outer := outerLoop(ctx); outer == nil || p.RetryNested || outer.budget != b {
			b.Started()
		}
	}
	r.h.begin()
	r.start(callCtx, false, 0)
	if maxInFlight > 1 && maxAttempts != 1 {
		hedge.arm(p.Clock, r.h.HedgeDelay(), false)
	}
	var jittered time.Duration
	// kept is the last failed attempt's result: its value is the one to
	// return if the call fails, and is released as soon as it is not.
	var kept hedgeResult[T]
	hasKept := false
	keep := func(res hedgeResult[T]) {
		if hasKept {
			r.release(kept.v)
		}
		kept, hasKept = res, true
	}
	defer func() {
		if hasKept && !r.returnedKept {
			r.release(kept.v)
		}
	}()
	for {
		select {
		case res := <-r.results:
			r.inFlight--
			delete(r.cancels, res.n)
			a := t.attempt(res.n)
			if a == nil { // the middle of a long call, which the Trace does not keep
				a = &Attempt{Number: res.n, Start: res.started}
			}
			a.Duration, a.Err = res.ended.Sub(res.started), res.err
			if res.panicV != nil {
				panic(res.panicV) // the deferred finish cancels and reaps the others first
			}
			if res.err == nil {
				r.h.observe(res.ended.Sub(r.round))
				t.stop = StopSuccess
				if p.Budget != nil {
					p.Budget.Succeeded()
				}
				if guarded {
					g.Succeeded()
				}
				return res.v, nil
			}
			keep(res)
			if ctx.Err() != nil {
				if guarded {
					g.Attempted(guard.OutcomeOf(ctx.Err(), false))
				}
				a.Reason = ctx.Err().Error()
				t.stop = StopContextDone
				return r.returnKept(kept.v), ctxStop(ctx, res.err, t.n)
			}
			d := p.Classifier(ctx, *a)
			a.Reason = d.Reason
			if guarded {
				g.Attempted(attemptOutcome(res.err, d))
			}
			if !d.Retry {
				t.stop = StopNotRetryable
				return r.returnKept(kept.v), res.err
			}
			if p.Budget != nil {
				p.Budget.Failed()
			}
			if r.inFlight > 0 {
				if !hedge.armed() && r.started != maxAttempts && r.inFlight < maxInFlight {
					// A replacement, if the others stay slow; not before the
					// RetryAfter that the failure asked for.
					hedge.arm(p.Clock, max(r.h.HedgeDelay(), d.RetryAfter), false)
				}
				continue
			}
			// Nothing runs: Do's rules.
			hedge.stop()
			wait, stop, err := p.retryOrStop(ctx, a, d, t.n, r.started == maxAttempts, deferred, p.Budget, deadline, &jittered)
			if stop != StopNone {
				t.stop = stop
				return r.returnKept(kept.v), err
			}
			// The wait fits: the kept value is moot now, and releasing it
			// before the wait frees what it holds (a connection) for the
			// next attempt.
			r.release(kept.v)
			hasKept = false
			retryWait.arm(p.Clock, wait, true)

		case <-hedge.c:
			hedge.stop()
			// A hedge is admitted as a retry is (another), then by the
			// Throttle, and by the Hedger's own bounds.
			if r.inFlight < maxInFlight && p.another(r.started == maxAttempts, p.Budget) == StopNone &&
				(!guarded || g.Admit(r.started+1) == guard.NotRefused) && r.h.allowHedge() {
				if p.Budget != nil {
					p.Budget.Failed() // a hedge costs what a retry costs
					p.Budget.Retrying()
				}
				r.start(callCtx, true, r.h.HedgeDelay())
				if r.inFlight < maxInFlight && r.started != maxAttempts {
					hedge.arm(p.Clock, r.h.HedgeDelay(), false)
				}
			}

		case <-retryWait.c:
			w := retryWait.d
			retryWait.stop()
			if guarded {
				if ref := g.AdmitContext(callCtx, r.started+1); ref != guard.NotRefused {
					if ctx.Err() != nil {
						t.stop = StopContextDone
						return v, ctxStop(ctx, kept.err, t.n)
					}
					t.stop = refusalStop(ref) // the kept value was released before the wait
					return v, &StopError{Stop: t.stop, Attempts: t.n, Err: kept.err}
				}
			}
			r.start(callCtx, false, w)
			if maxInFlight > 1 && r.started != maxAttempts {
				hedge.arm(p.Clock, r.h.HedgeDelay(), false)
			}

		case <-ctx.Done():
			t.stop = StopContextDone
			if hasKept {
				return r.returnKept(kept.v), ctxStop(ctx, kept.err, t.n)
			}
			return v, ctxStop(ctx, t.Last().Err, t.n)
		}
	}
}

// start launches attempt n+1 on its own goroutine.
func (r *hedgeRun[T]) start(callCtx context.Context, hedged bool, wait time.Duration) {
	r.started++
	n := r.started
	a := r.t.next(r.p.MaxAttempts)
	start := now(r.p.Clock)
	a.Number, a.Wait, a.Start, a.Hedged = n, wait, start, hedged
	if !hedged {
		r.round = start
	}
	actx, cancel := context.WithCancel(callCtx)
	if r.p.AttemptTimeout > 0 {
		var cancelTimeout context.CancelFunc
		actx, cancelTimeout = withTimeout(r.p.Clock, actx, r.p.AttemptTimeout)
		stop := cancel
		cancel = func() { cancelTimeout(); stop() }
	}
	r.cancels[n] = cancel
	r.inFlight++
	op, clk, results := r.op, r.p.Clock, r.results
	go func() {
		res := hedgeResult[T]{n: n, started: start}
		defer func() {
			if v := recover(); v != nil {
				res.panicV = v
			}
			res.ended = now(clk)
			results <- res
		}()
		res.v, res.err = op(actx)
	}()
}

// finish ends the attempts still running, records them as having lost, and
// leaves a goroutine to collect their results and release their values.
func (r *hedgeRun[T]) finish(t *Trace) {
	if r.inFlight == 0 {
		return
	}
	end := now(r.p.Clock)
	for n, cancel := range r.cancels {
		cancel()
		if a := t.attempt(n); a != nil {
			a.Duration, a.Err, a.Reason = end.Sub(a.Start), context.Canceled, "lost the race"
		}
	}
	cancels, results, release, left := r.cancels, r.results, r.release, r.inFlight
	go func() {
		for range left {
			res := <-results
			if cancel := cancels[res.n]; cancel != nil {
				cancel() // releases its AttemptTimeout timer too
			}
			if res.panicV == nil {
				release(res.v)
			}
		}
	}()
}
