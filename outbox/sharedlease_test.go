package outbox_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
)

// stallingRenew is a shared journal whose renewals stall for stall, then
// fail, each time stalls says so: the renewals of a paused process, or of
// one cut off from its database.
type stallingRenew struct {
	outbox.SharedJournal
	stall  time.Duration
	stalls atomic.Int64 // renewals still to stall; -1: every one fails at once
}

var errRenew = errors.New("renew: connection reset")

func (s *stallingRenew) Renew(ctx context.Context, held []outbox.Entry, until time.Time) ([]string, error) {
	switch n := s.stalls.Load(); {
	case n < 0:
		return nil, errRenew
	case n > 0:
		s.stalls.Add(-1)
		time.Sleep(s.stall) // the bubble's time
		return nil, errRenew
	}
	return s.SharedJournal.Renew(ctx, held, until)
}

// A process that stalls for longer than its lease, with a free slot, claims
// its own running op again when it wakes. That claim is the running
// attempt's new lease, not a second attempt: the attempt goes on, under the
// new lease, and the op is sent once.
func TestOwnReclaimKeepsTheRunningAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 30 * time.Second
		m := newMemShared()
		j := &stallingRenew{SharedJournal: m.handle(), stall: 2 * lease}
		o, err := outbox.New(j, outbox.Options{Lease: lease, Concurrency: 2, PollInterval: time.Second})
		require.NoError(t, err)
		var calls, cut atomic.Int64
		release := make(chan struct{})
		o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
			calls.Add(1)
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				cut.Add(1)
				return ctx.Err()
			}
		})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = o.Run(ctx) })
		j.stalls.Store(1) // the first renewal stalls past the lease
		key, err := o.Enqueue(ctx, outbox.Op{Kind: "pay", Payload: []byte("order 1")})
		require.NoError(t, err)
		time.Sleep(4 * lease) // the stall, the re-claim, renewals that work again
		synctest.Wait()
		close(release)
		wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
		r, err := o.Wait(wctx, key)
		wcancel()
		require.NoError(t, err)
		assert.Equal(t, outbox.Succeeded, r.State)
		assert.EqualValues(t, 1, calls.Load(), "sent once")
		assert.Zero(t, cut.Load(), "the running attempt was not cut short")
		cancel()
		wg.Wait()
	})
}

// An attempt whose renewals keep failing stops itself when its lease ends:
// from then on another process may claim the op, and two attempts must
// not run at once.
func TestAttemptStopsAtItsLeaseEndWhenRenewalsFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 30 * time.Second
		m := newMemShared()
		j := &stallingRenew{SharedJournal: m.handle()}
		j.stalls.Store(-1)
		o, err := outbox.New(j, outbox.Options{Lease: lease, Concurrency: 1, PollInterval: time.Second})
		require.NoError(t, err)
		ended := make(chan time.Duration, 1)
		var start time.Time
		var once sync.Once
		o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
			first := false
			once.Do(func() { start, first = time.Now(), true })
			if !first {
				return nil
			}
			<-ctx.Done()
			ended <- time.Since(start)
			return ctx.Err()
		})
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { _ = o.Run(ctx) })
		_, err = o.Enqueue(ctx, outbox.Op{Kind: "pay", Payload: []byte("order 1")})
		require.NoError(t, err)
		select {
		case d := <-ended:
			assert.LessOrEqual(t, d, lease, "cut at the lease's end, not after it")
			assert.GreaterOrEqual(t, d, lease-time.Second)
		case <-time.After(10 * lease):
			t.Fatal("the attempt ran on past its lease")
		}
		cancel()
		wg.Wait()
	})
}

// slowRelease is a shared journal whose first Release waits for gate: the
// lease of a failed attempt is still held when Run next claims.
type slowRelease struct {
	outbox.SharedJournal
	gate chan struct{}
	once sync.Once
}

func (s *slowRelease) Release(ctx context.Context, e outbox.Entry) error {
	s.once.Do(func() { <-s.gate })
	return s.SharedJournal.Release(ctx, e)
}

// A failed attempt's op is tried again after its backoff even when Run
// woke (a notice, an Enqueue) and claimed while the attempt's lease was
// still being given back: the claim that found the op leased must not use
// up its next time, or the op waits for the poll. (It waited the hour.)
func TestSharedRetryAfterAClaimDuringRelease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		j := &slowRelease{SharedJournal: m.handle(), gate: make(chan struct{})}
		o, err := outbox.New(j, outbox.Options{PollInterval: time.Hour, Concurrency: 4,
			Policy: retry.Policy{MaxAttempts: 3, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Jitter: retry.NoJitter}})
		require.NoError(t, err)
		var calls atomic.Int32
		o.Handle("pay", func(context.Context, outbox.Op) error {
			if calls.Add(1) == 1 {
				return errors.New("503")
			}
			return nil
		})
		o.Handle("other", func(context.Context, outbox.Op) error { return nil })
		stop := startRun(o)
		key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
		require.NoError(t, err)
		synctest.Wait() // the attempt failed; its Release waits
		require.Equal(t, int32(1), calls.Load())

		// A wake while the lease is held, then a claim at the op's next
		// time that finds it leased.
		_, err = o.Enqueue(context.Background(), outbox.Op{Kind: "other"})
		require.NoError(t, err)
		time.Sleep(10 * time.Millisecond)
		synctest.Wait()
		close(j.gate)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, int32(2), calls.Load(), "calls within a second of the release")
		assert.Equal(t, outbox.Succeeded, m.get(key).State)
		assert.ErrorIs(t, stop(), context.Canceled)
	})
}

// Ops whose backoffs end a millisecond apart are claimed again a few at a
// time, at most one claim per 5 ms, not one claim each: 20 ops failing
// 1 ms apart, retried after 1 ms, take at most 6 claims for their retries.
// (Each took a claim of its own: 20.)
func TestSharedRetriesShareClaims(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		o, err := outbox.New(m.handle(), outbox.Options{PollInterval: time.Hour, Concurrency: 20,
			Policy: retry.Policy{MaxAttempts: 2, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Jitter: retry.NoJitter}})
		require.NoError(t, err)
		var mu sync.Mutex
		tried := map[string]int{}
		o.Handle("pay", func(_ context.Context, op outbox.Op) error {
			mu.Lock()
			tried[string(op.Payload)]++
			first := tried[string(op.Payload)] == 1
			mu.Unlock()
			if first {
				var i int
				_, _ = fmt.Sscan(string(op.Payload), &i)
				time.Sleep(time.Duration(i) * time.Millisecond)
				return errors.New("503")
			}
			return nil
		})
		for i := range 20 {
			e, err := outbox.NewEntry(outbox.Op{Kind: "pay", Payload: fmt.Append(nil, i)}, time.Now(), 0)
			require.NoError(t, err)
			require.NoError(t, m.handle().Add(context.Background(), e))
		}
		stop := startRun(o)
		synctest.Wait()
		claims, _ := m.counts()
		time.Sleep(100 * time.Millisecond)
		synctest.Wait()
		retryClaims, _ := m.counts()
		retryClaims -= claims
		mu.Lock()
		for i := range 20 {
			assert.Equal(t, 2, tried[fmt.Sprint(i)], "op %d", i)
		}
		mu.Unlock()
		assert.LessOrEqual(t, retryClaims, 6, "claims for the 20 retries")
		assert.ErrorIs(t, stop(), context.Canceled)
	})
}
