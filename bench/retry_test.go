package bench_test

import (
	"context"
	"fmt"
	"testing"

	avast4 "github.com/avast/retry-go/v4"
	backoff "github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	sethretry "github.com/sethvargo/go-retry"
	"github.com/stormguard/retry"
)

// BenchmarkThreeFailures is scenario 2: three failures, then success on the
// fourth and last attempt, with the smallest delay each library accepts
// (1ns base and cap), so that it measures the loop and its timers.
//
// With a 1ns cap, stormguard's default FullJitter draws waits below 1ns,
// which truncate to 0, and stormguard arms no timer for a zero wait. The
// stormguard-timer row makes every wait 1ns (EqualJitter over a 2ns delay)
// to show the cost of its reused timer. The peers arm a timer for every wait,
// zero or not.
func BenchmarkThreeFailures(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const failures = attempts - 1

	b.Run("direct", func(b *testing.B) {
		f := newFlaky(failures)
		for b.Loop() {
			f.reset()
			for f.call() != nil {
			}
			if err := f.done(nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("handloop", func(b *testing.B) {
		f := newFlaky(failures)
		op := func(context.Context) error { return f.call() }
		for b.Loop() {
			f.reset()
			if err := f.done(handloop(ctx, op, tinyDelay, tinyDelay)); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stormguard", func(b *testing.B) {
		f := newFlaky(failures)
		op := func(context.Context) error { return f.call() }
		p := ourPolicy(tinyDelay, tinyDelay)
		for b.Loop() {
			f.reset()
			if _, err := retry.Do(ctx, op, p); f.done(err) != nil {
				b.Fatal(f.done(err))
			}
		}
	})
	b.Run("stormguard-timer", func(b *testing.B) {
		f := newFlaky(failures)
		op := func(context.Context) error { return f.call() }
		p := retry.Policy{BaseBackoff: 2, MaxBackoff: 2, Jitter: retry.EqualJitter}
		for b.Loop() {
			f.reset()
			if _, err := retry.Do(ctx, op, p); f.done(err) != nil {
				b.Fatal(f.done(err))
			}
		}
	})
	b.Run("cenkalti", func(b *testing.B) {
		f := newFlaky(failures)
		op := func() (struct{}, error) { return struct{}{}, f.call() }
		opts := cenkaltiOpts(tinyDelay, tinyDelay)
		for b.Loop() {
			f.reset()
			if _, err := backoff.Retry(ctx, op, opts...); f.done(err) != nil {
				b.Fatal(f.done(err))
			}
		}
	})
	b.Run("avast-v4", func(b *testing.B) {
		f := newFlaky(failures)
		op := f.call
		opts := avast4Opts(ctx, tinyDelay, tinyDelay)
		for b.Loop() {
			f.reset()
			if err := avast4.Do(op, opts...); f.done(err) != nil {
				b.Fatal(f.done(err))
			}
		}
	})
	b.Run("avast-v5", func(b *testing.B) {
		f := newFlaky(failures)
		op := f.call
		r := avast5Retrier(ctx, tinyDelay, tinyDelay)
		for b.Loop() {
			f.reset()
			if err := r.Do(op); f.done(err) != nil {
				b.Fatal(f.done(err))
			}
		}
	})
	b.Run("sethvargo", func(b *testing.B) {
		f := newFlaky(failures)
		f.err = errRetryable
		op := func(context.Context) error { return f.call() }
		for b.Loop() {
			f.reset()
			if err := sethretry.Do(ctx, sethvargoBackoff(tinyDelay, tinyDelay), op); f.done(err) != nil {
				b.Fatal(f.done(err))
			}
		}
	})
	b.Run("failsafe", func(b *testing.B) {
		f := newFlaky(failures)
		op := f.call
		ex := failsafe.With(failsafePolicy(retrypolicy.NewBuilder[any](), tinyDelay, tinyDelay))
		for b.Loop() {
			f.reset()
			if err := ex.WithContext(ctx).Run(op); f.done(err) != nil {
				b.Fatal(f.done(err))
			}
		}
	})
}

// BenchmarkRetryGrowth checks stormguard's retry-path target: allocations
// per Do that grow with the number of retries only by the Trace's own
// storage. It runs n failures then a success, with MaxAttempts n+1.
func BenchmarkRetryGrowth(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, failures := range []int{0, 1, 3, 7} {
		for _, row := range []struct {
			name string
			p    retry.Policy
		}{
			{"stormguard", ourPolicy(tinyDelay, tinyDelay)},
			{"stormguard-timer", retry.Policy{BaseBackoff: 2, MaxBackoff: 2, Jitter: retry.EqualJitter}},
		} {
			b.Run(fmt.Sprintf("failures=%d/%s", failures, row.name), func(b *testing.B) {
				f := newFlaky(failures)
				op := func(context.Context) error { return f.call() }
				p := row.p
				p.MaxAttempts = failures + 1
				for b.Loop() {
					f.reset()
					if _, err := retry.Do(ctx, op, p); f.done(err) != nil {
						b.Fatal(f.done(err))
					}
				}
			})
		}
	}
}
