package retrygrpc

import (
	"context"
	"time"

	"github.com/stormguard/retry/internal/clocks"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errLate is the error of a stream attempt whose time ran out just as it
// committed or opened.
var errLate = status.Error(codes.DeadlineExceeded, "retrygrpc: attempt timed out")

// attempt is one stream that the interceptor opened.
type attempt struct {
	cs  grpc.ClientStream // nil if it could not open
	err error             // why it could not open

	// own is the attempt's own ctx, if it has one: it needs one when it is
	// timed, or when Do's op ctx would end too soon (it ends when Do returns,
	// under MaxElapsed). cancel ends it.
	own    context.Context
	cancel context.CancelCauseFunc
	timer  clocks.Timer // nil when not timed, or once stopped
	bound  clocks.Timer // the loop's MaxElapsed on the first attempt; nil when none, or once stopped
	late   bool         // a timer fired before it was stopped
}

// open opens attempt s.n with the streamer. loop is Do's op ctx, or the
// caller's ctx for the attempt that NewStream opens.
func (s *stream) open(loop context.Context) *attempt {
	if err := s.awaitHold(loop); err != nil {
		return &attempt{err: err}
	}
	a := &attempt{}
	ctx := loop
	d, timed := s.limit(loop)
	// The attempt NewStream opens gets a ctx of its own under MaxElapsed
	// too, so that the loop can bound it once it starts (see bound).
	if timed || loop.Done() != s.ctx.Done() || s.policy.MaxElapsed > 0 {
		own, cancel := context.WithCancelCause(s.ctx)
		a.own, a.cancel = own, cancel
		ctx = &ownedCtx{Context: own, loop: loop}
		switch {
		case !timed:
		case d <= 0:
			cancel(errAttemptTimeout)
		default:
			a.timer = clocks.AfterFunc(s.clk, d, func() { cancel(errAttemptTimeout) })
		}
	}
	a.cs, a.err = s.streamer(withAttemptHeader(ctx, s.n), s.desc, s.cc, s.method, s.opts...)
	if a.err != nil {
		a.err = a.check(a.err)
		a.release()
		a.cs = nil
	}
	return a
}

// limit returns how long the next attempt may take to commit:
// AttemptTimeout, or less if the MaxElapsed deadline on loop comes first.
// The caller's own deadline needs no timer: the attempt's ctx has it.
func (s *stream) limit(loop context.Context) (time.Duration, bool) {
	d, ok := s.timeout, s.timeout > 0
	if end, has := loop.Deadline(); has {
		if own, mine := s.ctx.Deadline(); !mine || !own.Equal(end) {
			if left := clocks.Until(s.clk, end); !ok || left < d {
				d, ok = left, true
			}
		}
	}
	return d, ok
}

// check turns err into a *timeoutError when the attempt's own time limit
// caused it.
func (a *attempt) check(err error) error {
	if a.own != nil && endedByCtx(err) && context.Cause(a.own) == errAttemptTimeout {
		return newTimeoutError(err)
	}
	return err
}

// stopTimer stops the attempt's timer, if it still runs, and reports
// whether the attempt is in time: the timer had not fired.
func (a *attempt) stopTimer() bool {
	for _, t := range []*clocks.Timer{&a.timer, &a.bound} {
		if *t != nil {
			a.late = !(*t).Stop() || a.late
			*t = nil
		}
	}
	return !a.late
}

// release ends the attempt: its timer and its own ctx, and so its stream,
// if it is still under way. It may be called more than once.
func (a *attempt) release() {
	a.stopTimer()
	if a.cancel != nil {
		a.cancel(errReleased)
	}
}
