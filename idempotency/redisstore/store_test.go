package redisstore_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/idempotency/internal/storetest"
	"github.com/stormguard/retry/idempotency/redisstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStoreKeepsTheStoreContract(t *testing.T) {
	t.Parallel()
	rdb := client(t, startRedis(t))
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) (idempotency.Store, func(time.Duration)) {
			prefix := fmt.Sprintf("suite%d:", prefixes.Add(1))
			s, err := redisstore.New(rdb, redisstore.Options{Prefix: prefix})
			require.NoError(t, err)
			return s, func(d time.Duration) { advance(t, rdb, prefix, d) }
		},
		Lease: 10 * time.Second,
	})
}

func TestRedisKeepsLeasesAndTTLs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, startRedis(t))
	s := newStore(t, rdb)
	key := storetest.Key("k")

	c, err := s.Claim(ctx, key, []byte("fp"), 5*time.Second)
	require.NoError(t, err)
	ttl := rdb.PTTL(ctx, s.Key(key)).Val()
	assert.True(t, ttl > 4*time.Second && ttl <= 5*time.Second, "a claim expires with its lease: PTTL %v", ttl)

	require.NoError(t, s.Renew(ctx, key, c.Token, time.Minute))
	ttl = rdb.PTTL(ctx, s.Key(key)).Val()
	assert.True(t, ttl > 59*time.Second, "renewed: PTTL %v", ttl)

	require.NoError(t, s.Complete(ctx, key, c.Token, []byte("r"), 24*time.Hour))
	ttl = rdb.PTTL(ctx, s.Key(key)).Val()
	assert.True(t, ttl > 23*time.Hour, "a result expires with its TTL: PTTL %v", ttl)

	// Redis itself drops a claim whose lease runs out: a millisecond of
	// real time, and the key is free.
	short := storetest.Key("short")
	_, err = s.Claim(ctx, short, []byte("fp"), time.Millisecond)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		c, err := s.Claim(ctx, short, []byte("fp"), time.Minute)
		return err == nil && c.State == idempotency.Acquired
	}, 5*time.Second, time.Millisecond)
}

func TestKeyLayout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, startRedis(t))
	s, err := redisstore.New(rdb, redisstore.Options{Prefix: "orders:idem:"})
	require.NoError(t, err)
	key := storetest.Key("k")

	c, err := s.Claim(ctx, key, []byte("fp"), time.Minute)
	require.NoError(t, err)
	keys := rdb.Keys(ctx, "*").Val()
	require.Equal(t, []string{"orders:idem:{" + key + "}"}, keys, "one key, under the prefix, its digest the hash tag")
	assert.Equal(t, map[string]string{"t": c.Token, "f": "fp"}, rdb.HGetAll(ctx, keys[0]).Val())

	require.NoError(t, s.Complete(ctx, key, c.Token, []byte("result"), time.Hour))
	assert.Equal(t, map[string]string{"f": "fp", "r": "result"}, rdb.HGetAll(ctx, keys[0]).Val())
	assert.Len(t, c.Token, 32, "128 random bits")
}

func TestDefaultPrefix(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := redisstore.New(rdb, redisstore.Options{})
	require.NoError(t, err)
	assert.Equal(t, "idempotency:{abc}", s.Key("abc"))
}

func TestNewRejectsInvalidOptions(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{})
	t.Cleanup(func() { _ = rdb.Close() })
	for _, tc := range []struct {
		rdb   redis.UniversalClient
		opts  redisstore.Options
		field string
	}{
		{nil, redisstore.Options{}, "client"},
		{(*redis.Client)(nil), redisstore.Options{}, "client"},
		{rdb, redisstore.Options{Prefix: "a{b"}, "Prefix"},
		{rdb, redisstore.Options{Prefix: "a}"}, "Prefix"},
	} {
		s, err := redisstore.New(tc.rdb, tc.opts)
		assert.Nil(t, s)
		require.ErrorIs(t, err, idempotency.ErrInvalidOptions)
		assert.Contains(t, err.Error(), tc.field)
	}
}

func TestUnreachableRedisIsAnError(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{
		Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1, DialerRetryTimeout: time.Millisecond,
	})
	t.Cleanup(func() { _ = rdb.Close() })
	s := newStore(t, rdb)
	_, err := s.Claim(context.Background(), storetest.Key("k"), nil, time.Second)
	require.Error(t, err)
	assert.NotErrorIs(t, err, idempotency.ErrLeaseLost)
	assert.Contains(t, err.Error(), "redisstore: claim")
}
