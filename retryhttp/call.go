package retryhttp

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/clocks"
)

// call is one RoundTrip: the request, what the Transport decided about it
// up front, and the state of its latest attempt. Do runs op, the Classifier
// and OnRetry on the RoundTrip's goroutine, so call needs no lock.
type call struct {
	t       *Transport
	req     *http.Request
	opts    options
	base    http.RoundTripper
	clk     retry.Clock // nil: the real clock
	timeout time.Duration
	quota   QuotaMode       // the Transport's, or the request's named policy's
	loop    context.Context // Do's op ctx, for its deadline

	keyHeader  string // the idempotency key's header, canonical
	key        string // the key the Transport made for this request, if any
	keyless    bool   // a method that is not idempotent, without a key
	rewindable bool   // no body, or GetBody makes a fresh copy
	originStr  string // origin(req.URL), once asked for

	bodySent bool          // req.Body went to Base: later attempts need GetBody
	nextBody io.ReadCloser // the body for the next attempt, got ahead of the wait
	auth     string        // Authorization the Transport sets: a newer credential for the origin
	resent   bool          // the request was sent again after a 401
	gated    bool          // a retry the Classifier wanted was refused: the request must not be repeated

	sendHeader http.Header // the header attempts send, when the Transport sets one
	sendAuth   string      // the auth that sendHeader carries

	n        int            // attempts started
	live     *attempt       // the latest attempt, for abandon
	cur      *attempt       // the latest attempt, while its response is unread
	status   int            // the latest attempt's status; 0 if it had none
	err      error          // the latest attempt's error, or its *StatusError
	decision retry.Decision // what the latest failed attempt was judged

	done     *loopEnd // what the loop ended with, when Transport.OnDone is set
	reported bool     // Transport.OnDone has been called

	configStale time.Duration // the named policy's staleIfError, from Policies
	staleAnswer StaleAnswer   // set when a stale response was served (stale.go)

	hint sampleHint // the Logger's last group of lines, for LogSampling
}

// loopEnd is what the retry loop of a call ended with, kept for
// Transport.OnDone. It is apart from call, and made only for an observed
// Transport, so that a call that waits for its next attempt holds less.
type loopEnd struct {
	trace retry.Trace
	err   error
}

func (t *Transport) newCall(req *http.Request, opts options) *call {
	c := &call{
		t:          t,
		req:        req,
		opts:       opts,
		base:       t.base(),
		keyHeader:  t.idempotencyHeader(),
		rewindable: rewindable(req),
		quota:      t.Quota,
	}
	keyed := hasKey(req.Header, c.keyHeader)
	if !keyed && t.AutoIdempotencyKey && !idempotent(req.Method) {
		c.key, keyed = autoKey(req), true
	}
	c.keyless = !keyed && !idempotent(req.Method)
	if t.Refresh != nil {
		c.auth = t.auth.newer(c.origin(), req.Header.Get("Authorization"))
	}
	return c
}

func (c *call) origin() string {
	if c.originStr == "" {
		c.originStr = c.t.originOf(c.req.URL)
	}
	return c.originStr
}

// attempt is Do's op: one attempt of the request. A response with a status
// of 400 or more comes back as a *StatusError, so that Do asks the
// Classifier (decider) about it; the response itself stays in c.cur until
// OnRetry drains it or finish returns it.
func (c *call) attempt(loop context.Context) error {
	c.n++
	c.loop = loop
	sent, err := c.awaitHold(loop)
	if err != nil {
		c.cur, c.status, c.err = nil, 0, err
		return err
	}
	a, err := c.send(loop)
	if err == nil && a.resp.StatusCode == http.StatusUnauthorized && c.t.Refresh != nil {
		a, err = c.unauthorized(loop, a)
	}
	if err != nil {
		c.cur, c.status, c.err = nil, 0, err
		return err
	}
	c.cur, c.status, c.err = a, a.resp.StatusCode, nil
	c.noteHold(a.resp, sent)
	if c.t.Refresh != nil {
		c.t.auth.answered(c.origin(), a.auth, a.resp.StatusCode)
	}
	// The StatusError is made apart from the attempt, so that a call that
	// waits for its next attempt keeps the error (the Trace's), not the
	// spent attempt and its ctx: a few hundred bytes less per waiting call.
	if se := c.check(loop, a.resp, nil); se != nil {
		c.err = se
		return se
	}
	return nil
}

// check returns the error of an attempt answered with resp, in se (or a new
// StatusError if se is nil): one for a status of 400 or more, or for any
// response that CheckResponse fails; nil for a success. CheckResponse gets
// the start of the body, peeked within ctx's deadline.
func (c *call) check(ctx context.Context, resp *http.Response, se *StatusError) *StatusError {
	var err error
	if c.t.CheckResponse != nil {
		err = c.checkResponse(resp, peek(resp, c.bound(ctx, peekTimeout)))
	}
	if err == nil && resp.StatusCode < 400 {
		return nil
	}
	if se == nil {
		se = new(StatusError)
	}
	*se = StatusError{StatusCode: resp.StatusCode, Header: resp.Header, Err: err}
	return se
}

// decider wraps the Policy's Classifier: whatever it says, a request that
// must not be repeated is not, a response's Retry-After is a floor, and the
// next attempt's body is got before the wait, so that a GetBody that fails
// ends the loop on the response in hand rather than on an attempt that
// never reached the server.
func (c *call) decider(classify retry.Classifier) retry.Classifier {
	return func(ctx context.Context, a retry.Attempt) retry.Decision {
		d := classify(ctx, a)
		if c.cur != nil && d.Retry {
			d = c.retryAfter(c.cur.resp.StatusCode, c.cur.resp.Header, d)
		}
		d = c.gate(d, a.Err)
		if d.Retry && c.bodySent && c.req.GetBody != nil {
			body, err := c.req.GetBody()
			if err != nil {
				d = failedAnyway(retry.Decision{Reason: d.Reason + "; GetBody failed"})
			} else {
				c.nextBody = body
			}
		}
		c.decision = d
		return d
	}
}

// failedAnyway marks d, a refusal to retry an attempt the Classifier would
// have retried, so that the Breaker and the Throttle count the attempt as
// a failure: a 503 to a POST is the service failing, whether or not the
// POST may be sent again.
func failedAnyway(d retry.Decision) retry.Decision {
	d.Failed = true
	return d
}

// gate keeps a request that must not be repeated from being retried, and
// says why in the Reason that the Trace keeps. A request whose dial failed
// never reached a server, so it may be sent again whatever its method.
func (c *call) gate(d retry.Decision, err error) retry.Decision {
	if final, ok := finalIfReplayed(d, err); ok {
		return final
	}
	switch {
	case !d.Retry:
		return d
	case !c.rewindable:
		c.gated = true
		return failedAnyway(retry.Decision{Reason: d.Reason + "; body cannot be replayed (no GetBody)"})
	case c.keyless && !neverSent(err):
		c.gated = true
		return failedAnyway(retry.Decision{Reason: d.Reason + "; " + c.req.Method + " without " + c.keyHeader + " is not retried"})
	}
	return d
}

// onRetry wraps the Policy's OnRetry: before each wait it logs the retry
// and drains the response that is being retried, so that its connection
// goes back to the pool for the next attempt. It drains only if the wait
// still fits in the time left after the drain: otherwise Do gives up, and
// the response is the caller's, unread.
func (c *call) onRetry(next func(context.Context, retry.Attempt, time.Duration)) func(context.Context, retry.Attempt, time.Duration) {
	return func(ctx context.Context, failed retry.Attempt, wait time.Duration) {
		c.logRetried(&failed, wait)
		if next != nil {
			next(ctx, failed, wait)
		}
		if a := c.cur; a != nil {
			limit := drainTimeout
			if end, ok := c.loop.Deadline(); ok {
				// Half the slack at most, so that the wait still fits when
				// Do checks again after this hook.
				slack := end.Sub(clocks.Now(c.clk)) - wait
				if slack <= 0 {
					return // Do gives up: keep the response for the caller
				}
				limit = min(limit, slack/2)
			}
			a.discard(limit)
			c.cur = nil
			if c.live == a {
				c.live = nil // nothing left to abandon; let it go during the wait
			}
		}
	}
}

// finish turns what Do returned into RoundTrip's result.
func (c *call) finish(tr retry.Trace, err error) (*http.Response, error) {
	if c.opts.trace != nil {
		*c.opts.trace = tr
	}
	if c.nextBody != nil {
		c.nextBody.Close()
		c.nextBody = nil
	}
	if !c.bodySent && c.req.Body != nil {
		c.req.Body.Close() // no attempt took it; a RoundTripper must close it
	}
	deferred := tr.Stop() == retry.StopDeferred
	if err != nil && !deferred && (c.cur == nil || tr.Stop() != retry.StopNotRetryable || c.gated) {
		// Not a final status that the Classifier let stand: that response
		// is simply the answer.
		c.logGiveUp(tr)
	}
	alive := c.req.Context().Err() == nil
	if a := c.cur; a != nil {
		c.cur = nil
		switch {
		case !alive:
			a.discard(0)
		case deferred && c.req.Context().Value(transportLoopKey{}) == nil:
			// The outer loop owns retrying: it gets an error it will retry,
			// after the response's Retry-After, and the response is freed.
			a.discard(c.drainLimit(c.req.Context()))
			return nil, timeoutAware(retry.RetryAfter(err, c.decision.RetryAfter))
		default:
			// Success, a final status, or a retryable status that Do gave
			// up on: the caller gets the response, unread.
			return a.keep(), nil
		}
	}
	if err != nil && c.err != nil && !c.decision.Retry && alive && !deferred {
		// Do returned the attempt's error as it is: the Transport would not
		// retry it, so an outer retry loop should not either.
		err = retry.Permanent(err)
	}
	return nil, timeoutAware(err)
}

// checkResponse calls CheckResponse. If it panics, it closes the response
// first, which ends its attempt: a hedged copy's response is then no one's
// to close.
func (c *call) checkResponse(resp *http.Response, head []byte) error {
	returned := false
	defer func() {
		if !returned {
			resp.Body.Close()
		}
	}()
	err := c.t.CheckResponse(resp, head)
	returned = true
	return err
}

// drainLimit bounds a drain by drainTimeout and by ctx's deadline.
func (c *call) drainLimit(ctx context.Context) time.Duration {
	return c.bound(ctx, drainTimeout)
}

// bound returns d, or less if ctx's deadline comes first.
func (c *call) bound(ctx context.Context, d time.Duration) time.Duration {
	if end, ok := ctx.Deadline(); ok {
		d = min(d, end.Sub(clocks.Now(c.clk)))
	}
	return d
}

// summary describes the request for OnDone.
func (c *call) summary(tr retry.Trace, resp *http.Response, err error) Summary {
	s := Summary{Method: c.req.Method, Origin: c.origin(), Route: c.opts.route, Trace: tr, Err: err, Stale: c.staleAnswer}
	if s.Method == "" {
		s.Method = http.MethodGet
	}
	if resp != nil {
		s.Status = resp.StatusCode
	}
	return s
}

// abandon releases what a panic left open, if one came up from Base,
// GetBody or the user's code (the Classifier, OnRetry, the Jitter, Refresh,
// the Logger's handler, OnDone) while an attempt was in flight or its
// response unread: the attempt's timer and ctx, and its response, closed
// without draining. Do has released its own timers by then. Without it, the
// response's connection would stay busy, and its reading goroutine
// blocked, for as long as the server keeps the connection open; ending the
// attempt's own ctx also frees a response that a panicking Base got and
// dropped (an *http.Transport, which gets no such ctx, never does that).
func (c *call) abandon() {
	if a := c.live; a != nil {
		if a.resp != nil && a.resp.Body != nil {
			a.resp.Body.Close()
		}
		a.release()
	}
	if c.nextBody != nil {
		c.nextBody.Close()
	}
	if !c.bodySent && c.req.Body != nil {
		c.req.Body.Close()
	}
}
