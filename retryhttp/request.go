package retryhttp

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
)

// clone returns the request to send for attempt a: the caller's, on a's
// ctx, with a fresh body and the Transport's headers. The copy is shallow,
// as http.Client's own copies are: a RoundTripper must not modify the
// request it is given, so the attempts may share the caller's URL, header
// and trailer. The Transport sets only the copy's Body and, when it must
// add headers, a Header of its own (see header); the caller's request is
// never modified.
func (c *call) clone(a *attempt) (*http.Request, error) {
	r := c.req.WithContext(a.ctx)
	if c.bodySent && c.req.GetBody != nil {
		body := c.nextBody // got before the wait, if this attempt follows one
		c.nextBody = nil
		if body == nil {
			var err error
			if body, err = c.req.GetBody(); err != nil {
				return nil, fmt.Errorf("retryhttp: GetBody: %w", err)
			}
		}
		r.Body = body
	}
	c.bodySent = true
	r.Header = c.header()
	if c.t.Refresh != nil {
		a.auth = r.Header.Get("Authorization")
	}
	return r, nil
}

// header returns the header that attempts send: the caller's, or, when the
// Transport sets an idempotency key, newer credentials or the attempt
// number, a copy of it with those, made once and again only when what it
// sets changes. No attempt's header is modified once sent, so a Base that
// still reads an earlier attempt's header is safe.
func (c *call) header() http.Header {
	attempt := c.t.AttemptHeader != ""
	if c.key == "" && c.auth == "" && !attempt {
		return c.req.Header
	}
	if c.sendHeader == nil || c.sendAuth != c.auth || attempt {
		h := c.req.Header.Clone()
		if h == nil {
			h = make(http.Header, 3)
		}
		if c.key != "" {
			setKey(h, c.keyHeader, c.key)
		}
		if c.auth != "" {
			h.Set("Authorization", c.auth)
		}
		if attempt {
			h.Set(c.t.AttemptHeader, strconv.Itoa(c.n))
		}
		c.sendHeader, c.sendAuth = h, c.auth
	}
	return c.sendHeader
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
	if key == (transportLoopKey{}) {
		return true
	}
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.loop.Value(key)
}

// transportLoopKey marks the ctx of a Transport's attempt, so that a
// Transport inside another one's Base, which defers its retrying, hands a
// retryable response back as a response: the outer Transport judges
// responses itself.
type transportLoopKey struct{}
