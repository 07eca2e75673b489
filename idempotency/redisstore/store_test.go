package redisstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
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

func TestStoreKeepsTheStoreContractWhenRepliesAreLost(t *testing.T) {
	t.Parallel()
	addr := startRedis(t)
	direct := client(t, addr)
	p := newLossyProxy(t, addr)
	p.LoseNext(-1) // every script runs twice: its first reply is lost
	rdb := p.client(t)
	t.Run("suite", func(t *testing.T) { // returns once its parallel subtests are done
		storetest.Run(t, storetest.Harness{
			New: func(t *testing.T) (idempotency.Store, func(time.Duration)) {
				prefix := fmt.Sprintf("lossy%d:", prefixes.Add(1))
				s, err := redisstore.New(rdb, redisstore.Options{Prefix: prefix})
				require.NoError(t, err)
				return s, func(d time.Duration) { advance(t, direct, prefix, d) }
			},
			Lease: 10 * time.Second,
		})
	})
	assert.Positive(t, p.Lost(), "replies were lost, and go-redis sent the scripts again")
}

func TestResentCallsGetTheirFirstAnswer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	addr := startRedis(t)
	p := newLossyProxy(t, addr)
	s := newStore(t, p.client(t))
	direct := client(t, addr)
	key, tok, fp := storetest.Key("k"), storetest.Token(), []byte("fp")

	p.LoseNext(1)
	c, err := s.Claim(ctx, key, tok, fp, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, idempotency.Acquired, c.State, "a claim sent again finds its own claim")
	assert.Equal(t, tok, direct.HGet(ctx, s.Key(key), "t").Val())

	p.LoseNext(1)
	require.NoError(t, s.Renew(ctx, key, tok, time.Minute), "a renewal sent again")

	p.LoseNext(1)
	require.NoError(t, s.Complete(ctx, key, tok, fp, []byte("result"), time.Hour), "a complete sent again succeeds")
	assert.Equal(t, "result", direct.HGet(ctx, s.Key(key), "r").Val())

	other := storetest.Key("other")
	otherTok := storetest.Token()
	_, err = s.Claim(ctx, other, otherTok, fp, time.Minute)
	require.NoError(t, err)
	p.LoseNext(1)
	require.NoError(t, s.Release(ctx, other, otherTok), "a release sent again succeeds")
	assert.Zero(t, direct.Exists(ctx, s.Key(other)).Val())
	assert.Equal(t, int64(4), p.Lost(), "each of the four calls lost one reply and was sent again")
}

func TestMiddlewareOnARedisThatLosesReplies(t *testing.T) {
	t.Parallel()
	p := newLossyProxy(t, startRedis(t))
	p.LoseNext(-1)
	s := newStore(t, p.client(t))
	m, err := idempotency.New(idempotency.Options{Store: s})
	require.NoError(t, err)
	var runs atomic.Int32
	srv := httptest.NewServer(m.Handler(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"order":%d}`, runs.Add(1))
	})))
	t.Cleanup(srv.Close)

	first := mustPost(t, srv, "k", "{}")
	require.Equal(t, http.StatusCreated, first.status, "the claim sent again is the request's own: body %s", first.body)
	again := mustPost(t, srv, "k", "{}")
	assert.Equal(t, http.StatusCreated, again.status)
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader), "the complete sent again saved the result")
	assert.Equal(t, first.body, again.body)
	assert.Equal(t, int32(1), runs.Load(), "the handler ran once")
	assert.GreaterOrEqual(t, p.Lost(), int64(3), "claim, complete and the replay's claim lost their replies")
}

func TestRedisKeepsLeasesAndTTLs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, startRedis(t))
	s := newStore(t, rdb)
	key, tok := storetest.Key("k"), storetest.Token()

	_, err := s.Claim(ctx, key, tok, []byte("fp"), 5*time.Second)
	require.NoError(t, err)
	ttl := rdb.PTTL(ctx, s.Key(key)).Val()
	assert.True(t, ttl > 4*time.Second && ttl <= 5*time.Second, "a claim expires with its lease: PTTL %v", ttl)

	require.NoError(t, s.Renew(ctx, key, tok, time.Minute))
	ttl = rdb.PTTL(ctx, s.Key(key)).Val()
	assert.True(t, ttl > 59*time.Second, "renewed: PTTL %v", ttl)

	require.NoError(t, s.Complete(ctx, key, tok, []byte("fp"), []byte("r"), 24*time.Hour))
	ttl = rdb.PTTL(ctx, s.Key(key)).Val()
	assert.True(t, ttl > 23*time.Hour, "a result expires with its TTL: PTTL %v", ttl)

	// Redis itself drops a claim whose lease runs out: a millisecond of
	// real time, and the key is free.
	short := storetest.Key("short")
	_, err = s.Claim(ctx, short, storetest.Token(), []byte("fp"), time.Millisecond)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		c, err := s.Claim(ctx, short, storetest.Token(), []byte("fp"), time.Minute)
		return err == nil && c.State == idempotency.Acquired
	}, 5*time.Second, time.Millisecond)
}

func TestKeyLayout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, startRedis(t))
	s, err := redisstore.New(rdb, redisstore.Options{Prefix: "orders:idem:"})
	require.NoError(t, err)
	key, tok := storetest.Key("k"), storetest.Token()
	scope, digest, _ := strings.Cut(key, ":")
	_, err = s.Claim(ctx, key, tok, []byte("fp"), time.Minute)
	require.NoError(t, err)
	keys := rdb.Keys(ctx, "*").Val()
	require.Equal(t, []string{"orders:idem:" + scope + ":{" + digest + "}"}, keys,
		"one key, under the prefix and the scope, its digest the hash tag")
	assert.Equal(t, keys, rdb.Keys(ctx, "orders:idem:"+scope+":*").Val(), "a scope's keys can be counted")
	assert.Equal(t, map[string]string{"t": tok, "f": "fp"}, rdb.HGetAll(ctx, keys[0]).Val())
	require.NoError(t, s.Complete(ctx, key, tok, []byte("fp"), []byte("result"), time.Hour))
	assert.Equal(t, map[string]string{"t": tok, "f": "fp", "r": "result"}, rdb.HGetAll(ctx, keys[0]).Val(),
		"the token stays with the result, so that a Complete sent again finds it")
}

func TestResultOfAnOlderVersionIsNotOverwritten(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb := client(t, startRedis(t))
	s := newStore(t, rdb)
	key := storetest.Key("k")
	// A result saved before tokens stayed with results: "f" and "r" only.
	require.NoError(t, rdb.HSet(ctx, s.Key(key), "f", "fp", "r", "old").Err())
	assert.ErrorIs(t, s.Complete(ctx, key, storetest.Token(), []byte("fp"), []byte("new"), time.Hour), idempotency.ErrLeaseLost)
	assert.ErrorIs(t, s.Release(ctx, key, storetest.Token()), idempotency.ErrLeaseLost)
	c, err := s.Claim(ctx, key, storetest.Token(), []byte("fp"), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, idempotency.Claim{State: idempotency.Completed, Fingerprint: []byte("fp"), Result: []byte("old")}, c)
}

func TestDefaultPrefix(t *testing.T) {
	t.Parallel()
	rdb := redis.NewClient(&redis.Options{})
	t.Cleanup(func() { _ = rdb.Close() })
	s, err := redisstore.New(rdb, redisstore.Options{})
	require.NoError(t, err)
	assert.Equal(t, "idempotency:{abc}", s.Key("abc"), "a key without a scope part")
	assert.Equal(t, "idempotency:0123:{abc}", s.Key("0123:abc"))
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
	_, err := s.Claim(context.Background(), storetest.Key("k"), storetest.Token(), nil, time.Second)
	require.Error(t, err)
	assert.NotErrorIs(t, err, idempotency.ErrLeaseLost)
	assert.Contains(t, err.Error(), "redisstore: claim")
}
