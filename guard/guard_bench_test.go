package guard_test

import (
	"context"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// stillClock is a clock that never moves and costs nothing to read: with
// it, a benchmark shows what the Throttle and the Breaker cost apart from
// reading the time.
type stillClock struct{}

var stillTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (stillClock) Now() time.Time { return stillTime }
func (stillClock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(parent, d)
}
func (stillClock) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, d)
}

// BenchmarkGuardFirstSuccess is what an allowed attempt through a Throttle
// and a Breaker adds to a Do whose first attempt succeeds, on the real
// clock, and on a clock that costs nothing to read (what they cost apart
// from the one clock read they share), and what a fixed Limiter adds:
// compare each row with "none".
func BenchmarkGuardFirstSuccess(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	th, err := guard.NewThrottle(guard.ThrottleOptions{})
	if err != nil {
		b.Fatal(err)
	}
	br, err := guard.NewBreaker(guard.BreakerOptions{})
	if err != nil {
		b.Fatal(err)
	}
	thStill, err := guard.NewThrottle(guard.ThrottleOptions{Clock: stillClock{}})
	if err != nil {
		b.Fatal(err)
	}
	brStill, err := guard.NewBreaker(guard.BreakerOptions{Clock: stillClock{}})
	if err != nil {
		b.Fatal(err)
	}
	lim, err := guard.NewLimiter(guard.LimiterOptions{Max: 1000})
	if err != nil {
		b.Fatal(err)
	}
	op := func(context.Context) error { return nil }
	for _, bc := range []struct {
		name string
		p    retry.Policy
	}{
		{"none", retry.Policy{}},
		{"throttle", retry.Policy{Throttle: th}},
		{"breaker", retry.Policy{Breaker: br}},
		{"both", retry.Policy{Throttle: th, Breaker: br}},
		{"both-still-clock", retry.Policy{Throttle: thStill, Breaker: brStill}},
		{"limiter", retry.Policy{Limiter: lim}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := startCPU(b)
			defer cpu.stop(b)
			for b.Loop() {
				if _, err := retry.Do(ctx, op, bc.p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLimiterAdmit is what a fixed Limiter costs an attempt that
// finds a slot free: its admission and its release through a Call, from
// one goroutine and from all of them at once (where the count in flight
// is one cache line that every core writes). "no-limiter" is the Call
// alone, to compare with.
func BenchmarkLimiterAdmit(b *testing.B) {
	for _, bc := range []struct {
		name string
		o    *guard.LimiterOptions
	}{
		{"no-limiter", nil},
		{"fixed", &guard.LimiterOptions{Max: 1 << 20}},
		{"adaptive-still-clock", &guard.LimiterOptions{Max: 1 << 20, Adaptive: true, Clock: stillClock{}}},
	} {
		var l *guard.Limiter
		if bc.o != nil {
			var err error
			if l, err = guard.NewLimiter(*bc.o); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := startCPU(b)
			defer cpu.stop(b)
			for b.Loop() {
				admitOne(l)
			}
		})
		b.Run(bc.name+"-parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					admitOne(l)
				}
			})
		})
	}
}

// admitOne makes one attempt's admission and release through l.
func admitOne(l *guard.Limiter) {
	var c guard.Call
	c.Start(nil, nil)
	c.Limit(l)
	if c.Admit(1) != guard.NotRefused {
		panic("refused")
	}
	c.Succeeded()
	c.End()
}
