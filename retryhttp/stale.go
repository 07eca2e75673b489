package retryhttp

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"runtime"
	"sync"
	"time"
	"weak"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/internal/clocks"
	"github.com/stormguard/retry/retryconfig"
)

// WithStaleIfError returns a copy of parent whose GET and HEAD requests
// accept a stored response up to maxAge old in place of a failure, when
// the Transport has a [Transport.Stale] cache, even if the origin did not
// allow it: the caller's own fallback, as a request's Cache-Control:
// stale-if-error asks for it (RFC 5861 §4). A maxAge of 0 or less refuses
// stale answers for these requests, even those the origin allowed: for a
// read that must see the latest state. It takes the place of a
// stale-if-error in the request's Cache-Control, and of the policy's
// staleIfError in a Transport's Policies.
func WithStaleIfError(parent context.Context, maxAge time.Duration) context.Context {
	return withOptions(parent, func(o *options) { o.staleSet, o.staleMax = true, maxAge })
}

// IsStale reports whether resp is a stored response that a [Transport]
// served in place of a failure (see [Transport.Stale]). It is false for nil
// and for every response that came from the network, whatever its headers
// say: a server cannot make its answer read as stale.
func IsStale(resp *http.Response) bool {
	if resp == nil {
		return false
	}
	_, ok := staleServed.Load(weak.Make(resp))
	return ok
}

// staleServed holds the responses that were served stale, by weak pointer,
// each forgotten when its response is collected: a mark that survives an
// http.Client, which may wrap the body (Timeout does), and that no header
// can forge.
var staleServed sync.Map

func markStale(resp *http.Response) {
	w := weak.Make(resp)
	staleServed.Store(w, struct{}{})
	runtime.AddCleanup(resp, func(w weak.Pointer[http.Response]) { staleServed.Delete(w) }, w)
}

// StaleAnswer describes a stored response that the Transport served in
// place of a failure, for [Summary.Stale].
type StaleAnswer struct {
	// Failed is why the call failed: the Stop its Trace had before it
	// became retry.StopStale, such as retry.StopExhausted or
	// retry.StopBreakerOpen; retry.StopNotRetryable for an attempt held
	// back (guard.ErrHeld); retry.StopContextDone for a caller's deadline
	// that passed during an attempt.
	Failed retry.StopReason
	// Age is the stored response's age when served, as its Age header
	// says in whole seconds.
	Age time.Duration
}

// stale is the one place where a request meets the Transport's Stale cache,
// once the attempts are over, hedged or not: a success that may be stored
// is teed into it as the caller reads it, and a request that failed for
// good is answered from it if the origin or the caller allows. It returns
// what RoundTrip returns.
func (c *call) stale(resp *http.Response, tr retry.Trace, err error) (*http.Response, retry.Trace, error) {
	s := c.t.Stale
	if s == nil || !cacheable(c.req) {
		return resp, tr, err
	}
	key, ok := s.key(c.req)
	if !ok {
		return resp, tr, err
	}
	now := clocks.Now(c.clk)
	if err == nil && resp != nil && tr.Stop() == retry.StopSuccess {
		sent := tr.Last().Start
		if sent.IsZero() || sent.After(now) {
			sent = now // not timed (see retry.Attempt.Start): no delay counted
		}
		return s.keep(c.req, resp, key, sent, now, c.clk == nil), tr, nil
	}
	if !c.failedForGood(tr, err) {
		return resp, tr, err
	}
	e, age := s.get(c.req, key, now)
	if e == nil || !c.staleAllowed(e, age) {
		return resp, tr, err
	}
	if resp != nil { // the failure's response: the stale one takes its place
		drain(resp, c.drainLimit(c.req.Context()))
	}
	c.staleAnswer = StaleAnswer{Failed: tr.Stop(), Age: age}
	tr.SetStop(retry.StopStale)
	if c.opts.trace != nil {
		*c.opts.trace = tr
	}
	c.logStale(tr, age)
	return e.response(c.req, age), tr, nil
}

// failedForGood reports whether the call failed in a way a stale answer may
// stand in for: it gave up (attempts, deadline, budget, throttle, breaker:
// retry.StopReason.GaveUp) or was held back, or its caller's deadline passed
// during it. A caller that canceled wanted no answer, even one the loop had
// given up on just before (its Classifier or hook may see the cancel late);
// a call deferred to an outer retry loop is that loop's to retry; a status
// the Transport would not retry is the origin's answer.
func (c *call) failedForGood(tr retry.Trace, err error) bool {
	switch ctxErr := c.req.Context().Err(); {
	case ctxErr == nil:
		return tr.Stop().GaveUp() || errors.Is(err, guard.ErrHeld)
	case errors.Is(ctxErr, context.DeadlineExceeded):
		return tr.Stop().GaveUp() || tr.Stop() == retry.StopContextDone
	}
	return false // canceled
}

// staleAllowed reports whether e, at age, may answer c's request: the
// origin allowed it (stale-if-error=N, and e is stale by no more than N:
// RFC 5861 §4), or the caller accepts that age (WithStaleIfError, the
// request's own stale-if-error, or the policy's staleIfError, the first
// that is set). A caller's refusal wins over the origin.
func (c *call) staleAllowed(e *staleEntry, age time.Duration) bool {
	if c.opts.staleSet && c.opts.staleMax <= 0 {
		return false
	}
	if e.staleIfError >= 0 && age-e.freshness <= e.staleIfError {
		return true
	}
	limit := c.configStale
	switch {
	case c.opts.staleSet:
		limit = c.opts.staleMax
	default:
		if cc := parseCacheControl(c.req.Header); cc.staleIfError >= 0 {
			limit = cc.staleIfError
		}
	}
	return limit > 0 && age <= limit
}

// response makes the stale answer of e, at age, for req: a fresh Response
// each time, with its own header and a body that reads e's bytes.
func (e *staleEntry) response(req *http.Request, age time.Duration) *http.Response {
	h := e.header.Clone()
	h.Set("Age", ageHeader(age))
	resp := &http.Response{
		Status: e.statusText, StatusCode: e.status, Proto: e.proto, ProtoMajor: e.protoMajor, ProtoMinor: e.protoMinor,
		Header: h, Body: http.NoBody, ContentLength: int64(len(e.body)), Request: req,
	}
	if req.Method == http.MethodHead {
		resp.ContentLength = e.contentLength
	} else if len(e.body) > 0 {
		resp.Body = io.NopCloser(bytes.NewReader(e.body))
	}
	markStale(resp)
	return resp
}

// keep stores resp, the successful answer to req, sent and received at
// those times on the Transport's clock (wall: the real one), if it may be
// stored: at once when it has no body, and otherwise as the caller reads
// it to its end. It returns resp, its body wrapped if need be: what the
// caller reads is unchanged.
func (s *StaleCache) keep(req *http.Request, resp *http.Response, key string, sent, received time.Time, wall bool) *http.Response {
	cc, ok := mayStore(req, resp, s.opts.PerCredential)
	if !ok {
		return resp
	}
	e := s.newEntry(req, resp, &cc, key, sent, received, wall)
	if e == nil {
		return resp
	}
	room := s.bodyRoom(e)
	switch {
	case req.Method == http.MethodHead || resp.Body == nil || resp.Body == http.NoBody || resp.ContentLength == 0:
		s.put(e, nil)
	case resp.ContentLength <= room:
		// Unknown (-1) or small enough: tee it, giving up past room.
		resp.Body = &teeBody{ReadCloser: resp.Body, cache: s, entry: e, room: room, size: resp.ContentLength}
	}
	return resp
}

// teeBody is the body of a response being stored: it copies what the
// caller reads, up to room bytes, and stores the entry when the body ends
// with io.EOF. A body that is closed early, fails, or runs past room is
// not stored; the caller reads it all the same.
type teeBody struct {
	io.ReadCloser
	cache *StaleCache
	entry *staleEntry // nil once stored or given up
	room  int64
	size  int64 // the response's ContentLength: -1 if unknown
	buf   []byte
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.entry == nil {
		return n, err
	}
	if int64(len(b.buf)+n) > b.room {
		b.entry, b.buf = nil, nil // too big: pass through
		return n, err
	}
	if need := len(b.buf) + n; need > cap(b.buf) {
		// Grow as append would, but never past room, nor past a known
		// length: the copy is bounded by what may be stored.
		c := max(need, 2*cap(b.buf), 512)
		if b.size >= 0 {
			c = max(need, int(b.size))
		}
		b.buf = append(make([]byte, 0, min(int64(c), b.room)), b.buf...)
	}
	b.buf = append(b.buf, p[:n]...)
	switch {
	case err == io.EOF:
		buf := b.buf
		if cap(buf)-len(buf) > len(buf)/4 {
			buf = bytes.Clone(buf) // not kept at twice its size
		}
		b.cache.put(b.entry, buf)
		b.entry, b.buf = nil, nil
	case err != nil:
		b.entry, b.buf = nil, nil
	}
	return n, err
}

// logStale logs a stale answer, at Info: the failure is logged already, as
// the Transport gave up.
func (c *call) logStale(tr retry.Trace, age time.Duration) {
	c.log(slog.LevelInfo, logServedStale, tr.Attempts(), "", slog.String("stop", c.staleAnswer.Failed.String()),
		slog.Duration("age", age.Truncate(time.Second)))
}

// namedStale is the staleIfError of cfg's policy name ("" for "default"):
// the age up to which its requests accept a stale answer; 0 for none.
func namedStale(cfg *retryconfig.Config, name string) time.Duration {
	if name == "" {
		name = retryconfig.DefaultName
	}
	return cfg.StaleIfError(name)
}
