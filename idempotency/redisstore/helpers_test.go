package redisstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stormguard/retry/idempotency/redisstore"
	"github.com/stormguard/retry/internal/redisserver"
	"github.com/stretchr/testify/require"
)

// client returns a client of the server at addr, closed when the test ends.
func client(t *testing.T, addr string) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// prefixes makes each test's keys its own, on a server tests share.
var prefixes atomic.Int64

// newStore returns a Store on rdb under a prefix of its own.
func newStore(t *testing.T, rdb redis.UniversalClient) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(rdb, redisstore.Options{Prefix: fmt.Sprintf("test%d:", prefixes.Add(1))})
	require.NoError(t, err)
	return s
}

// startRedis starts a redis-server for the test, by the CI rule of
// internal/redisserver: skip without one, unless CI=true.
func startRedis(t *testing.T) string {
	t.Helper()
	return redisserver.Start(t).Addr
}

// shiftScript moves one key's expiry d milliseconds closer, deleting it
// if that reaches it: what d of time passing does to it in Redis.
var shiftScript = redis.NewScript(`
local t = redis.call('PTTL', KEYS[1])
if t < 0 then return 0 end
if t <= tonumber(ARGV[1]) then redis.call('DEL', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], t - ARGV[1]) end
return 1
`)

// advance makes d pass for the keys under prefix, as far as Redis's
// expiries go (leases and TTLs are nothing else in the store), without
// waiting for it.
func advance(t *testing.T, rdb *redis.Client, prefix string, d time.Duration) {
	t.Helper()
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
	for iter.Next(ctx) {
		require.NoError(t, shiftScript.Run(ctx, rdb, []string{iter.Val()}, d.Milliseconds()).Err())
	}
	require.NoError(t, iter.Err())
}

// awaitRenewal waits until every claim under prefix has a lease of more
// than lease - 500ms left: it was renewed since advance shifted it by a
// second or more. It polls the real server, bounded by 10s.
func awaitRenewal(t *testing.T, rdb *redis.Client, prefix string, lease time.Duration) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(10 * time.Second)
	for {
		renewed := true
		iter := rdb.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			if rdb.HExists(ctx, iter.Val(), "r").Val() {
				continue // a result, not a claim
			}
			if rdb.PTTL(ctx, iter.Val()).Val() <= lease-500*time.Millisecond {
				renewed = false
			}
		}
		require.NoError(t, iter.Err())
		if renewed {
			return
		}
		require.True(t, time.Now().Before(deadline), "no renewal of the claims under %s", prefix)
		time.Sleep(time.Millisecond)
	}
}
