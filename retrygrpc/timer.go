package retrygrpc

import (
	"context"
	"errors"
)

// errAttemptTimeout is the cause with which a stream attempt's own ctx ends
// when its time runs out.
var errAttemptTimeout = errors.New("retrygrpc: attempt timed out")

// errReleased is the cause with which a stream attempt's own ctx ends when
// the attempt is over.
var errReleased = errors.New("retrygrpc: attempt released")

// ownedCtx is the ctx of a stream attempt that has one of its own: it ends
// with the attempt, and has the values of Do's op ctx, among them the mark
// that tells a retry loop below this interceptor that this one owns
// retrying, so that stacked retrying layers do not multiply attempts.
type ownedCtx struct {
	context.Context                 // the attempt's; derived from the caller's ctx
	loop            context.Context // Do's op ctx, for its values
}

// Value looks in the attempt's ctx first, so that the context package finds
// the attempt's own cancelCtx there and needs no goroutine to propagate
// its cancellation to the contexts grpc derives from it.
func (c *ownedCtx) Value(key any) any {
	if v := c.Context.Value(key); v != nil {
		return v
	}
	return c.loop.Value(key)
}
