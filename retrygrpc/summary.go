package retrygrpc

import (
	"context"

	"github.com/stormguard/retry"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Summary describes a call the interceptors have finished, for
// [WithOnDone]: which method, how it ended and its Trace. It holds no
// message, metadata or target: only what is safe to log and bounded in
// cardinality, since the methods of a client are those of its services.
type Summary struct {
	Method string     // the full method, "/pkg.Service/Method"
	Code   codes.Code // the status code of Err: codes.OK on success
	Trace  retry.Trace
	// Err is what the interceptor returns (or what ends a stream's retry
	// loop), nil on success. Its text may quote the server's status
	// message: test it with status.Code and errors.Is, and log the Trace's
	// reasons instead.
	Err error
}

// WithOnDone sets a hook that is called once for each call, when its retry
// loop ends, with the caller's ctx and a [Summary] of it: the hook for
// metrics and debug pages [none]. It is called when Policy.OnDone would be
// (for a stream, when it opens, commits or fails for good; see
// [StreamClientInterceptor]), after it, a panic in the call included, with
// Code codes.Unknown then. Several WithOnDone add up: each hook is called,
// in order.
//
// The observers take a Summary's parts, so that neither makes its module
// depend on grpc:
//
//	retrygrpc.WithOnDone(func(ctx context.Context, s retrygrpc.Summary) {
//		obs.RecordGRPC(ctx, s.Method, uint32(s.Code), s.Trace) // retryotel
//		rec.RecordGRPC(ctx, s.Method, uint32(s.Code), s.Trace) // retrydebug
//	})
func WithOnDone(f func(ctx context.Context, s Summary)) Option {
	return Option{func(c *config) {
		if f != nil {
			c.onDone = append(c.onDone, f)
		}
	}}
}

// observe puts done, which calls c.done, in p as its OnDone, when there
// are hooks of WithOnDone. Setting OnDone also has Do time the first
// attempt, so that the Summary's Trace spans the whole call.
func (c *call) observe(p *retry.Policy, done func(context.Context, retry.Trace, error)) {
	if len(c.cfg.onDone) == 0 {
		return
	}
	c.onDone, p.OnDone = p.OnDone, done
}

// done calls the Policy's own OnDone, then the hooks of WithOnDone.
func (c *call) done(ctx context.Context, t retry.Trace, err error) {
	if c.onDone != nil {
		c.onDone(ctx, t, err)
	}
	s := Summary{Method: c.method, Trace: t, Err: err, Code: codes.Unknown}
	if t.Stop() != retry.StopPanicked {
		s.Err = c.result(t, err)
		s.Code = status.Code(s.Err)
	}
	for _, f := range c.cfg.onDone {
		f(ctx, s)
	}
}
