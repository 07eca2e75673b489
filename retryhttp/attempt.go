package retryhttp

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/stormguard/retry/internal/clocks"
)

// attempt is one send of the request.
//
// Its request carries Do's op ctx when that is enough (see needsOwnCtx), and
// otherwise a ctx of the attempt's own, derived from the request's ctx: a
// timer on the policy's clock ends it at AttemptTimeout or MaxElapsed, and
// it is released when the attempt's response is drained, or closed by the
// caller. A timed attempt always needs its own: with MaxElapsed, Do's op ctx
// ends when Do returns, and the body of the response returned to the caller
// must outlive that.
type attempt struct {
	ctx context.Context // what its request carries: &own, or Do's op ctx

	// own is the attempt's own ctx, if it has one. The request carries its
	// address, which converts to a context.Context without an allocation.
	own    ownedCtx
	cancel context.CancelCauseFunc // ends own; nil if the attempt has none

	timer interface{ Stop() bool } // nil when not timed, or once stopped
	late  bool                     // the timer fired before it was stopped
	auth  string                   // the Authorization it carried, when Refresh is set
	resp  *http.Response
}

// send makes one attempt and returns it once its response headers arrive.
// On error the attempt is already released.
func (c *call) send(loop context.Context) (*attempt, error) {
	a := c.start(loop)
	r, err := c.clone(a)
	if err == nil {
		a.resp, err = c.base.RoundTrip(r)
		switch {
		case err == nil && a.resp == nil:
			err = errNoResponse
		case err != nil && a.resp != nil: // a broken Base; http.Client ignores such a response too
			if a.resp.Body != nil {
				a.resp.Body.Close()
			}
			a.resp = nil
		}
	}
	if err != nil {
		err = c.timedOut(a.ctx, err)
		a.release()
		return nil, err
	}
	// The timers bound the wait for the response head, and nothing after
	// it: neither the Classifier nor the caller's reading of the body.
	if !a.stopTimer() {
		// The time ran out just as the head came: the attempt's ctx has
		// ended, so its body is unreadable. It counts as timed out.
		a.discard(0)
		return nil, errAttemptTimeout
	}
	return a, nil
}

// timedOut returns err, the error Base returned for an attempt sent on actx,
// as a timeout if the attempt's own time limit (AttemptTimeout, or what
// MaxElapsed left) ended actx while the caller's ctx is alive: whatever
// error Base made of that, context.Canceled or anything else, the attempt
// timed out, and a Classifier must see a timeout, not a cancellation. The
// plain path ends an attempt's ctx with errAttemptTimeout; the hedged one
// gets a ctx from retry.HedgeValue, which ends with DeadlineExceeded.
func (c *call) timedOut(actx context.Context, err error) error {
	if c.req.Context().Err() != nil || errors.Is(err, errAttemptTimeout) {
		return err
	}
	if context.Cause(actx) != errAttemptTimeout && actx.Err() != context.DeadlineExceeded {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// Only the echo of the ended ctx, which says nothing more; kept, a
		// Canceled in it would read as the caller's cancellation.
		return errAttemptTimeout
	}
	return &attemptTimeoutError{err}
}

// start begins an attempt: it makes the attempt's own ctx, if it needs one,
// and arms its timer.
func (c *call) start(loop context.Context) *attempt {
	a := &attempt{ctx: loop}
	c.live = a
	d, timed := c.limit(loop)
	if timed || c.needsOwnCtx(loop) {
		ctx, cancel := context.WithCancelCause(c.req.Context())
		a.own = ownedCtx{Context: ctx, loop: loop}
		a.ctx, a.cancel = &a.own, cancel
	}
	if timed {
		if d <= 0 {
			a.cancel(errAttemptTimeout)
		} else {
			cancel := a.cancel
			a.timer = clocks.AfterFunc(c.clk, d, func() { cancel(errAttemptTimeout) })
		}
	}
	return a
}

// needsOwnCtx reports whether an attempt that is not timed needs a ctx of
// its own, one that ends when the attempt is released, rather than loop, Do's
// op ctx, which has the request's ctx and the nested-loop mark.
//
// It does not when loop ends only when the request's ctx does (it has the
// same Done channel: Do put no MaxElapsed deadline on it) and Base is an
// *http.Transport. That Transport frees the connection, and all it holds for
// a response, once the response body is read to its end or closed, and every
// response is one or the other here: drained for a retry, closed on a panic,
// or returned for the caller to close. Any other Base may tie to the
// request's ctx something that only the end of the ctx frees, so its
// attempts get a ctx of their own, which their release ends.
func (c *call) needsOwnCtx(loop context.Context) bool {
	_, std := c.base.(*http.Transport)
	return !std || loop.Done() != c.req.Context().Done()
}

// limit returns how long the next attempt may wait for its response
// headers: AttemptTimeout, or less if the MaxElapsed deadline on loop comes
// first. The request's own deadline needs no timer: the attempt's ctx has it.
func (c *call) limit(loop context.Context) (time.Duration, bool) {
	d, ok := c.timeout, c.timeout > 0
	if end, has := loop.Deadline(); has {
		if own, mine := c.req.Context().Deadline(); !mine || !own.Equal(end) {
			if left := clocks.Until(c.clk, end); !ok || left < d {
				d, ok = left, true
			}
		}
	}
	return d, ok
}

// stopTimer stops the attempt's timer, if it still runs, and reports
// whether the attempt is in time: the timer had not fired. Once the
// response is the caller's, only the caller's Close calls it, and then the
// timer is stopped already.
func (a *attempt) stopTimer() bool {
	if a.timer != nil {
		a.late = !a.timer.Stop()
		a.timer = nil
	}
	return !a.late
}

// release ends the attempt's own ctx, if it has one. Its response, if any,
// is then unreadable.
func (a *attempt) release() {
	a.stopTimer()
	if a.cancel != nil {
		a.cancel(errReleased)
	}
}

// discard drains the response, for at most limit, and closes it, so that
// its connection can be reused; then it drops it and releases the attempt.
func (a *attempt) discard(limit time.Duration) {
	drain(a.resp, limit)
	a.resp = nil
	a.release()
}

// keep readies the response for the caller: if the attempt has a ctx of its
// own, its body releases the attempt when closed.
func (a *attempt) keep() *http.Response {
	a.stopTimer()
	if a.cancel != nil {
		a.resp.Body = releaseOnClose(a.resp.Body, a)
	}
	return a.resp
}
