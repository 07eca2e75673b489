package retryhttp

import (
	"context"
	"net/http"
	"time"

	"github.com/stormguard/retry"
)

// call is one RoundTrip: the request, what the Transport decided about it
// up front, and the state of its latest attempt. Do runs op, the Classifier
// and OnRetry on the RoundTrip's goroutine, so call needs no lock.
type call struct {
	t        *Transport
	req      *http.Request
	base     http.RoundTripper
	clk      retry.Clock // nil: the real clock
	timeout  time.Duration
	classify func(*http.Response, error) retry.Decision
	trace    *retry.Trace // where to store the Trace, from WithTrace; may be nil

	keyHeader string // the idempotency key's header, canonical
	key       string // the key the Transport made for this request, if any
	why       string // why the request must not be repeated; "" if it may

	bodySent  bool   // req.Body went to Base: later attempts need GetBody
	refreshed bool   // Refresh ran for this request
	auth      string // Authorization from Refresh, for every later attempt

	sendHeader http.Header // the header attempts send, when the Transport sets one
	sendAuth   string      // the auth that sendHeader carries

	n        int            // attempts started
	live     *attempt       // the latest attempt, for abandon
	cur      *attempt       // the latest attempt, while its response is unread
	status   int            // the latest attempt's status; 0 if it had none
	err      error          // the latest attempt's error; nil if it had a response
	decision retry.Decision // what the latest failed attempt was judged
}

func (t *Transport) newCall(req *http.Request) *call {
	c := &call{
		t:         t,
		req:       req,
		base:      t.base(),
		clk:       t.Policy.Clock,
		classify:  t.classify(),
		trace:     traceSlot(req.Context()),
		keyHeader: t.idempotencyHeader(),
	}
	_, keyed := req.Header[c.keyHeader]
	if !keyed && t.AutoIdempotencyKey && !idempotent(req.Method) {
		c.key, keyed = newKey(), true
	}
	c.why = notRepeatable(req, keyed, c.keyHeader)
	return c
}

// attempt is Do's op: one attempt of the request. A response that is worth
// retrying comes back as a *statusError, so that Do asks the Classifier
// (decided) about it; the response itself stays in c.cur until OnRetry
// drains it or finish returns it.
func (c *call) attempt(loop context.Context) error {
	c.n++
	a, err := c.send(loop)
	if err == nil && a.resp.StatusCode == http.StatusUnauthorized && c.mayRefresh() {
		a, err = c.reauthorize(loop, a)
	}
	if err != nil {
		return c.failed(err)
	}
	return c.answered(a)
}

// answered judges an attempt that got a response.
func (c *call) answered(a *attempt) error {
	c.status, c.err = a.resp.StatusCode, nil
	d := c.classify(a.resp, nil)
	if !d.Retry {
		if !a.stopTimer() {
			// The attempt timed out just as its headers came: its body is
			// unreadable, so it counts as timed out.
			a.discard()
			return c.failed(errAttemptTimeout)
		}
		c.cur = a
		return nil
	}
	// The timer keeps running until the response is drained or returned,
	// so that it bounds the drain of a slow body too.
	c.cur = a
	c.err = errStatus(a.resp.StatusCode)
	c.decision = c.gate(c.retryAfter(a.resp, d))
	return c.err
}

// failed judges an attempt that ended in an error.
func (c *call) failed(err error) error {
	c.status, c.err, c.decision = 0, err, retry.Decision{}
	if c.req.Context().Err() == nil { // else Do stops without asking
		c.decision = c.gate(c.classify(nil, err))
	}
	return err
}

// gate keeps a request that must not be repeated from being retried, and
// says why in the Reason that the Trace keeps.
func (c *call) gate(d retry.Decision) retry.Decision {
	if d.Retry && c.why != "" {
		return retry.Decision{Reason: d.Reason + "; " + c.why}
	}
	return d
}

// decided is the Policy's Classifier: op has judged the attempt already.
func (c *call) decided(error) retry.Decision {
	return c.decision
}

// onRetry wraps the Policy's OnRetry: before each wait it logs the retry and
// drains the response that is being retried, so that its connection goes
// back to the pool for the next attempt.
func (c *call) onRetry(next func(context.Context, retry.Attempt, time.Duration)) func(context.Context, retry.Attempt, time.Duration) {
	return func(ctx context.Context, failed retry.Attempt, wait time.Duration) {
		c.logRetry(failed.Number, failed.Reason, wait)
		if c.cur != nil {
			c.cur.discard()
			c.cur = nil
		}
		if next != nil {
			next(ctx, failed, wait)
		}
	}
}

// finish turns what Do returned into RoundTrip's result.
func (c *call) finish(tr retry.Trace, err error) (*http.Response, error) {
	if c.trace != nil {
		*c.trace = tr
	}
	if !c.bodySent && c.req.Body != nil {
		c.req.Body.Close() // no attempt took it; a RoundTripper must close it
	}
	if err != nil {
		c.logGiveUp(tr)
	}
	alive := c.req.Context().Err() == nil
	if a := c.cur; a != nil {
		c.cur = nil
		if err == nil || alive {
			// Success, a final status, or a retryable status that Do gave
			// up on: the caller gets the response, unread.
			return a.keep(), nil
		}
		a.discard()
	}
	if err != nil && c.err != nil && !c.decision.Retry && alive {
		// Do returned the attempt's error as it is: the Transport would not
		// retry it, so an outer retry loop should not either.
		err = retry.Permanent(err)
	}
	return nil, timeoutAware(err)
}

// abandon releases what a panic left open, if one came up from Base,
// GetBody or the user's code (Classify, OnRetry, the Jitter, Refresh, the
// Logger's handler) while an attempt was in flight or its response unread:
// the attempt's timer and ctx, and its response, closed without draining.
// Do has released its own timers by then. Without it, the response's
// connection would stay busy, and its reading goroutine blocked, for as
// long as the server keeps the connection open; ending the attempt's own
// ctx also frees a response that a panicking Base got and dropped (an
// *http.Transport, which gets no such ctx, never does that).
func (c *call) abandon() {
	if a := c.live; a != nil {
		if a.resp != nil && a.resp.Body != nil {
			a.resp.Body.Close()
		}
		a.release()
	}
	if !c.bodySent && c.req.Body != nil {
		c.req.Body.Close()
	}
}

func (c *call) mayRefresh() bool {
	return c.t.Refresh != nil && !c.refreshed && rewindable(c.req)
}

// reauthorize handles a 401: it refreshes the credentials, once per request,
// and sends the request again at once. If the refresh fails, the 401 stands.
func (c *call) reauthorize(loop context.Context, a *attempt) (*attempt, error) {
	c.refreshed = true
	a.stopTimer() // the 401 came in time; the refresh is not the attempt's
	auth, err := c.t.refresh.do(c.req.Context(), c.t.Refresh, a.gen)
	if err != nil {
		c.logRefreshFailed(err)
		return a, nil
	}
	if auth != "" {
		c.auth = auth
	}
	c.status, c.err = a.resp.StatusCode, nil
	c.logRetry(c.n, statusText(http.StatusUnauthorized)+"; credentials refreshed", 0)
	a.discard()
	return c.send(loop)
}
