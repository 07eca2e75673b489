package queue

import (
	"context"
	"time"

	"github.com/stormguard/retry"
)

// Time goes through the Policy's Clock, or the real clock when it is nil,
// as in retry.Do: package retry keeps these helpers to itself, so an
// integration outside it writes its own.

// now returns clk's time, or the real time when clk is nil.
func now(clk retry.Clock) time.Time {
	if clk == nil {
		return time.Now()
	}
	return clk.Now()
}

// withDeadline is context.WithDeadline on clk's time. A parent that ends
// first keeps its own deadline, so that the ctx never reports a later one
// than it will keep.
func withDeadline(clk retry.Clock, parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	if clk == nil {
		return context.WithDeadline(parent, d)
	}
	if cur, ok := parent.Deadline(); ok && !cur.After(d) {
		return context.WithCancel(parent)
	}
	return clk.WithDeadline(parent, d)
}

// sleep waits d on clk, or until ctx ends, and reports whether ctx is
// still alive. It waits as retry.Do does: through WithTimeout with a
// Background parent, the one call by which a fake clock (a
// retrytest.Clock) tells a wait from a deadline, and a select on ctx, so
// that a cancel is seen at once.
func sleep(ctx context.Context, clk retry.Clock, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	var w context.Context
	var cancel context.CancelFunc
	if clk == nil {
		w, cancel = context.WithTimeout(context.Background(), d)
	} else {
		w, cancel = clk.WithTimeout(context.Background(), d)
	}
	defer cancel()
	select {
	case <-w.Done():
		return ctx.Err() == nil
	case <-ctx.Done():
		return false
	}
}
