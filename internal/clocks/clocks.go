// Package clocks reads time and sets timers on a retry.Clock, or on the real
// clock when it is nil, for the packages around the core (retryhttp,
// retrygrpc), which time their attempts as retry.Do does.
package clocks

import (
	"context"
	"time"

	"github.com/stormguard/retry"
)

// Now returns clk's time, or the real time when clk is nil.
func Now(clk retry.Clock) time.Time {
	if clk == nil {
		return time.Now()
	}
	return clk.Now()
}

// Until returns how long until t on clk.
func Until(clk retry.Clock, t time.Time) time.Duration {
	if clk == nil {
		return time.Until(t)
	}
	return t.Sub(clk.Now())
}

// Real returns the real time at which clk reaches t, counted from now: t
// itself on the real clock. A fake clock's time may lie anywhere on the
// real one, so a deadline that leaves the process (grpc sends its ctx's to
// the server, as a real timeout) must go through Real first.
func Real(clk retry.Clock, t time.Time) time.Time {
	if clk == nil {
		return t
	}
	return time.Now().Add(t.Sub(clk.Now()))
}

// Timer is what AfterFunc returns: Stop reports whether it stopped the
// timer before it fired.
type Timer interface{ Stop() bool }

// AfterFunc calls f after d on clk, on a goroutine of its own, unless
// stopped first. On an injected clock it is a deadline (WithDeadline), not
// a wait, so that a fake that skips waits does not fire it.
func AfterFunc(clk retry.Clock, d time.Duration, f func()) Timer {
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
