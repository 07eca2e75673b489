package idempotency

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry"
)

// boundedStore is the Store the middleware calls: Options.Store with every
// call held to StoreTimeout whatever the store does with its ctx, and
// counted for the request's [Summary]. A store may ignore ctx deadlines
// (go-redis does unless its ContextTimeoutEnabled is set): a call that has
// not returned by StoreTimeout is left to finish on its own goroutine and
// the request is answered as if the store had failed.
type boundedStore struct {
	s       Store
	timeout time.Duration
	clk     retry.Clock // for StoreTime; nil is real time
	direct  bool        // a MemoryStore, which never blocks: no goroutine, no timer
}

// tally counts a request's store calls, for its Summary. Renewals add to it
// from a timer's goroutine, hence the atomics.
type tally struct {
	calls atomic.Int32
	nanos atomic.Int64
}

type tallyKey struct{}

// withTally returns ctx carrying t, so that the store calls made with it
// count in t.
func withTally(ctx context.Context, t *tally) context.Context {
	return context.WithValue(ctx, tallyKey{}, t)
}

// timeoutError is the error of a store call that StoreTimeout cut short.
// It matches context.DeadlineExceeded.
func timeoutError(op string, d time.Duration) error {
	return fmt.Errorf("idempotency: store %s did not answer within StoreTimeout %v: %w", op, d, context.DeadlineExceeded)
}

func (b *boundedStore) Claim(ctx context.Context, key, token string, fp []byte, lease time.Duration) (Claim, error) {
	if b.direct {
		defer b.count(ctx, b.now())
		return b.claim(ctx, key, token, fp, lease)
	}
	return call(b, ctx, "claim", func(ctx context.Context) (Claim, error) {
		return b.claim(ctx, key, token, fp, lease)
	}, func(c Claim) {
		// The claim came too late for its request, which was answered 503:
		// free the key at once rather than one lease later.
		if c.State == Acquired {
			ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
			defer cancel()
			_ = b.s.Release(ctx, key, token)
		}
	})
}

// claim calls the store's Claim, and settles a claim that failed: its
// reply may have been lost after the store made it, and the request is
// answered 503, so the key is released, fenced by the token, for the retry
// (with a token of its own) to find it free rather than held for a lease.
// The Release runs in the same StoreTimeout as the Claim; if it fails too,
// the lease runs out by itself.
func (b *boundedStore) claim(ctx context.Context, key, token string, fp []byte, lease time.Duration) (Claim, error) {
	c, err := b.s.Claim(ctx, key, token, fp, lease)
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.timeout)
		defer cancel()
		_ = b.s.Release(rctx, key, token)
		// A call more for the Summary; its time is in the Claim's.
		if t, _ := ctx.Value(tallyKey{}).(*tally); t != nil {
			t.calls.Add(1)
		}
	}
	return c, err
}

func (b *boundedStore) Renew(ctx context.Context, key, token string, lease time.Duration) error {
	if b.direct {
		defer b.count(ctx, b.now())
		return b.s.Renew(ctx, key, token, lease)
	}
	_, err := call(b, ctx, "renew", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, b.s.Renew(ctx, key, token, lease)
	}, nil)
	return err
}

func (b *boundedStore) Complete(ctx context.Context, key, token string, fp, result []byte, ttl time.Duration) error {
	if b.direct {
		defer b.count(ctx, b.now())
		return b.s.Complete(ctx, key, token, fp, result, ttl)
	}
	_, err := call(b, ctx, "complete", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, b.s.Complete(ctx, key, token, fp, result, ttl)
	}, nil)
	return err
}

func (b *boundedStore) Release(ctx context.Context, key, token string) error {
	if b.direct {
		defer b.count(ctx, b.now())
		return b.s.Release(ctx, key, token)
	}
	_, err := call(b, ctx, "release", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, b.s.Release(ctx, key, token)
	}, nil)
	return err
}

// call runs fn on a goroutine of its own and returns what it returns, or a
// timeout error once
// StoreTimeout has passed (on real time: it guards against a hung store),
// or ctx's error once ctx ends, whichever comes first. A call given up on
// runs to its end on its goroutine, and late, if it succeeded, is called
// with its result there.
func call[T any](b *boundedStore, ctx context.Context, op string, fn func(context.Context) (T, error), late func(T)) (T, error) {
	defer b.count(ctx, b.now())
	type result struct {
		v   T
		err error
	}
	var taken atomic.Bool // by the caller (a result) or by the call (given up on)
	done := make(chan result, 1)
	go func() {
		v, err := fn(ctx)
		if taken.CompareAndSwap(false, true) {
			done <- result{v, err}
		} else if err == nil && late != nil {
			late(v)
		}
	}()
	timer := time.NewTimer(b.timeout)
	defer timer.Stop()
	var zero T
	var err error
	select {
	case r := <-done:
		return r.v, r.err
	case <-timer.C:
		err = timeoutError(op, b.timeout)
	case <-ctx.Done():
		err = fmt.Errorf("idempotency: store %s: %w", op, context.Cause(ctx))
		if errors.Is(err, context.DeadlineExceeded) { // storeCtx's own bound
			err = timeoutError(op, b.timeout)
		}
	}
	if !taken.CompareAndSwap(false, true) { // the result came as the wait ended
		r := <-done
		return r.v, r.err
	}
	return zero, err
}

// count adds a call that started at start to the tally that ctx carries,
// if any.
func (b *boundedStore) count(ctx context.Context, start time.Time) {
	if t, _ := ctx.Value(tallyKey{}).(*tally); t != nil {
		t.calls.Add(1)
		t.nanos.Add(int64(b.now().Sub(start)))
	}
}

func (b *boundedStore) now() time.Time {
	if b.clk == nil {
		return time.Now()
	}
	return b.clk.Now()
}
