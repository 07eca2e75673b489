package outbox_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/outbox"
)

// Over a SharedJournal, the claim counts the attempt it is for: an op
// claimed and succeeded costs one write after the claim, its outcome, not
// a count before the call as well. (It cost two Updates.)
func TestSharedClaimedSuccessIsOneWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		ctx := context.Background()
		e, err := outbox.NewEntry(outbox.Op{Kind: "send", Payload: []byte("x")}, time.Now(), 0)
		require.NoError(t, err)
		require.NoError(t, m.handle().Add(ctx, e))
		o := newShared(t, m, outbox.Options{})
		o.Handle("send", func(context.Context, outbox.Op) error { return nil })
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- o.Run(runCtx) }()
		synctest.Wait()
		cancel()
		<-done
		got := m.get(e.Op.Key)
		assert.Equal(t, outbox.Succeeded, got.State)
		assert.Equal(t, 1, got.Attempts)
		assert.Equal(t, 1, m.updates(), "one write after the claim: the outcome")
	})
}

// A claim that a guard then refuses gives its count back: the op is
// written back with the attempts it had, nothing was sent, and a later
// attempt is the op's first.
func TestSharedRefusalAfterClaimGivesTheCountBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		br, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, FailureRatio: 1, OpenFor: time.Hour, Probes: 1})
		require.NoError(t, err)
		_, err = retry.Do(context.Background(), func(context.Context) error { return errors.New("503") }, retry.Policy{MaxAttempts: 1, Breaker: br})
		require.Error(t, err)
		require.Equal(t, guard.BreakerOpen, br.State())

		m := newMemShared()
		ctx := context.Background()
		e, err := outbox.NewEntry(outbox.Op{Kind: "send", Payload: []byte("x")}, time.Now(), 0)
		require.NoError(t, err)
		e.Attempts = 1 // one attempt made before
		require.NoError(t, m.handle().Add(ctx, e))
		o := newShared(t, m, outbox.Options{Policy: retry.Policy{MaxAttempts: 5, Breaker: br}})
		calls := 0
		o.Handle("send", func(context.Context, outbox.Op) error { calls++; return nil })
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- o.Run(runCtx) }()
		synctest.Wait()
		cancel()
		<-done
		claims, _ := m.counts()
		require.GreaterOrEqual(t, claims, 1)
		got := m.get(e.Op.Key)
		assert.Equal(t, 0, calls, "the open breaker refused the call")
		assert.Equal(t, outbox.Pending, got.State)
		assert.Equal(t, 1, got.Attempts, "the refused claim's count was given back")
		assert.Equal(t, "circuit breaker open; not sent", got.Reason)
		assert.Empty(t, got.Lease, "released")
	})
}

// A Run stopped between the claim and the call gives the count back: the
// op was not sent, so its attempts are as before the claim.
func TestSharedStopBeforeTheCallGivesTheCountBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		ctx := context.Background()
		e, err := outbox.NewEntry(outbox.Op{Kind: "send", Payload: []byte("x")}, time.Now(), 0)
		require.NoError(t, err)
		require.NoError(t, m.handle().Add(ctx, e))
		runCtx, cancel := context.WithCancel(ctx)
		j := &cancelOnClaim{SharedJournal: m.handle(), cancel: cancel}
		o, err := outbox.New(j, outbox.Options{})
		require.NoError(t, err)
		calls := 0
		o.Handle("send", func(context.Context, outbox.Op) error { calls++; return nil })
		require.ErrorIs(t, o.Run(runCtx), context.Canceled)
		got := m.get(e.Op.Key)
		assert.Equal(t, 0, calls)
		assert.Equal(t, outbox.Pending, got.State)
		assert.Equal(t, 0, got.Attempts, "the count of the claim was given back")
		assert.Empty(t, got.Lease, "released")
	})
}

// cancelOnClaim ends Run's ctx as its first claim returns: Run stops
// between the claim and the call.
type cancelOnClaim struct {
	outbox.SharedJournal
	cancel context.CancelFunc
}

func (c *cancelOnClaim) Claim(ctx context.Context, r outbox.ClaimRequest) ([]outbox.Entry, error) {
	es, err := c.SharedJournal.Claim(ctx, r)
	if len(es) > 0 {
		c.cancel()
	}
	return es, err
}
