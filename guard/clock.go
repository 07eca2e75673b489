package guard

import (
	"context"
	"reflect"
	"time"
)

// Clock is the time source of a retry.Policy and of the guards: what
// retry.Do and a guard need of time, no more.
//
// A *clock.Mock and clock.New() of github.com/benbjohnson/clock assign to it
// as they are, and retrytest.Clock is a fake made for it. Any other fake
// adapts in a few lines: Do reads only Done of the contexts these methods
// return, always passes context.Background() as parent, and calls every
// CancelFunc it gets, so a context that closes Done at the deadline and
// stops its timer when canceled is all it takes:
//
//	func (c myClock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
//		ctx, cancel := context.WithCancel(parent)
//		t := c.AfterFunc(d.Sub(c.Now()), cancel)
//		return ctx, func() { t.Stop(); cancel() }
//	}
//
// A fake shared by calls that run at the same time must move time only
// when all of them wait, as testing/synctest does and as retrytest.Clock
// does under its Run: a fake that jumps to the end of each wait as it
// starts makes concurrent calls see each other's waits, and time each
// other out. The time of a fake may lie anywhere on the real clock, so
// what leaves the process is a duration, never a time: the integration
// packages send a server the time left on this clock (retrygrpc's attempt
// deadlines), not its deadlines as they are.
//
// Why contexts and not timers: they are the one stoppable timer whose
// methods both the real and the fake clocks of that module share without
// naming a type of their own. A guard reads Now and sets its timers with
// WithDeadline; a [Holds] waits with WithTimeout, as retry.Do does.
type Clock interface {
	// Now returns the current time.
	Now() time.Time

	// WithDeadline returns a context whose Done channel closes at d, and a
	// func that releases it. retry.Do sets the deadlines of op's ctx with it
	// (MaxElapsed and AttemptTimeout).
	WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc)

	// WithTimeout returns a context whose Done channel closes after d, and
	// a func that releases it. retry.Do waits between attempts with it,
	// and with nothing else, so that a fake can tell a wait from a
	// deadline (as retrytest.Clock does to skip waits).
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
