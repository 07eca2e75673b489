package retrygrpc

import (
	"context"
	"time"

	"github.com/stormguard/retry"
)

// unaryRun is a unary call and the ctx that retry.Do gets for it: the
// caller's, with the call in it. The Policy's Classifier, OnDone and
// OnRetry are then plain funcs that find the call in their ctx, not
// closures over it, each of which would cost an allocation per call; they
// hand the Policy's own hooks the caller's ctx, as they would get without
// the interceptor.
type unaryRun struct {
	context.Context // the caller's
	unaryCall
}

type unaryCallKey struct{}

func (r *unaryRun) Value(key any) any {
	if key == (unaryCallKey{}) {
		return &r.unaryCall
	}
	return r.Context.Value(key)
}

// unaryOf returns the call whose retry.Do gave ctx to a hook.
func unaryOf(ctx context.Context) *unaryCall {
	return ctx.Value(unaryCallKey{}).(*unaryCall)
}

func decideUnary(ctx context.Context, a retry.Attempt) retry.Decision {
	c := unaryOf(ctx)
	return c.decide(c.ctx, a)
}

func doneUnary(ctx context.Context, t retry.Trace, err error) {
	c := unaryOf(ctx)
	c.done(c.ctx, t, err)
}

func retriedUnary(ctx context.Context, a retry.Attempt, wait time.Duration) {
	c := unaryOf(ctx)
	c.onRetry(c.ctx, a, wait)
}
