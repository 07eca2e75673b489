package retry

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry/guard"
)

// Do calls op until it succeeds or p says to stop, and returns the [Trace]
// of every attempt with the error that ended the loop (nil on success).
//
// It stops on the first of: success; an error the Classifier will not retry,
// returned as it is; MaxAttempts used up ([ErrExhausted]); a next wait that
// would pass MaxElapsed or the ctx deadline ([ErrDeadline], returned at once
// rather than after sleeping); a refusal by the Budget
// ([ErrBudgetExhausted]); a refusal by the Throttle ([ErrThrottled]) or
// the Breaker ([ErrBreakerOpen]), before any attempt, the first included,
// that they would not let through; a refusal by the Limiter
// ([ErrLimited]), when no slot came free for an attempt in time; or ctx ending, which is seen at once, even
// mid-wait, and after which op is never called again (the error then matches
// ctx.Err() and context.Cause). Each of these errors is a [*StopError] and
// also matches the last attempt's error with errors.Is; all but ctx's
// match [ErrGaveUp]. After the last attempt Do returns without waiting. An
// invalid p returns its Validate error and op is never called.
//
// op gets a ctx derived from ctx. When AttemptTimeout or MaxElapsed is set,
// that ctx carries their deadline and ends when its attempt (AttemptTimeout)
// or Do (MaxElapsed) returns, so a value that must outlive the attempt, such
// as a response body or a stream, needs a context of its own. The ctx is
// also marked, for as long as Do runs, so that a Do inside op makes a single
// attempt and leaves retrying to this one; see [Policy.RetryNested]. A panic
// in op, in a hook, in the Jitter or in the Classifier reaches the caller,
// and leaves no timer or goroutine behind.
func Do(ctx context.Context, op func(context.Context) error, p Policy) (t Trace, err error) {
	switch {
	case p.OnDone != nil:
		err = p.observe(ctx, op, &t)
	case p.guarded():
		err = p.runGuarded(ctx, op, &t)
	default:
		err = p.run(ctx, op, &t, nil)
	}
	return t, err
}

// DoValue is [Do] for an op that returns a value. It returns the value of the
// last attempt made, whatever its error: the success's value, or on failure
// what the failing attempt returned (often the zero value).
//
// The values of earlier attempts are dropped: an op whose value holds a
// resource (a response, rows, a file) must release it itself before it
// returns an error, since Do will not see it again (see the example).
//
// To serve a fallback when retries run out, as a cache or a default, test
// the error with errors.Is(err, ErrGaveUp) and replace the value; the Trace
// and the error still tell that the fallback was served.
func DoValue[T any](ctx context.Context, op func(context.Context) (T, error), p Policy) (v T, t Trace, err error) {
	if op == nil {
		t.stop = StopInvalid
		return v, t, errNilOp
	}
	f := func(ctx context.Context) (err error) {
		v, err = op(ctx)
		return err
	}
	switch {
	case p.OnDone != nil:
		err = p.observe(ctx, f, &t)
	case p.guarded():
		err = p.runGuarded(ctx, f, &t)
	default:
		err = p.run(ctx, f, &t, nil)
	}
	return v, t, err
}

var (
	errNilOp      = errors.New("retry: called with a nil op")
	errNilContext = errors.New("retry: called with a nil Context")
	errPanicked   = errors.New("retry: op or a hook panicked")
)

// observe is run with OnDone: a loop of its own, so that a Policy without
// OnDone pays nothing for it, not even a defer.
func (p *Policy) observe(ctx context.Context, op func(context.Context) error, t *Trace) (err error) {
	onDone, returned := p.OnDone, false
	defer func() { callOnDone(ctx, onDone, t, &err, returned) }()
	if p.guarded() {
		err = p.runGuarded(ctx, op, t)
	} else {
		err = p.run(ctx, op, t, nil)
	}
	returned = true
	return err
}

// callOnDone calls onDone as Policy.OnDone promises: not for a call that
// never started, and, when the loop did not return (a panic, or
// runtime.Goexit, which goes on after it), with StopPanicked.
func callOnDone(ctx context.Context, onDone func(context.Context, Trace, error), t *Trace, err *error, returned bool) {
	if t.stop == StopInvalid {
		return
	}
	if !returned {
		t.stop, *err = StopPanicked, errPanicked
	}
	onDone(ctx, *t, *err)
}

// run is the one retry loop behind Do and DoValue. p is the caller's copy;
// g is nil when it has neither a Throttle nor a Breaker.
func (p *Policy) run(ctx context.Context, op func(context.Context) error, t *Trace, g *guard.Call) (err error) {
	// One return for every way to stop before the loop: its defers stay
	// open-coded only while returns × defers ≤ 15.
	resolved, admitted, err := p.begin(ctx, op, t, g)
	if err != nil {
		return err
	}

	maxAttempts, budget, deferred := p.maxAttempts(), p.Budget, false
	opCtx := ctx
	var marked *atomic.Bool // the mark on opCtx, dead once the loop returns
	if outer := outerLoop(ctx); outer != nil && !p.RetryNested {
		deferred, maxAttempts = true, 1
		if outer.budget == budget {
			budget = nil // the outer loop counts this attempt: once is enough
		}
	} else if maxAttempts != 1 {
		opCtx, marked = markLoop(ctx, p)
	}
	if p.Limiter != nil && marked == nil { // its attempts hold slots: a loop inside must see it
		opCtx, marked = markSlots(opCtx, p.Limiter, nil)
	}
	if marked != nil {
		// One defer for either mark: a fourth would keep the compiler from
		// open-coding them (at most 15 returns × defers).
		defer marked.Store(true)
	}

	// began is when the current attempt started, or zero when it is not
	// timed: the first attempt is timed only when MaxElapsed or OnDone
	// needs its start (see Attempt.Start).
	var began, deadline time.Time
	if p.MaxElapsed > 0 || p.OnDone != nil { // observers want the whole call's time
		began = now(p.Clock)
	}
	if p.MaxElapsed > 0 {
		deadline = began.Add(p.MaxElapsed)
		var cancel context.CancelFunc
		opCtx, cancel = withDeadline(p.Clock, opCtx, deadline)
		defer cancel()
	}

	var sl sleeper
	defer sl.stop()
	// The loop leaves by break, not return, so that this function keeps few
	// return statements and the compiler open-codes its defers: a call that
	// succeeds at once then pays nothing for them.
	//
	// wait is the wait before the current attempt; pr carries what the
	// next step needs (Progress.PrevWait: the Jitter's part of it alone).
	pr := Progress{Deadline: deadline, Guard: g}
	var wait time.Duration
	for n := 1; ; n++ {
		if g != nil && !admitted {
			// A full Limiter queues the attempt, while op's ctx lives.
			if r := g.AdmitContext(opCtx, n); r != guard.NotRefused {
				if ctx.Err() != nil { // it ended while the attempt waited for a slot
					t.stop, err = StopContextDone, ctxStop(ctx, err, n-1)
					break
				}
				stop := refusalStop(r)
				t.stop, err = stop, refusedError(stop, n-1, err)
				break
			}
		}
		admitted = false
		if n == 1 && budget != nil {
			budget.Started() // sent: a ratio budget counts it
		}
		a := t.next(maxAttempts) // filled in place: a call that succeeds at once copies nothing
		a.Number, a.Wait, a.Start = n, wait, began
		err = p.call(opCtx, op)
		a.Err = err
		var ended time.Time
		if err != nil || !began.IsZero() {
			ended = now(p.Clock)
			if began.IsZero() {
				t.firstEnd = ended
			} else {
				a.Duration = ended.Sub(began)
			}
		}
		if err == nil {
			t.stop = StopSuccess
			if budget != nil {
				budget.Succeeded()
			}
			if g != nil {
				g.Succeeded()
			}
			break
		}
		if !resolved {
			_ = p.resolve() // plainValid said it is valid
			resolved = true
		}
		pr.Attempts = n
		v := p.next(ctx, a, &pr, maxAttempts, deferred, budget)
		if v.Stop != StopNone {
			t.stop, err = v.Stop, v.Err
			break
		}
		wait = v.Wait
		woke, ok := sl.sleep(ctx, p.Clock, wait)
		if !ok || ctx.Err() != nil {
			// The wait was cut short, or the cancel raced the timer: either
			// way op is not called again.
			t.stop, err = StopContextDone, ctxStop(ctx, err, n)
			break
		}
		// The next attempt starts when the wait ended: the time the timer
		// delivered, which saves a clock read, or the end of this attempt if
		// there was no wait.
		began = woke
		if began.IsZero() {
			began = ended
		}
	}
	return err
}

// begin is what run does before its loop: it checks the call, fills in
// the defaults when plainValid cannot vouch for p (resolved), and asks g
// about the first attempt when no Limiter may make it wait (admitted). A
// non-nil error stops the call, t.stop set, before any attempt.
func (p *Policy) begin(ctx context.Context, op func(context.Context) error, t *Trace, g *guard.Call) (resolved, admitted bool, err error) {
	switch {
	case op == nil:
		t.stop = StopInvalid
		return false, false, errNilOp
	case ctx == nil:
		t.stop = StopInvalid
		return false, false, errNilContext
	}
	// The defaults are filled in at the first failure: a call that succeeds
	// at once never reads them, and most Policies need only plainValid's
	// few tests to be known valid.
	if !p.plainValid() {
		if err := p.resolve(); err != nil {
			t.stop = StopInvalid
			return false, false, err
		}
		resolved = true
	}
	if ctx.Err() != nil {
		t.stop = StopContextDone
		return resolved, false, ctxStop(ctx, nil, 0)
	}
	// A Throttle and a Breaker answer the first attempt without its ctx:
	// they are asked before run marks the ctx, so that a refusal (an open
	// breaker refuses every call) costs no mark nobody gets, and no error
	// of its own (refusedError). A Limiter may wait for a slot on op's
	// ctx, its MaxElapsed deadline included: run asks it in the loop.
	if g != nil && p.Limiter == nil {
		if r := g.Admit(1); r != guard.NotRefused {
			t.stop = refusalStop(r)
			return resolved, false, refusedError(t.stop, 0, nil)
		}
		admitted = true
	}
	return resolved, admitted, nil
}

// call runs one attempt under AttemptTimeout, if any, and releases the
// attempt's ctx when op returns, even if op panics.
func (p *Policy) call(ctx context.Context, op func(context.Context) error) error {
	if p.AttemptTimeout <= 0 {
		return op(ctx)
	}
	ctx, cancel := withTimeout(p.Clock, ctx, p.AttemptTimeout)
	defer cancel()
	return op(ctx)
}

// fits reports whether a wait that starts now ends before both the
// MaxElapsed deadline (zero if none) and ctx's deadline, and whether ctx's
// deadline is the nearer one. A wait that ends exactly at a deadline does
// not fit: the next attempt would have no time. It reads the clock only
// when there is a deadline.
func fits(ctx context.Context, clk Clock, deadline time.Time, wait time.Duration) (fit, byCtx bool) {
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline, byCtx = d, true
	}
	return deadline.IsZero() || deadline.Sub(now(clk)) > wait, byCtx
}

// ctxStop is the error for a ctx that ended after n attempts.
func ctxStop(ctx context.Context, last error, n int) error {
	e := &StopError{Stop: StopContextDone, Attempts: n, Err: last, ctxErr: ctx.Err()}
	if cause := context.Cause(ctx); cause != e.ctxErr {
		e.cause = cause
	}
	return e
}

// addSat adds two non-negative durations, saturating instead of wrapping.
func addSat(a, b time.Duration) time.Duration {
	if s := a + b; s >= a {
		return s
	}
	return time.Duration(1<<63 - 1)
}
