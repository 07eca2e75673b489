package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// Do calls op until it succeeds or p says to stop, and returns the [Trace]
// of every attempt with the error that ended the loop (nil on success).
//
// It stops on the first of: success; an error the Classifier will not retry,
// returned as it is; MaxAttempts used up ([ErrExhausted]); a next wait that
// would pass MaxElapsed or the ctx deadline ([ErrDeadline], returned at once
// rather than after sleeping); a refusal by the Budget
// ([ErrBudgetExhausted]); or ctx ending, which is seen at once, even
// mid-wait, and after which op is never called again (the error then matches
// ctx.Err() and context.Cause). Each of these errors also matches the last
// attempt's error with errors.Is. After the last attempt Do returns without
// waiting. An invalid p returns its Validate error and op is never called.
//
// op gets a ctx derived from ctx. When AttemptTimeout or MaxElapsed is set,
// that ctx carries their deadline and ends when its attempt (AttemptTimeout)
// or Do (MaxElapsed) returns, so a value that must outlive the attempt, such
// as a response body or a stream, needs a context of its own. The ctx is also marked so that a Do inside op makes a
// single attempt and leaves retrying to this one; see [Policy.RetryNested].
// A panic in op, in a hook, in the Jitter or in the Classifier reaches the
// caller, and leaves no timer or goroutine behind.
func Do(ctx context.Context, op func(context.Context) error, p Policy) (t Trace, err error) {
	err = p.run(ctx, op, &t)
	return t, err
}

// DoValue is [Do] for an op that returns a value. It returns the value of the
// last attempt made, whatever its error: the success's value, or on failure
// what the failing attempt returned (often the zero value).
//
// To serve a fallback when retries run out, as a cache or a default, test
// the error and replace the value; the Trace and the error still tell that
// the fallback was served (see the example).
func DoValue[T any](ctx context.Context, op func(context.Context) (T, error), p Policy) (v T, t Trace, err error) {
	if op == nil {
		t.stop = "invalid call"
		return v, t, errNilOp
	}
	err = p.run(ctx, func(ctx context.Context) (err error) {
		v, err = op(ctx)
		return err
	}, &t)
	return v, t, err
}

var (
	errNilOp      = errors.New("retry: called with a nil op")
	errNilContext = errors.New("retry: called with a nil Context")
)

// run is the one retry loop behind Do and DoValue. p is the caller's copy.
func (p *Policy) run(ctx context.Context, op func(context.Context) error, t *Trace) (err error) {
	switch {
	case op == nil:
		t.stop = "invalid call"
		return errNilOp
	case ctx == nil:
		t.stop = "invalid call"
		return errNilContext
	}
	if err := p.resolve(); err != nil {
		t.stop = "invalid policy"
		return err
	}
	if err := ctx.Err(); err != nil {
		t.stop = err.Error()
		return ctxStop(ctx, nil, 0)
	}

	maxAttempts, deferred := p.MaxAttempts, false
	opCtx := ctx
	if isNested(ctx) {
		deferred = !p.RetryNested
		if deferred {
			maxAttempts = 1
		}
	} else if maxAttempts != 1 {
		opCtx = markNested(ctx)
	}

	// began is when the current attempt started, or zero when it is not
	// timed: the first attempt is timed only when MaxElapsed needs its start
	// (see Attempt.Start).
	var began, deadline time.Time
	if p.MaxElapsed > 0 {
		began = now(p.Clock)
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
	// wait is the wait before the current attempt: the callee's After, if
	// any, plus backoff, the jittered part, which alone feeds the next
	// Jitter so that one long Retry-After does not pin later waits at the cap.
	var wait, backoff time.Duration
	for n := 1; ; n++ {
		a := t.next(maxAttempts) // filled in place: a call that succeeds at once copies nothing
		a.Number, a.Delay, a.Start = n, wait, began
		err = p.call(opCtx, op)
		a.Err = err
		var ended time.Time
		if err != nil || !began.IsZero() {
			ended = now(p.Clock)
			if !began.IsZero() {
				a.Duration = ended.Sub(began)
			}
		}
		if err == nil {
			t.stop = "ok"
			if p.Budget != nil {
				p.Budget.succeeded()
			}
			break
		}
		if cerr := ctx.Err(); cerr != nil { // the caller's ctx ended: stop, whatever the error
			a.Reason = cerr.Error()
			t.stop, err = a.Reason, ctxStop(ctx, err, n)
			break
		}

		d := p.Classifier(err)
		a.Reason = d.Reason
		if !d.Retry {
			t.stop = d.Reason
			break
		}
		if p.Budget != nil {
			p.Budget.failed()
		}
		if deferred {
			t.stop = "deferred to outer retry loop"
			break
		}
		if n == maxAttempts {
			t.stop, err = "attempts exhausted", &stopError{why: ErrExhausted, last: err, attempts: n}
			break
		}
		if p.Budget != nil && !p.Budget.allow() {
			t.stop, err = "retry budget exhausted", &stopError{why: ErrBudgetExhausted, last: err, attempts: n}
			break
		}

		backoff = p.wait(n, backoff, rand.Float64())
		wait = addSat(max(d.After, 0), backoff)
		// The deadline check reads the clock afresh: the Classifier's time
		// counts, and so does OnRetry's, which may use up the slack.
		fit := fits(ctx, p.Clock, deadline, wait)
		if fit && p.OnRetry != nil {
			p.OnRetry(ctx, *a, wait)
			fit = fits(ctx, p.Clock, deadline, wait)
		}
		if !fit {
			t.stop, err = "deadline", &stopError{why: ErrDeadline, last: err, attempts: n, wait: wait}
			break
		}
		woke, ok := sl.sleep(ctx, p.Clock, wait)
		if !ok || ctx.Err() != nil {
			// The wait was cut short, or the cancel raced the timer: either
			// way op is not called again.
			t.stop, err = ctx.Err().Error(), ctxStop(ctx, err, n)
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
// MaxElapsed deadline (zero if none) and ctx's deadline. A wait that ends
// exactly at a deadline does not fit: the next attempt would have no time.
// It reads the clock only when there is a deadline.
func fits(ctx context.Context, clk Clock, deadline time.Time, wait time.Duration) bool {
	if d, ok := ctx.Deadline(); ok && (deadline.IsZero() || d.Before(deadline)) {
		deadline = d
	}
	return deadline.IsZero() || deadline.Sub(now(clk)) > wait
}

// ctxStop is the error for a ctx that ended after n attempts.
func ctxStop(ctx context.Context, last error, n int) error {
	e := &stopError{why: ctx.Err(), last: last, attempts: n}
	if cause := context.Cause(ctx); cause != e.why {
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
