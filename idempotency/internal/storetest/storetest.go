// Package storetest checks that an idempotency.Store keeps the contract of
// its interface: one suite, run against every store of this repository.
package storetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
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

	// RenewsOwnResult says the store answers nil to a Renew whose token's
	// result is saved: a store whose handlers save their response in their
	// own transaction, and then may still run (see Store.Renew).
	RenewsOwnResult bool
}

// Key returns a store key as the middleware makes them, in the scope
// "test": 16 hex digits of scope, a colon, 64 hex digits of key.
func Key(name string) string { return ScopedKey("test", name) }

// ScopedKey returns a store key for name in scope, as the middleware makes
// them.
func ScopedKey(scope, name string) string {
	sc := sha256.Sum256([]byte(scope))
	sum := sha256.Sum256([]byte(scope + "\x00" + name))
	return hex.EncodeToString(sc[:8]) + ":" + hex.EncodeToString(sum[:])
}

var tokens atomic.Int64

// Token returns a fresh fencing token, as the middleware makes them: never
// the same twice.
func Token() string {
	sum := sha256.Sum256([]byte(strconv.FormatInt(tokens.Add(1), 10)))
	return hex.EncodeToString(sum[:16])
}

var (
	fpA = []byte("fingerprint of request A.........")
	fpB = []byte("fingerprint of request B.........")
)

// Run runs the suite on the stores that h makes.
func Run(t *testing.T, h Harness) {
	ctx := context.Background()
	lease, ttl := h.Lease, 2*h.Lease
	completed := func(fp []byte, result string) idempotency.Claim {
		return idempotency.Claim{State: idempotency.Completed, Fingerprint: fp, Result: []byte(result)}
	}

	t.Run("claim, in flight, complete, replay", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k, tok := Key("k"), Token()
		c, err := s.Claim(ctx, k, tok, fpA, lease)
		require.NoError(t, err)
		require.Equal(t, idempotency.Claim{State: idempotency.Acquired}, c)
		again, err := s.Claim(ctx, k, Token(), fpB, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.Claim{State: idempotency.InFlight, Fingerprint: fpA}, again,
			"a second Claim while the first holds the key")
		require.NoError(t, s.Complete(ctx, k, tok, fpA, []byte("result"), ttl))
		done, err := s.Claim(ctx, k, Token(), fpB, lease)
		require.NoError(t, err)
		assert.Equal(t, completed(fpA, "result"), done)
	})

	t.Run("an empty result is kept", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k, tok := Key("k"), Token()
		_, err := s.Claim(ctx, k, tok, fpA, lease)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, k, tok, fpA, nil, ttl))
		done, err := s.Claim(ctx, k, Token(), fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.Completed, done.State)
		assert.Empty(t, done.Result)
	})

	t.Run("keys are independent, in a scope and across scopes", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		for _, k := range []string{Key("0"), Key("1"), ScopedKey("other", "0"), ScopedKey("", "0")} {
			c, err := s.Claim(ctx, k, Token(), fpA, lease)
			require.NoError(t, err)
			assert.Equal(t, idempotency.Acquired, c.State, "key %s", k)
		}
	})

	t.Run("a wrong token is refused", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k, tok := Key("k"), Token()
		_, err := s.Claim(ctx, k, tok, fpA, lease)
		require.NoError(t, err)
		wrong := Token()
		assert.ErrorIs(t, s.Renew(ctx, k, wrong, lease), idempotency.ErrLeaseLost)
		assert.ErrorIs(t, s.Complete(ctx, k, wrong, fpA, []byte("x"), ttl), idempotency.ErrLeaseLost)
		assert.ErrorIs(t, s.Release(ctx, k, wrong), idempotency.ErrLeaseLost)
		assert.ErrorIs(t, s.Renew(ctx, Key("absent"), tok, lease), idempotency.ErrLeaseLost, "renew of an absent key")
		again, err := s.Claim(ctx, k, wrong, fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.InFlight, again.State, "the claim survives a wrong token")
		require.NoError(t, s.Complete(ctx, k, tok, fpA, []byte("right"), ttl))
		done, err := s.Claim(ctx, k, Token(), fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, completed(fpA, "right"), done)
	})

	t.Run("release frees the key for a new claim", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k, tok := Key("k"), Token()
		_, err := s.Claim(ctx, k, tok, fpA, lease)
		require.NoError(t, err)
		require.NoError(t, s.Release(ctx, k, tok))
		tok2 := Token()
		c, err := s.Claim(ctx, k, tok2, fpB, lease)
		require.NoError(t, err)
		require.Equal(t, idempotency.Acquired, c.State)
		assert.ErrorIs(t, s.Complete(ctx, k, tok, fpA, []byte("old"), ttl), idempotency.ErrLeaseLost, "the key is another's")
		assert.ErrorIs(t, s.Release(ctx, k, tok), idempotency.ErrLeaseLost, "the key is another's")
	})

	t.Run("a completed key cannot be renewed, released or completed by another", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k, tok := Key("k"), Token()
		_, err := s.Claim(ctx, k, tok, fpA, lease)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, k, tok, fpA, []byte("first"), ttl))
		if h.RenewsOwnResult {
			assert.NoError(t, s.Renew(ctx, k, tok, lease), "the result is the token's own")
		} else {
			assert.ErrorIs(t, s.Renew(ctx, k, tok, lease), idempotency.ErrLeaseLost)
		}
		assert.ErrorIs(t, s.Renew(ctx, k, Token(), lease), idempotency.ErrLeaseLost, "not another's")
		assert.ErrorIs(t, s.Release(ctx, k, tok), idempotency.ErrLeaseLost)
		assert.ErrorIs(t, s.Complete(ctx, k, Token(), fpB, []byte("other"), ttl), idempotency.ErrLeaseLost)
		done, err := s.Claim(ctx, k, Token(), fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, completed(fpA, "first"), done)
	})

	t.Run("an expired lease is taken over, and fenced off", func(t *testing.T) {
		t.Parallel()
		s, advance := h.New(t)
		k, old := Key("k"), Token()
		_, err := s.Claim(ctx, k, old, fpA, lease)
		require.NoError(t, err)
		advance(lease + lease/2)
		taken := Token()
		c, err := s.Claim(ctx, k, taken, fpB, lease)
		require.NoError(t, err)
		require.Equal(t, idempotency.Acquired, c.State, "after the lease, not the TTL")
		// The old holder wakes up: it can neither renew, save nor delete.
		assert.ErrorIs(t, s.Renew(ctx, k, old, lease), idempotency.ErrLeaseLost)
		assert.ErrorIs(t, s.Complete(ctx, k, old, fpA, []byte("loser"), ttl), idempotency.ErrLeaseLost)
		assert.ErrorIs(t, s.Release(ctx, k, old), idempotency.ErrLeaseLost)
		require.NoError(t, s.Complete(ctx, k, taken, fpB, []byte("winner"), ttl))
		assert.ErrorIs(t, s.Complete(ctx, k, old, fpA, []byte("loser"), ttl), idempotency.ErrLeaseLost, "after the winner saved")
		done, err := s.Claim(ctx, k, Token(), fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, completed(fpB, "winner"), done)
	})

	t.Run("an expired lease cannot be renewed", func(t *testing.T) {
		t.Parallel()
		s, advance := h.New(t)
		k, tok := Key("k"), Token()
		_, err := s.Claim(ctx, k, tok, fpA, lease)
		require.NoError(t, err)
		advance(lease + lease/2)
		assert.ErrorIs(t, s.Renew(ctx, k, tok, lease), idempotency.ErrLeaseLost)
	})

	t.Run("an expired lease that nobody took over is completed all the same", func(t *testing.T) {
		t.Parallel()
		s, advance := h.New(t)
		k, tok := Key("k"), Token()
		_, err := s.Claim(ctx, k, tok, fpA, lease)
		require.NoError(t, err)
		advance(lease + lease/2)
		require.NoError(t, s.Complete(ctx, k, tok, fpA, []byte("late"), ttl),
			"the result is the only one there is: a retry must get it")
		done, err := s.Claim(ctx, k, Token(), fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, completed(fpA, "late"), done, "saved with its fingerprint")
		advance(ttl - lease/2)
		done, err = s.Claim(ctx, k, Token(), fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.Completed, done.State, "kept for its TTL from Complete")
	})

	t.Run("an expired lease that nobody took over is released all the same", func(t *testing.T) {
		t.Parallel()
		s, advance := h.New(t)
		k, tok := Key("k"), Token()
		_, err := s.Claim(ctx, k, tok, fpA, lease)
		require.NoError(t, err)
		advance(lease + lease/2)
		require.NoError(t, s.Release(ctx, k, tok))
		c, err := s.Claim(ctx, k, Token(), fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.Acquired, c.State)
	})

	t.Run("renew extends the lease", func(t *testing.T) {
		t.Parallel()
		s, advance := h.New(t)
		k, tok := Key("k"), Token()
		_, err := s.Claim(ctx, k, tok, fpA, lease)
		require.NoError(t, err)
		for range 3 { // three times 2/3 of a lease: past the first lease
			advance(lease * 2 / 3)
			require.NoError(t, s.Renew(ctx, k, tok, lease))
		}
		again, err := s.Claim(ctx, k, Token(), fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.InFlight, again.State)
		require.NoError(t, s.Complete(ctx, k, tok, fpA, []byte("slow"), ttl))
	})

	t.Run("a result expires after its TTL", func(t *testing.T) {
		t.Parallel()
		s, advance := h.New(t)
		k, tok := Key("k"), Token()
		_, err := s.Claim(ctx, k, tok, fpA, lease)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, k, tok, fpA, []byte("r"), ttl))
		advance(lease) // half the TTL: still there
		done, err := s.Claim(ctx, k, Token(), fpA, lease)
		require.NoError(t, err)
		require.Equal(t, idempotency.Completed, done.State)
		advance(lease + lease/2)
		fresh, err := s.Claim(ctx, k, Token(), fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.Acquired, fresh.State)
	})

	// Each call sent twice, as a client does whose first reply was lost:
	// the second answer is the first's.
	t.Run("a claim sent twice finds its own claim", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k, tok := Key("k"), Token()
		for i := range 2 {
			c, err := s.Claim(ctx, k, tok, fpA, lease)
			require.NoError(t, err)
			require.Equal(t, idempotency.Claim{State: idempotency.Acquired}, c, "sending %d", i+1)
		}
		other, err := s.Claim(ctx, k, Token(), fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.InFlight, other.State, "another request still sees it in flight")
		require.NoError(t, s.Complete(ctx, k, tok, fpA, []byte("r"), ttl))
	})

	t.Run("a complete sent twice succeeds twice and keeps the first result", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k, tok := Key("k"), Token()
		_, err := s.Claim(ctx, k, tok, fpA, lease)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, k, tok, fpA, []byte("r"), ttl))
		require.NoError(t, s.Complete(ctx, k, tok, fpA, []byte("r"), ttl), "sent again")
		done, err := s.Claim(ctx, k, Token(), fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, completed(fpA, "r"), done)
	})

	t.Run("a release sent twice succeeds twice", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k, tok := Key("k"), Token()
		_, err := s.Claim(ctx, k, tok, fpA, lease)
		require.NoError(t, err)
		require.NoError(t, s.Release(ctx, k, tok))
		require.NoError(t, s.Release(ctx, k, tok), "sent again")
		c, err := s.Claim(ctx, k, Token(), fpB, lease)
		require.NoError(t, err)
		assert.Equal(t, idempotency.Acquired, c.State)
	})

	t.Run("a renew sent twice succeeds twice", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		k, tok := Key("k"), Token()
		_, err := s.Claim(ctx, k, tok, fpA, lease)
		require.NoError(t, err)
		require.NoError(t, s.Renew(ctx, k, tok, lease))
		require.NoError(t, s.Renew(ctx, k, tok, lease), "sent again")
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
				c, err := s.Claim(ctx, k, Token(), fpA, time.Minute)
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
		k, tok := Key("k"), Token()
		result := make([]byte, 70_000)
		for i := range result {
			result[i] = byte(i * 7)
		}
		_, err := s.Claim(ctx, k, tok, fpA, lease)
		require.NoError(t, err)
		require.NoError(t, s.Complete(ctx, k, tok, fpA, result, ttl))
		done, err := s.Claim(ctx, k, Token(), fpA, lease)
		require.NoError(t, err)
		assert.Equal(t, result, done.Result)
	})

	t.Run("a claim whose reply is lost does not lock its key out", func(t *testing.T) {
		t.Parallel()
		s, _ := h.New(t)
		lost := &lostClaimReply{Store: s}
		lost.lose.Store(true)
		runs := 0
		m, err := idempotency.New(idempotency.Options{Store: lost, Lease: lease})
		require.NoError(t, err)
		srv := m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			runs++
			w.WriteHeader(http.StatusCreated)
		}))
		send := func() int {
			r := httptest.NewRequest(http.MethodPost, "/orders", nil)
			r.Header.Set("Idempotency-Key", "lost-reply")
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, r)
			return w.Code
		}
		require.Equal(t, http.StatusServiceUnavailable, send(), "a Claim that returns an error")
		lost.lose.Store(false)
		assert.Equal(t, http.StatusCreated, send(), "the retry, at once: the first claim must not hold the key")
		assert.Equal(t, 1, runs, "handler runs")
	})
}

// lostClaimReply is a Store whose Claim, while lose is set, takes effect
// and then returns an error, as a call does whose reply is lost after the
// store committed it.
type lostClaimReply struct {
	idempotency.Store
	lose atomic.Bool
}

func (s *lostClaimReply) Claim(ctx context.Context, key, token string, fp []byte, lease time.Duration) (idempotency.Claim, error) {
	c, err := s.Store.Claim(ctx, key, token, fp, lease)
	if err == nil && s.lose.Load() {
		return idempotency.Claim{}, errLostReply
	}
	return c, err
}

var errLostReply = errors.New("storetest: the reply of Claim was lost")
