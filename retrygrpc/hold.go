package retrygrpc

import (
	"context"
	"errors"
	"time"

	"github.com/stormguard/retry/internal/clocks"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrTargetHeld is matched, with errors.Is, by the error of an attempt that
// was not sent because its server had asked the interceptor to hold back
// and the call could not wait that long (see [WithoutHold]). Its status is
// UNAVAILABLE.
var ErrTargetHeld = errors.New("retrygrpc: target asked to hold back (pushback)")

// WithoutHold turns off the hold: by default, a server's pushback or
// RetryInfo delay holds back every new attempt that the interceptor makes
// to that target (the ClientConn's), not only the call that got it, so
// that a thousand concurrent calls do not each have to reach a throttled
// server to learn the same thing. Held attempts wait until the delay ends,
// each a little longer at random so that they do not come back as one
// burst; a call that cannot wait that long (its MaxElapsed or ctx deadline
// comes first) fails at once with ErrTargetHeld. An answer that is not a
// failure clears the hold. Holds are kept for at most 1,024 targets.
func WithoutHold() Option {
	return Option{func(c *config) { c.noHold = true }}
}

// target names the hold of c's ClientConn.
func (c *call) target() string {
	if c.cc == nil {
		return ""
	}
	return c.cc.Target()
}

// hold records a delay the server asked for.
func (c *call) hold(d time.Duration) {
	if c.cfg.noHold || d <= 0 {
		return
	}
	c.cfg.holds.Hold(c.target(), clocks.Now(c.clk).Add(d))
}

// clearHold ends the hold of c's target: its server answered.
func (c *call) clearHold() {
	if !c.cfg.noHold && c.cfg.holds.Held() {
		c.cfg.holds.Clear(c.target())
	}
}

// awaitHold waits, before an attempt, for the hold of c's target to end.
// loop is the attempt's ctx: its deadline is MaxElapsed's or the caller's.
func (c *call) awaitHold(loop context.Context) error {
	if c.cfg.noHold || !c.cfg.holds.Held() {
		return nil
	}
	left, err := c.cfg.holds.Wait(loop, c.clk, c.target(), false)
	switch {
	case err != nil:
		return status.FromContextError(err).Err()
	case left > 0:
		return &heldError{left: left}
	}
	return nil
}

// heldError is the error of an attempt held back.
type heldError struct{ left time.Duration }

func (e *heldError) Error() string {
	return ErrTargetHeld.Error() + " for another " + e.left.Round(time.Millisecond).String()
}

func (e *heldError) Is(target error) bool { return target == ErrTargetHeld }

func (e *heldError) GRPCStatus() *status.Status {
	return status.New(codes.Unavailable, e.Error())
}
