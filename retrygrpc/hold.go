package retrygrpc

import (
	"context"
	"errors"
	"time"

	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/internal/clocks"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrTargetHeld is guard.ErrHeld, the one error of an attempt held back,
// for gRPC and HTTP alike: it is matched, with errors.Is, by the error of
// an attempt that was not sent because its server had asked the
// interceptor to hold back and the call could not wait that long (see
// [WithoutHold]); a *guard.HeldError, found with errors.As, says for how
// long. Its status is UNAVAILABLE.
var ErrTargetHeld = guard.ErrHeld

// WithoutHold turns off the hold: by default, a server's pushback or
// RetryInfo delay holds back every new attempt that the interceptor makes
// to that target, not only the call that got it, so that a thousand
// concurrent calls do not each have to reach a throttled server to learn
// the same thing. A hold lasts the delay asked for, capped at
// [WithMaxRetryAfter]: no server can hold a client for longer.
//
// Held attempts wait until the delay ends. Then three go first as probes,
// and the others wait for what they learn: a probe that gets another
// pushback renews the hold; one that succeeds clears it, and the others
// go, each after a random share of a quarter of the hold (at most 5s), so
// that they do not come back as one burst; if no probe has answered by
// then, they go anyway, so every hold ends by time. Only the success of an
// attempt sent after the hold began clears it. A call that cannot wait for
// the hold (its MaxElapsed or ctx deadline comes first; AttemptTimeout does
// not count, since a held attempt has not started) fails at once with
// ErrTargetHeld.
//
// A hold covers the ClientConn's whole target (cc.Target(), such as
// "dns:///api.example.com:443"), every backend behind it: the interceptor
// sees neither the resolved addresses nor which one a call went to, since
// the balancer picks it below the interceptor. A pushback is the service's
// answer (gRFC A6 treats it as such, for the whole channel), so holding the
// target back is what A6's own retries do. Holds are kept for at most
// 1,024 targets, in the interceptor unless [WithGuards] gives a
// guard.Holds to share.
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

// hold records a delay the server asked for, capped at WithMaxRetryAfter:
// a pushback of 2147483647ms must not hold the target for 24 days, with no
// call able to reach the server to clear it.
func (c *call) hold(d time.Duration) {
	if c.cfg.noHold || d <= 0 {
		return
	}
	c.cfg.holdSet().Hold(c.target(), clocks.Now(c.clk), min(d, c.cfg.maxRetryAfter))
}

// clearHold ends the hold of c's target: its server answered the latest
// attempt, which awaitHold let go.
func (c *call) clearHold() {
	if !c.cfg.noHold && c.cfg.holdSet().Held() {
		c.cfg.holdSet().Clear(c.target(), c.sent)
	}
}

// awaitHold waits, before an attempt, for the hold of c's target to end,
// and notes when it let the attempt go. call's deadline must be the call's
// (MaxElapsed's or the caller's), not an attempt's.
func (c *call) awaitHold(call context.Context) error {
	c.sent = c.cfg.holdSet().Epoch()
	if c.cfg.noHold || !c.cfg.holdSet().Held() {
		return nil
	}
	if err := c.cfg.holdSet().Wait(call, c.clk, c.target(), false); err != nil {
		var held *guard.HeldError
		if errors.As(err, &held) {
			return &heldError{*held}
		}
		return status.FromContextError(err).Err()
	}
	c.sent = c.cfg.holdSet().Epoch()
	return nil
}

// heldError is the error of an attempt held back: a guard.HeldError with
// a gRPC status.
type heldError struct{ guard.HeldError }

func (e *heldError) Unwrap() error { return &e.HeldError }

func (e *heldError) GRPCStatus() *status.Status {
	return status.New(codes.Unavailable, e.Error())
}

// holdSet returns the holds the interceptor keeps: WithGuards' Holds, or
// its own.
func (c *config) holdSet() *guard.Holds {
	if c.guards.Holds != nil {
		return c.guards.Holds
	}
	return &c.holds
}
