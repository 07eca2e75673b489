package guard

import (
	"context"
	"reflect"
	"time"
)

// Clock is the time source of a guard: the methods of retry.Clock, so that
// one clock (a retrytest.Clock, a *clock.Mock) serves a Policy and its
// guards alike. A guard reads Now, and sets timers with WithDeadline; a
// [Holds] waits with WithTimeout, as retry.Do does.
type Clock interface {
	Now() time.Time
	WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc)
	WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc)
}

// now returns clk's time, or the real time when clk is nil.
func now(clk Clock) time.Time {
	if clk == nil {
		return time.Now()
	}
	return clk.Now()
}

// comparableClock reports whether clk can be compared with == without a
// panic.
func comparableClock(clk Clock) bool {
	return clk == nil || reflect.TypeOf(clk).Comparable()
}
