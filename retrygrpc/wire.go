package retrygrpc

import (
	"context"

	"github.com/stormguard/retry/internal/clocks"
)

// wireCtx returns the ctx with which a unary attempt is sent, and a func
// that releases it once the attempt is over and reports whether the
// attempt's own real-time deadline ended it.
//
// grpc sends the deadline of the ctx it gets to the server as a timeout,
// read on the real clock. On the real clock that is loop, Do's op ctx, as
// it is. On an injected clock, a fake in a test, loop's deadline is a time
// on that clock, which may lie anywhere on the real one (a Mock starts in
// 1970): sent as it is, it would end a healthy call at once, or never. So
// the attempt gets a ctx of its own, derived from the caller's, whose
// deadline is the real time now plus what is left on the Policy's clock,
// and that also ends when loop does, so that the fake time still ends it.
func (c *unaryCall) wireCtx(loop context.Context) (context.Context, func() bool) {
	end, ok := loop.Deadline()
	if c.clk == nil || !ok {
		return loop, noTimeout
	}
	if own, mine := c.ctx.Deadline(); mine && own.Equal(end) {
		return loop, noTimeout // the caller's deadline: a real time already
	}
	base, cancel := context.WithCancelCause(c.ctx)
	own, stopDeadline := context.WithDeadlineCause(base, clocks.Real(c.clk, end), errAttemptTimeout)
	stop := context.AfterFunc(loop, func() { cancel(errAttemptTimeout) })
	return &ownedCtx{Context: own, loop: loop}, func() bool {
		stop()
		ranOut := context.Cause(own) == errAttemptTimeout && c.ctx.Err() == nil
		stopDeadline()
		cancel(errReleased)
		return ranOut
	}
}

func noTimeout() bool { return false }
