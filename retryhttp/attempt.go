package retryhttp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/benbjohnson/clock"
)

// attempt is one send of the request, with a ctx of its own.
//
// Do's op ctx cannot carry the request: it ends when Do returns, and the
// body of the response returned to the caller must outlive that. So each
// attempt's ctx derives from the request's ctx, a timer on the policy's clock
// ends it at AttemptTimeout or MaxElapsed, and it is released when the
// attempt's response is drained, or closed by the caller.
type attempt struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	timer  interface{ Stop() bool } // nil when not timed, or once stopped
	late   bool                     // the timer fired before it was stopped
	gen    uint64                   // the refresher's generation when it was sent
	resp   *http.Response
}

// send makes one attempt and returns it once its response headers arrive.
// On error the attempt is already released.
func (c *call) send(loop context.Context) (*attempt, error) {
	a := c.start(loop)
	r, err := c.clone(a, loop)
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
		// Our timer, not the caller, ended the attempt: whatever error Base
		// made of that, it is a timeout.
		timedOut := context.Cause(a.ctx) == errAttemptTimeout
		a.release()
		if timedOut && !errors.Is(err, errAttemptTimeout) {
			err = fmt.Errorf("%w: %w", errAttemptTimeout, err)
		}
		return nil, err
	}
	return a, nil
}

// start makes the attempt's ctx and arms its timer.
func (c *call) start(loop context.Context) *attempt {
	ctx, cancel := context.WithCancelCause(c.req.Context())
	a := &attempt{ctx: ctx, cancel: cancel}
	c.live = a
	if d, ok := c.limit(loop); ok {
		if d <= 0 {
			cancel(errAttemptTimeout)
		} else {
			a.timer = afterFunc(c.clk, d, func() { cancel(errAttemptTimeout) })
		}
	}
	if c.t.Refresh != nil {
		a.gen = c.t.refresh.generation()
	}
	return a
}

// limit returns how long the next attempt may wait for its response
// headers: AttemptTimeout, or less if the MaxElapsed deadline on loop comes
// first. The request's own deadline needs no timer: the attempt's ctx has it.
func (c *call) limit(loop context.Context) (time.Duration, bool) {
	d, ok := c.timeout, c.timeout > 0
	if end, has := loop.Deadline(); has {
		if own, mine := c.req.Context().Deadline(); !mine || !own.Equal(end) {
			if left := until(c.clk, end); !ok || left < d {
				d, ok = left, true
			}
		}
	}
	return d, ok
}

// clone returns the request to send for attempt a: a copy of the caller's,
// on a's ctx, with a fresh body and the Transport's headers.
func (c *call) clone(a *attempt, loop context.Context) (*http.Request, error) {
	r := c.req.Clone(ownedCtx{Context: a.ctx, loop: loop})
	if c.bodySent && c.req.GetBody != nil {
		body, err := c.req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("retryhttp: GetBody: %w", err)
		}
		r.Body = body
	}
	c.bodySent = true
	if r.Header == nil && (c.key != "" || c.auth != "") {
		r.Header = make(http.Header)
	}
	if c.key != "" {
		r.Header.Set(c.keyHeader, c.key)
	}
	if c.auth != "" {
		r.Header.Set("Authorization", c.auth)
	}
	return r, nil
}

// ownedCtx is the ctx an attempt's request carries: it ends with the
// attempt, and it has the values of Do's op ctx, among them the mark that
// tells a retry loop inside Base that this one owns retrying, so that
// stacked retrying layers do not multiply their attempts.
type ownedCtx struct {
	context.Context                 // the attempt's; derived from the request's ctx
	loop            context.Context // Do's op ctx, for its values
}

// Value looks in the attempt's ctx first, so that the context package finds
// the attempt's own cancelCtx there and needs no goroutine to propagate
// cancellation from it.
func (c ownedCtx) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.loop.Value(key)
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

// release ends the attempt's ctx. Its response, if any, is then unreadable.
func (a *attempt) release() {
	a.stopTimer()
	a.cancel(errReleased)
}

// discard drains and closes the response, so that its connection can be
// reused, drops it, and releases the attempt.
func (a *attempt) discard() {
	drain(a.resp.Body)
	a.resp = nil
	a.release()
}

// keep readies the response for the caller: its body releases the attempt
// when closed.
func (a *attempt) keep() *http.Response {
	a.stopTimer()
	a.resp.Body = releaseOnClose(a.resp.Body, a.release)
	return a.resp
}

func afterFunc(clk clock.Clock, d time.Duration, f func()) interface{ Stop() bool } {
	if clk == nil {
		return time.AfterFunc(d, f)
	}
	return clk.AfterFunc(d, f)
}

func until(clk clock.Clock, t time.Time) time.Duration {
	if clk == nil {
		return time.Until(t)
	}
	return clk.Until(t)
}

func now(clk clock.Clock) time.Time {
	if clk == nil {
		return time.Now()
	}
	return clk.Now()
}
