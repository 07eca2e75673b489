// Package storetest checks that an idempotency.Store keeps the contract of
// its interface: one suite, run against every store of this repository.
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Harness is what the suite needs of a store.
type Harness struct {
	// New returns an empty store for one subtest, and a func that moves
	// the store's time forward by d, as a fake clock's Add does.
	New func(t *testing.T) (s idempotency.Store, advance func(d time.Duration))

	// Lease is the lease the suite claims keys for; TTLs are twice as long.
	Lease time.Duration
}

// Key returns a store key as the middleware makes them: 64 hex digits.
func Key(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:])
}

var (
	fpA = []byte("fingerprint of request A.........")
	fpB = []byte("fingerprint of request B.........")
)

// Run runs the suite on the stores that h makes.
func Run(t *testing.T, h Harness) {
	ctx := context.Background()
	lease, ttl := h.Lease, 2*h.Lease

	t.Run("claim, in flight, complete, replay", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k := Key("k")
		c, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		require.Equal(t, idempotency.Acquired, c.State)
		require.NotEmpty(t, c.Token)

		again, err := s.Claim(ctx, k, fpB, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.Claim{State: idempotency.InFlight, Fingerprint: fpA}, again,
			"a second Claim while the first holds the key")

		require.NoError(t, s.Complete(ctx, k, c.Token, []byte("result"), ttl))
		done, err := s.Claim(ctx, k, fpB, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.Claim{State: idempotency.Completed, Fingerprint: fpA, Result: []byte("result")}, done)
	})

	t.Run("an empty result is kept", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k := Key("k")
		c, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, k, c.Token, nil, ttl))
		done, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.Completed, done.State)
		assert.Empty(t, done.Result)
	})

	t.Run("keys are independent", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		for i := range 3 {
			c, err := s.Claim(ctx, Key(strconv.Itoa(i)), fpA, lease)
			require.NoError(t, err)
			assert.Equal(t, idempotency.Acquired, c.State, "key %d", i)
		}
	})

	t.Run("a wrong token is refused", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k := Key("k")
		c, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		wrong := c.Token + "x"
		assert.ErrorIs(t, s.Renew(ctx, k, wrong, lease), idempotency.ErrLeaseLost)
		assert.ErrorIs(t, s.Complete(ctx, k, wrong, []byte("x"), ttl), idempotency.ErrLeaseLost)
		assert.ErrorIs(t, s.Release(ctx, k, wrong), idempotency.ErrLeaseLost)
		assert.ErrorIs(t, s.Renew(ctx, Key("absent"), c.Token, lease), idempotency.ErrLeaseLost)
		again, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.InFlight, again.State, "the claim survives a wrong token")
	})

	t.Run("release frees the key for a new claim", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k := Key("k")
		c, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		require.NoError(t, s.Release(ctx, k, c.Token))
		assert.ErrorIs(t, s.Release(ctx, k, c.Token), idempotency.ErrLeaseLost, "released twice")
		next, err := s.Claim(ctx, k, fpB, lease)
		require.NoError(t, err)
		require.Equal(t, idempotency.Acquired, next.State)
		assert.NotEqual(t, c.Token, next.Token, "a token is never reused for a key")
		assert.ErrorIs(t, s.Complete(ctx, k, c.Token, []byte("old"), ttl), idempotency.ErrLeaseLost)
	})

	t.Run("a completed key cannot be completed, renewed or released again", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k := Key("k")
		c, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, k, c.Token, []byte("first"), ttl))
		assert.ErrorIs(t, s.Complete(ctx, k, c.Token, []byte("second"), ttl), idempotency.ErrLeaseLost)
		assert.ErrorIs(t, s.Renew(ctx, k, c.Token, lease), idempotency.ErrLeaseLost)
		assert.ErrorIs(t, s.Release(ctx, k, c.Token), idempotency.ErrLeaseLost)
		done, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, []byte("first"), done.Result)
	})

	t.Run("an expired lease is taken over, and fenced off", func(t *testing.T) {
		t.Parallel()
		s, advance := h.New(t)
		k := Key("k")
		old, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		advance(lease + lease/2)
		taken, err := s.Claim(ctx, k, fpB, lease)
		require.NoError(t, err)
		require.Equal(t, idempotency.Acquired, taken.State, "after the lease, not the TTL")
		assert.NotEqual(t, old.Token, taken.Token)

		// The old holder wakes up: it can neither renew, save nor delete.
		assert.ErrorIs(t, s.Renew(ctx, k, old.Token, lease), idempotency.ErrLeaseLost)
		assert.ErrorIs(t, s.Complete(ctx, k, old.Token, []byte("loser"), ttl), idempotency.ErrLeaseLost)
		assert.ErrorIs(t, s.Release(ctx, k, old.Token), idempotency.ErrLeaseLost)

		require.NoError(t, s.Complete(ctx, k, taken.Token, []byte("winner"), ttl))
		done, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.Claim{State: idempotency.Completed, Fingerprint: fpB, Result: []byte("winner")}, done)
	})

	t.Run("an expired lease cannot be renewed or completed", func(t *testing.T) {
		t.Parallel()
		s, advance := h.New(t)
		k := Key("k")
		c, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		advance(lease + lease/2)
		assert.ErrorIs(t, s.Renew(ctx, k, c.Token, lease), idempotency.ErrLeaseLost)
		assert.ErrorIs(t, s.Complete(ctx, k, c.Token, []byte("late"), ttl), idempotency.ErrLeaseLost)
	})

	t.Run("renew extends the lease", func(t *testing.T) {
		t.Parallel()
		s, advance := h.New(t)
		k := Key("k")
		c, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		for range 3 { // three times 2/3 of a lease: past the first lease
			advance(lease * 2 / 3)
			require.NoError(t, s.Renew(ctx, k, c.Token, lease))
		}
		again, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.InFlight, again.State)
		require.NoError(t, s.Complete(ctx, k, c.Token, []byte("slow"), ttl))
	})

	t.Run("a result expires after its TTL", func(t *testing.T) {
		t.Parallel()
		s, advance := h.New(t)
		k := Key("k")
		c, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, k, c.Token, []byte("r"), ttl))
		advance(lease) // half the TTL: still there
		done, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		require.Equal(t, idempotency.Completed, done.State)
		advance(lease + lease/2)
		fresh, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.Acquired, fresh.State)
	})

	t.Run("one of many concurrent claims wins", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k := Key("k")
		const n = 16
		var (
			wg   sync.WaitGroup
			mu   sync.Mutex
			wins int
		)
		for range n {
			wg.Go(func() {
				c, err := s.Claim(ctx, k, fpA, time.Minute)
				assert.NoError(t, err)
				if c.State == idempotency.Acquired {
					mu.Lock()
					wins++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		assert.Equal(t, 1, wins)
	})

	t.Run("a binary result comes back byte for byte", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k := Key("k")
		result := make([]byte, 70_000)
		for i := range result {
			result[i] = byte(i * 7)
		}
		c, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, k, c.Token, result, ttl))
		done, err := s.Claim(ctx, k, fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, result, done.Result)
	})
}
