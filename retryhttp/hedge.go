package retryhttp

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/internal/clocks"
)

// hedgeable reports whether c's request may be hedged: sent again while an
// earlier copy still runs. That needs what a retry needs, an idempotent
// method or a key and a body GetBody can replay, and no credential refresh,
// whose 401 handling is one request's at a time. A write needs more: it is
// hedged only with HedgeWrites, since a copy's quick answer (a 404 to a
// DELETE that the first copy is carrying out, a 412 to a conditional PUT)
// can beat the first copy's 2xx and end the request with it.
func (c *call) hedgeable() bool {
	return c.t.Hedger != nil && c.t.Refresh == nil && !c.keyless && c.rewindable &&
		(c.t.HedgeWrites || read(c.req.Method))
}

// read reports whether method only reads: GET, HEAD, OPTIONS (RFC 9110
// §9.2.1's safe methods, TRACE aside, which no client hedges).
func read(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions:
		return true
	}
	return false
}

// hedgeDecider is the Classifier of a hedged request: classify, with a
// replay final, a Retry-After honoured, and a copy that its hold kept from
// being sent retried after the hold, while the attempts that run go on.
func (c *call) hedgeDecider(classify retry.Classifier) retry.Classifier {
	return func(ctx context.Context, a retry.Attempt) retry.Decision {
		var held *guard.HeldError
		if a.Hedged && errors.As(a.Err, &held) {
			// A copy that could not be sent: the attempts that run go on,
			// and no other copy starts before the hold ends.
			return retry.Decision{Retry: true, RetryAfter: held.Left, Reason: "host held back (Retry-After); copy not sent"}
		}
		d, _ := finalIfReplayed(classify(ctx, a), a.Err)
		if se, ok := a.Err.(*StatusError); ok && d.Retry {
			d = c.retryAfter(se.StatusCode, se.Header, d)
		}
		return d
	}
}

// roundTripHedged is RoundTrip for a request that may be hedged: each
// attempt runs on its own goroutine through retry.HedgeValue, and the first
// response that is not a failure wins. Losers are drained and closed.
func (c *call) roundTripHedged(p retry.Policy) (*http.Response, retry.Trace, error) {
	// The copies share c: what they read of it is set here, or by policy,
	// before the first starts, and never written again.
	c.origin()
	var n atomic.Int32
	resp, tr, err := retry.HedgeValue(c.req.Context(), c.t.Hedger, func(actx context.Context) (*http.Response, error) {
		return c.hedgedAttempt(actx, int(n.Add(1)))
	}, func(resp *http.Response) {
		if resp != nil {
			drain(resp, drainTimeout)
		}
	}, p)
	if c.opts.trace != nil {
		*c.opts.trace = tr
	}
	if c.req.Body != nil {
		c.req.Body.Close() // every attempt sent a copy from GetBody
	}
	alive := c.req.Context().Err() == nil
	if resp != nil {
		c.status = resp.StatusCode
		if err == nil || alive && tr.Stop() != retry.StopDeferred {
			// The winner, or a final status that the Classifier let stand
			// or retries ran out on: the caller's, unread.
			return resp, tr, nil
		}
		drain(resp, c.drainLimit(c.req.Context()))
		if alive { // deferred: the outer loop retries, after the Retry-After
			wait := c.retryAfter(resp.StatusCode, resp.Header, retry.Decision{Retry: true}).RetryAfter
			return nil, tr, timeoutAware(retry.RetryAfter(err, wait))
		}
	}
	if err != nil && tr.Stop() != retry.StopDeferred {
		c.logGiveUp(tr)
	}
	return nil, tr, timeoutAware(err)
}

// hedgedAttempt sends attempt n on a ctx of its own, which actx, the
// attempt's ctx in the hedge, and AttemptTimeout end only until the
// response head arrives: the winner's body must stay readable after the
// hedge has returned. The request carries actx's values too, among them
// the retry loop's mark, so that a retry loop inside Base defers to the
// hedge as it does to a plain attempt's loop. actx's deadline is the
// request's MaxElapsed or ctx deadline, which the hold is weighed against.
func (c *call) hedgedAttempt(actx context.Context, n int) (*http.Response, error) {
	sent, err := c.awaitHold(actx)
	if err != nil {
		return nil, err
	}
	own, cancel := context.WithCancelCause(c.req.Context())
	stop := context.AfterFunc(actx, func() { cancel(context.Cause(actx)) })
	var timer clocks.Timer
	if c.timeout > 0 {
		timer = clocks.AfterFunc(c.clk, c.timeout, func() { cancel(errAttemptTimeout) })
	}
	end := func() {
		stop()
		if timer != nil {
			timer.Stop()
		}
		cancel(errReleased)
	}
	r := c.req.WithContext(ownedCtx{Context: own, loop: actx})
	if c.req.Body != nil && c.req.Body != http.NoBody {
		body, err := c.req.GetBody()
		if err != nil {
			end()
			return nil, err
		}
		r.Body = body
	}
	r.Header = c.hedgeHeader(n)
	resp, err := c.base.RoundTrip(r)
	stop()
	late := timer != nil && !timer.Stop()
	if err == nil && resp == nil {
		err = errNoResponse
	}
	if err == nil && late {
		// The time ran out just as the head came: the body is unreadable.
		err = errAttemptTimeout
	}
	if err != nil {
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		// Our timer (AttemptTimeout on own, MaxElapsed on actx), not the
		// caller, ended the attempt: whatever error Base made of that, it
		// is a timeout.
		timer := actx
		if context.Cause(own) == errAttemptTimeout {
			timer = own
		}
		err = c.timedOut(timer, err)
		cancel(errReleased)
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: func() { cancel(errReleased) }}
	c.noteHold(resp, sent)
	if se := c.check(c.req.Context(), resp, nil); se != nil {
		return resp, se
	}
	return resp, nil
}

// hedgeHeader returns the header of attempt n: a copy of the caller's with
// the key and the attempt number, when the Transport sets them. Copies run
// at once, so each gets its own.
func (c *call) hedgeHeader(n int) http.Header {
	if c.key == "" && c.t.AttemptHeader == "" {
		return c.req.Header
	}
	h := c.req.Header.Clone()
	if h == nil {
		h = make(http.Header, 2)
	}
	if c.key != "" {
		setKey(h, c.keyHeader, c.key)
	}
	if c.t.AttemptHeader != "" {
		h.Set(c.t.AttemptHeader, strconv.Itoa(n))
	}
	return h
}

// cancelOnClose is a response body that ends its attempt's ctx when closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel func()
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
