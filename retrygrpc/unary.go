package retrygrpc

import (
	"context"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/clocks"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
)

// UnaryClientInterceptor returns an interceptor that makes a unary call
// again, as p says, when an attempt fails in a way that another attempt may
// fix and the method is safe to call again. Install it with
// grpc.WithChainUnaryInterceptor (or grpc.WithUnaryInterceptor).
//
// Only methods marked with [WithIdempotent], [WithAllIdempotent] or, per
// call, [CallIdempotent] are ever retried: every other method gets exactly
// one attempt. An attempt is worth another when its status code is one of
// [WithCodes] (UNAVAILABLE unless set), or when p.AttemptTimeout or
// p.MaxElapsed cut it short while the caller's ctx was alive; a
// p.Classifier, if set, decides instead of the codes, with Attempt.Err the
// attempt's status error. Every attempt sends the same request message. A
// server's grpc-retry-pushback-ms trailer or google.rpc.RetryInfo detail
// sets the least wait before the next attempt, and a negative or malformed
// pushback stops the retries (see the package doc). A call whose response
// header came before it failed has committed (gRFC A6) and is not retried.
//
// The fields of p mean what they mean to retry.Do: attempts, backoff and
// jitter, MaxElapsed, AttemptTimeout (each attempt gets a ctx deadline of
// its own, which grpc sends to the server as the time left, on whatever
// clock the Policy uses), Budget, OnRetry, OnDone, Clock.
// A call inside another retry loop (a retry.Do whose op makes the call)
// makes one attempt and leaves retrying to that loop. [CallPolicy] replaces
// p for one call, and [WithTrace] hands the call's retry.Trace back.
//
// On success the interceptor returns nil. On failure the error's status
// (status.Code, status.Convert) is the last attempt's, unchanged, or, when
// the caller's ctx ended, CANCELLED or DEADLINE_EXCEEDED as grpc gives it;
// the error also matches, with errors.Is, retry.ErrGaveUp and the stop
// reason (retry.ErrExhausted, retry.ErrDeadline, retry.ErrBudgetExhausted)
// when retries ran out, and the last attempt's error. A failure that is not
// retried is marked with retry.Permanent, so that an outer retry loop does
// not retry it either.
func UnaryClientInterceptor(p retry.Policy, opts ...Option) grpc.UnaryClientInterceptor {
	return newConfig(p, opts).interceptUnary
}

// unaryCall is one call through the unary interceptor.
type unaryCall struct {
	call
	req, reply any
	invoker    grpc.UnaryInvoker
	opts       []grpc.CallOption // the caller's, and those that fetch the header and trailer
	optsBuf    [5]grpc.CallOption
	n          int           // attempts started
	timeout    time.Duration // the Policy's AttemptTimeout, which attempt keeps itself
	header     metadata.MD   // the latest attempt's response header; nil if none came

	// Where grpc writes each attempt's header and trailer: the caller's
	// targets or c's own; nil when the call does not fetch them.
	headerAt, trailerAt *metadata.MD

	onRetry func(context.Context, retry.Attempt, time.Duration) // the Policy's own
}

func (cfg *config) interceptUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	co := callOptionsOf(opts)
	p, h, hedged := cfg.policyAndHedging(method)
	if co.policy != nil {
		p = *co.policy
	}
	cfg.guardPolicy(cc, &p)
	if co.policy == nil && hedged {
		if hc := cfg.hedged(ctx, method, req, reply, cc, invoker, co, opts, &p, h); hc != nil {
			return hc.run(p)
		}
	}
	r := &unaryRun{Context: ctx, unaryCall: unaryCall{req: req, reply: reply, invoker: invoker}}
	c := &r.unaryCall
	c.init(cfg, ctx, method, cc, co, &p, decideUnary)
	c.observe(&p, doneUnary) // WithOnDone
	if p.OnRetry != nil {
		c.onRetry, p.OnRetry = p.OnRetry, retriedUnary
	}
	c.opts = opts
	if c.idempotent {
		// A call that gets one attempt anyway, whose failure is never
		// retried, needs neither header nor trailer, and does not pay for
		// grpc's copies of them.
		c.fetchMetadata(opts)
	}
	if p.AttemptTimeout > 0 {
		// An attempt's time starts when it is sent, after any hold: Do's
		// own AttemptTimeout would count the hold's wait, and weigh the
		// hold against one attempt's time rather than the call's.
		c.timeout, p.AttemptTimeout = p.AttemptTimeout, 0
	}
	tr, err := retry.Do(r, c.attempt, p)
	storeTrace(ctx, tr)
	return c.result(tr, err)
}

// attempt is Do's op: one call of the method.
func (c *unaryCall) attempt(loop context.Context) error {
	c.n++
	c.trailer, c.header = nil, nil
	if err := c.awaitHold(loop); err != nil {
		return err
	}
	actx := loop
	if c.timeout > 0 {
		var cancel context.CancelFunc
		actx, cancel = withTimeout(c.clk, loop, c.timeout)
		defer cancel()
	}
	ctx, release := c.wireCtx(actx)
	err := c.invoke(withAttemptHeader(ctx, c.n))
	ranOut := release()
	// A6: once a response header has come, the call has committed, and
	// whatever ends it is not retried.
	c.answered = err != nil && c.header != nil
	switch {
	case err == nil:
		c.clearHold()
	case ranOut || c.timedOut(actx, err):
		err = newTimeoutError(err)
	}
	return err
}

// withTimeout ends the attempt's ctx after d. On the real clock it is
// context.WithTimeout, whose deadline grpc sends to the server. On an
// injected clock a timer on that clock ends it, as a stream attempt's
// does, and its Deadline is a time on that clock, which wireCtx turns into
// a real one before it reaches the wire.
func withTimeout(clk retry.Clock, parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if clk == nil {
		return context.WithTimeout(parent, d)
	}
	ctx, cancel := context.WithCancelCause(parent)
	timer := clocks.AfterFunc(clk, d, func() { cancel(errAttemptTimeout) })
	end := clk.Now().Add(d)
	if pe, ok := parent.Deadline(); ok && pe.Before(end) {
		end = pe
	}
	// The deadline on clk, which wireCtx turns into a real one for the
	// wire, so that the server is told the attempt's time too.
	return fakeDeadlineCtx{ctx, end}, func() {
		timer.Stop()
		cancel(errReleased)
	}
}

// timedOut reports whether err is the end of an attempt that Do's own
// deadline on loop, AttemptTimeout or MaxElapsed, cut short while the
// caller's ctx was alive: whatever grpc made of that, it is a timeout. The
// deadline counts once it has passed, even if loop has not ended yet: grpc
// sends it to the server, whose timer may fire first and end the call with
// DEADLINE_EXCEEDED.
func (c *unaryCall) timedOut(loop context.Context, err error) bool {
	if !endedByCtx(err) || c.ctx.Err() != nil {
		return false
	}
	if loop.Err() != nil {
		return true
	}
	end, ok := loop.Deadline()
	if !ok {
		return false
	}
	if own, mine := c.ctx.Deadline(); mine && !end.Before(own) {
		return false // the caller's deadline, not Do's
	}
	return clocks.Until(c.clk, end) <= 0
}

// fakeDeadlineCtx reports a deadline on an injected clock, which the real
// context package cannot hold: only Deadline is read from it, by wireCtx
// and timedOut, and the timer of withTimeout ends it.
type fakeDeadlineCtx struct {
	context.Context
	end time.Time
}

func (c fakeDeadlineCtx) Deadline() (time.Time, bool) { return c.end, true }
