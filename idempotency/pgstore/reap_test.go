package pgstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/idempotency/internal/storetest"
	"github.com/stormguard/retry/idempotency/pgstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Reap deletes every expired row, claims and results, in statements of
// ReapBatch rows, and never a live claim or a result within its TTL, even
// one a second from its end.
func TestReapDeletesOnlyWhatHasExpired(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := &statementLog{}
	pool := newPool(t, pg(t).NewDatabase(t), log)
	s, err := pgstore.New(pool, pgstore.Options{Table: "keys", ReapBatch: 10})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(ctx))
	const lease, ttl = time.Minute, time.Hour
	fp := []byte("fp")

	claim := func(name string) (key, token string) {
		key, token = storetest.Key(name), storetest.Token()
		c, err := s.Claim(ctx, key, token, fp, lease)
		require.NoError(t, err)
		require.Equal(t, idempotency.Acquired, c.State)
		return key, token
	}
	complete := func(name string) string {
		key, token := claim(name)
		require.NoError(t, s.Complete(ctx, key, token, fp, []byte("result of "+name), ttl))
		return key
	}
	liveClaim, _ := claim("live claim")
	advanceKey(t, pool, "keys", liveClaim, lease-time.Second)
	liveResult := complete("live result")
	advanceKey(t, pool, "keys", liveResult, ttl-time.Second)
	const expired = 25
	for i := range expired {
		if i%2 == 0 {
			k, _ := claim(fmt.Sprint("expired claim ", i))
			advanceKey(t, pool, "keys", k, lease)
		} else {
			advanceKey(t, pool, "keys", complete(fmt.Sprint("expired result ", i)), ttl)
		}
	}
	log.take()

	deleted, err := s.Reap(ctx)
	require.NoError(t, err)
	assert.Equal(t, expired, deleted)
	assert.Equal(t, []string{"delete from keys", "delete from keys", "delete from keys", "delete from keys_leases"}, log.take(),
		"batches of 10: 10, 10, 5; then the lease rows")
	assert.Equal(t, 2, count(t, pool, "SELECT count(*) FROM keys"))

	c, err := s.Claim(ctx, liveClaim, storetest.Token(), fp, lease)
	require.NoError(t, err)
	assert.Equal(t, idempotency.InFlight, c.State, "the live claim is still held")
	c, err = s.Claim(ctx, liveResult, storetest.Token(), fp, lease)
	require.NoError(t, err)
	assert.Equal(t, idempotency.Completed, c.State, "the result within its TTL is still replayed")
	assert.Equal(t, "result of live result", string(c.Result))

	deleted, err = s.Reap(ctx)
	require.NoError(t, err)
	assert.Zero(t, deleted, "nothing more")
}

// A request whose expired claim was reaped still saves its result, as the
// store contract says of an absent key.
func TestReapedClaimStillCompletes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newDB(t)
	s, table := newStore(t, pool)
	key, token := storetest.Key("k"), storetest.Token()
	_, err := s.Claim(ctx, key, token, []byte("fp"), time.Minute)
	require.NoError(t, err)
	advance(t, pool, table, time.Minute)
	deleted, err := s.Reap(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, deleted)
	require.NoError(t, s.Complete(ctx, key, token, []byte("fp"), []byte("late"), time.Hour))
	c, err := s.Claim(ctx, key, storetest.Token(), []byte("fp"), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, idempotency.Completed, c.State)
}

func TestReapStopsWhenItsCtxEnds(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, newDB(t))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	deleted, err := s.Reap(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, deleted)
}
