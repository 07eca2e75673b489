package retrygrpc

import (
	"context"
	"errors"
	"time"

	"github.com/stormguard/retry"
)

// errAttemptTimeout is the cause with which a stream attempt's own ctx ends
// when its time runs out.
var errAttemptTimeout = errors.New("retrygrpc: attempt timed out")

// errReleased is the cause with which a stream attempt's own ctx ends when
// the attempt is over.
var errReleased = errors.New("retrygrpc: attempt released")

// afterFunc calls f after d on clk, or on the real clock when clk is nil,
// and returns what stops it. Stream attempts time themselves with it rather
// than with a ctx deadline, since a deadline cannot be lifted once the
// stream commits.
func afterFunc(clk retry.Clock, d time.Duration, f func()) interface{ Stop() bool } {
	if clk == nil {
		return time.AfterFunc(d, f)
	}
	ctx, cancel := clk.WithDeadline(context.Background(), clk.Now().Add(d))
	return clockTimer{context.AfterFunc(ctx, f), cancel}
}

// clockTimer is a timer on an injected clock.
type clockTimer struct {
	stop   func() bool
	cancel context.CancelFunc
}

func (t clockTimer) Stop() bool {
	ok := t.stop()
	t.cancel()
	return ok
}

func until(clk retry.Clock, t time.Time) time.Duration {
	if clk == nil {
		return time.Until(t)
	}
	return t.Sub(clk.Now())
}

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
