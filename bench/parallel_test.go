package bench_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	avast4 "github.com/avast/retry-go/v4"
	avast5 "github.com/avast/retry-go/v5"
	backoff "github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	sethretry "github.com/sethvargo/go-retry"
	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
)

// BenchmarkFirstSuccessParallel is scenario 3: scenario 1 under
// b.RunParallel, to show any lock or shared write on the success path. Run
// it with -cpu 1,2 to see how throughput scales with cores. What a library
// allows to be shared (a Policy, a Retrier, an executor) is shared by all
// goroutines; what it does not (cenkalti's ExponentialBackOff) is made once
// per goroutine.
func BenchmarkFirstSuccessParallel(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	b.Run("direct", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := succeed(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("handloop", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := handloop(ctx, succeed, prodBase, prodMax); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("stormguard", func(b *testing.B) {
		p := retry.Policy{}
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := retry.Do(ctx, succeed, p); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("stormguard-bg", func(b *testing.B) {
		p := retry.Policy{}
		b.RunParallel(func(pb *testing.PB) {
			bg := context.Background()
			for pb.Next() {
				if _, err := retry.Do(bg, succeed, p); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("cenkalti", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			opts := cenkaltiOpts(prodBase, prodMax)
			op := func() (struct{}, error) { return struct{}{}, succeed(ctx) }
			for pb.Next() {
				if _, err := backoff.Retry(ctx, op, opts...); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("avast-v4", func(b *testing.B) {
		opts := avast4Opts(ctx, prodBase, prodMax)
		b.RunParallel(func(pb *testing.PB) {
			op := func() error { return succeed(ctx) }
			for pb.Next() {
				if err := avast4.Do(op, opts...); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("avast-v5", func(b *testing.B) {
		r := avast5Retrier(ctx, prodBase, prodMax)
		b.RunParallel(func(pb *testing.PB) {
			op := func() error { return succeed(ctx) }
			for pb.Next() {
				if err := r.Do(op); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("sethvargo", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := sethretry.Do(ctx, sethvargoBackoff(prodBase, prodMax), succeed); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("failsafe", func(b *testing.B) {
		ex := failsafe.With(failsafePolicy(retrypolicy.NewBuilder[any](), prodBase, prodMax))
		b.RunParallel(func(pb *testing.PB) {
			op := func() error { return succeed(ctx) }
			for pb.Next() {
				if err := ex.WithContext(ctx).Run(op); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkBudgetParallel is scenario 4: every goroutine shares one retry
// budget, and one logical call in ten fails once before it succeeds (1ns
// delays), so both the success path and the failure path of the budget are
// exercised under contention. The token arithmetic keeps every budget here
// from refusing; refused/op reports it if one does.
//
// Only three libraries have a budget shared across calls: stormguard's
// Budget (the gRPC token bucket, lock-free), avast v5's
// FixedTokenBucketThrottle (a token bucket behind a sync.Mutex, taken on
// every success), and failsafe-go's budget (a cap on the share of in-flight
// executions that are retries: two shared atomic counters written on every
// call). cenkalti/backoff, avast v4 and sethvargo/go-retry have none, so
// they have no row. handloop and direct run the same operation without a
// budget: the floor. stormguard-bg is stormguard with context.Background,
// whose Do allocates nothing, to tell the budget's own scaling from that of
// the allocator.
func BenchmarkBudgetParallel(b *testing.B) { benchBudget(b, 10) }

// BenchmarkBudgetHealthyParallel is scenario 4 with a healthy service: every
// call succeeds at once, so the budget is only consulted, never drawn on.
func BenchmarkBudgetHealthyParallel(b *testing.B) { benchBudget(b, 0) }

// benchBudget runs the budget scenario; one logical call in every fails
// once before it succeeds (none if every is 0).
func benchBudget(b *testing.B, every int64) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// parallel runs a logical call per iteration. setup runs once per
	// goroutine with that goroutine's operation and returns what runs one
	// logical call; an error it returns must be the budget's refusal.
	parallel := func(b *testing.B, refusal error, setup func(op func() error) func() error) {
		var refused atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			f := newFlaky(0)
			run := setup(f.call)
			var i, r int64
			for pb.Next() {
				i++
				f.reset()
				f.failures = 0
				if every > 0 && i%every == 0 {
					f.failures = 1
				}
				err := run()
				switch {
				case refusal != nil && errors.Is(err, refusal):
					r++
				case f.done(err) != nil:
					b.Error(f.done(err))
					return
				}
			}
			refused.Add(r)
		})
		b.ReportMetric(float64(refused.Load())/float64(b.N), "refused/op")
	}

	b.Run("direct", func(b *testing.B) {
		parallel(b, nil, func(op func() error) func() error {
			return func() error {
				for op() != nil {
				}
				return nil
			}
		})
	})
	b.Run("handloop", func(b *testing.B) {
		parallel(b, nil, func(op func() error) func() error {
			ctxOp := func(context.Context) error { return op() }
			return func() error { return handloop(ctx, ctxOp, tinyDelay, tinyDelay) }
		})
	})
	b.Run("stormguard", func(b *testing.B) {
		bud, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
		if err != nil {
			b.Fatal(err)
		}
		p := ourPolicy(tinyDelay, tinyDelay)
		p.Budget = bud
		parallel(b, retry.ErrBudgetExhausted, func(op func() error) func() error {
			ctxOp := func(context.Context) error { return op() }
			return func() error {
				_, err := retry.Do(ctx, ctxOp, p)
				return err
			}
		})
	})
	b.Run("stormguard-bg", func(b *testing.B) {
		bud, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
		if err != nil {
			b.Fatal(err)
		}
		p := ourPolicy(tinyDelay, tinyDelay)
		p.Budget = bud
		parallel(b, retry.ErrBudgetExhausted, func(op func() error) func() error {
			ctxOp := func(context.Context) error { return op() }
			bg := context.Background()
			return func() error {
				_, err := retry.Do(bg, ctxOp, p)
				return err
			}
		})
	})
	b.Run("avast-v5", func(b *testing.B) {
		th := avast5.NewFixedTokenBucketThrottle(avast5.FixedTokenBucketThrottleConfig{})
		r := avast5Retrier(ctx, tinyDelay, tinyDelay, avast5.WithThrottle(th))
		parallel(b, avast5.ErrThrottled, func(op func() error) func() error {
			return func() error { return r.Do(op) }
		})
	})
	b.Run("failsafe", func(b *testing.B) {
		rp := failsafePolicy(retrypolicy.NewBuilder[any]().WithBudget(budget.New()), tinyDelay, tinyDelay)
		ex := failsafe.With(rp)
		parallel(b, budget.ErrExceeded, func(op func() error) func() error {
			return func() error { return ex.WithContext(ctx).Run(op) }
		})
	})
}
