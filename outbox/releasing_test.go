package outbox_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
)

// releasingMem is the in-memory shared journal as an
// outbox.ReleasingJournal, counting its writes; after its first
// UpdateRelease has written, it waits for gate (when set) before it
// returns: the window between the write that gave the lease back and the
// attempt's end.
type releasingMem struct {
	outbox.SharedJournal
	gate                     chan struct{}
	updateReleases, releases atomic.Int32
}

func (r *releasingMem) UpdateRelease(ctx context.Context, e outbox.Entry) error {
	n := r.updateReleases.Add(1)
	if err := r.SharedJournal.Update(ctx, e); err != nil {
		return err
	}
	if err := r.SharedJournal.Release(ctx, e); err != nil {
		return err
	}
	if r.gate != nil && n == 1 {
		<-r.gate
	}
	return nil
}

func (r *releasingMem) Release(ctx context.Context, e outbox.Entry) error {
	r.releases.Add(1)
	return r.SharedJournal.Release(ctx, e)
}

var quickRetry = retry.Policy{MaxAttempts: 3, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Jitter: retry.NoJitter}

// Over a ReleasingJournal, an attempt that leaves its op pending writes
// once: its outcome and the end of its lease together, no Release after.
func TestFailedAttemptWritesOnceOverAReleasingJournal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		j := &releasingMem{SharedJournal: m.handle()}
		o, err := outbox.New(j, outbox.Options{PollInterval: time.Hour, Concurrency: 4, Policy: quickRetry})
		require.NoError(t, err)
		calls := handlePayFailingOnce(o)
		stop := startRun(o)
		key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
		require.NoError(t, err)
		res, err := o.Wait(context.Background(), key)
		require.NoError(t, err)
		assert.Equal(t, outbox.Succeeded, res.State)
		assert.Equal(t, int32(2), calls.Load())
		assert.Equal(t, int32(1), j.updateReleases.Load(), "the failed attempt's one write")
		assert.Equal(t, int32(0), j.releases.Load(), "no Release after it")
		assert.ErrorIs(t, stop(), context.Canceled)
	})
}

// A claim of this process that finds the op whose lease its attempt has
// just given back (the attempt not yet ended here) moves the attempt's
// lease, which the attempt then gives back: the op's next attempt runs
// after its backoff, not after the lease runs out.
func TestClaimBetweenUpdateReleaseAndTheAttemptsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		j := &releasingMem{SharedJournal: m.handle(), gate: make(chan struct{})}
		calls, key, stop := failPayThenClaim(t, j) // the attempt failed, wrote, and waits before it returns
		close(j.gate)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, int32(2), calls.Load(), "calls within a second, not after the %v lease", claimLease)
		assert.Equal(t, outbox.Succeeded, m.get(key).State)
		assert.ErrorIs(t, stop(), context.Canceled)
	})
}

// releaseThenWait is a shared journal whose first Release gives the lease
// back, then waits for gate before it returns.
type releaseThenWait struct {
	outbox.SharedJournal
	gate chan struct{}
	n    atomic.Int32
}

func (r *releaseThenWait) Release(ctx context.Context, e outbox.Entry) error {
	err := r.SharedJournal.Release(ctx, e)
	if r.n.Add(1) == 1 {
		<-r.gate // later Releases (the claim given back) pass
	}
	return err
}

// A claim that finds the op whose attempt is past its lease (given back,
// the attempt not yet ended here) is for the op's next attempt: it is
// given back, the op stays due here, and its next attempt runs once the
// last has ended, not after the new lease runs out.
func TestClaimAfterTheAttemptGaveItsLeaseBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		j := &releaseThenWait{SharedJournal: m.handle(), gate: make(chan struct{})}
		calls, key, stop := failPayThenClaim(t, j) // the attempt gave its lease back, and waits before it ends
		assert.Empty(t, m.get(key).Lease, "the claim that found the op gave it back")
		close(j.gate)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, int32(2), calls.Load(), "calls within a second, not after the %v lease", claimLease)
		assert.Equal(t, outbox.Succeeded, m.get(key).State)
		assert.ErrorIs(t, stop(), context.Canceled)
	})
}

// claimLease is the lease of failPayThenClaim's Outbox.
const claimLease = 30 * time.Second

// failPayThenClaim runs an Outbox over j (whose wrapper holds the failed
// attempt's end) with a "pay" op that fails its first attempt; once that
// attempt is held in j, and past the op's backoff, it enqueues an "other"
// op whose wake makes Run claim, and finds the op free. It returns the
// pay handler's calls, the pay op's key and Run's stop.
func failPayThenClaim(t *testing.T, j outbox.SharedJournal) (calls *atomic.Int32, key string, stop func() error) {
	t.Helper()
	o, err := outbox.New(j, outbox.Options{PollInterval: time.Hour, Lease: claimLease, Concurrency: 4, Policy: quickRetry})
	require.NoError(t, err)
	calls = handlePayFailingOnce(o)
	o.Handle("other", func(context.Context, outbox.Op) error { return nil })
	stop = startRun(o)
	key, err = o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	synctest.Wait()
	require.Equal(t, int32(1), calls.Load())

	time.Sleep(10 * time.Millisecond) // past the op's backoff
	_, err = o.Enqueue(context.Background(), outbox.Op{Kind: "other"})
	require.NoError(t, err)
	synctest.Wait()
	return calls, key, stop
}

// handlePayFailingOnce makes the "pay" handler of o fail its first call
// (a 503) and succeed after; it returns the count of its calls.
func handlePayFailingOnce(o *outbox.Outbox) *atomic.Int32 {
	calls := new(atomic.Int32)
	o.Handle("pay", func(context.Context, outbox.Op) error {
		if calls.Add(1) == 1 {
			return errors.New("503")
		}
		return nil
	})
	return calls
}
