package retrygrpc

import (
	"context"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/clocks"
	"google.golang.org/grpc"
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
// pushback stops the retries (see the package doc).
//
// The fields of p mean what they mean to retry.Do: attempts, backoff and
// jitter, MaxElapsed, AttemptTimeout (each attempt gets a ctx deadline of
// its own, which grpc sends to the server), Budget, OnRetry, OnDone, Clock.
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
	opts       []grpc.CallOption // the caller's, and one that fetches the trailer
	optsBuf    [4]grpc.CallOption
	n          int // attempts started
}

func (cfg *config) interceptUnary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	co := callOptionsOf(opts)
	p := cfg.policyFor(method)
	if co.policy != nil {
		p = *co.policy
	}
	c := &unaryCall{req: req, reply: reply, invoker: invoker}
	c.init(cfg, ctx, method, cc, co, &p)
	// The trailer carries the server's pushback. A TrailerCallOption holds
	// one pointer, so it goes into the interface without an allocation,
	// and the list fits c's own array unless the caller passes many.
	c.opts = append(append(c.optsBuf[:0], opts...), grpc.Trailer(&c.trailer))
	tr, err := retry.Do(ctx, c.attempt, p)
	storeTrace(ctx, tr)
	return c.result(tr, err)
}

// attempt is Do's op: one call of the method.
func (c *unaryCall) attempt(loop context.Context) error {
	c.n++
	c.trailer = nil
	if err := c.awaitHold(loop); err != nil {
		return err
	}
	err := c.invoker(withAttemptHeader(loop, c.n), c.method, c.req, c.reply, c.cc, c.opts...)
	switch {
	case err == nil:
		c.clearHold()
	case c.timedOut(loop, err):
		err = newTimeoutError(err)
	}
	return err
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
