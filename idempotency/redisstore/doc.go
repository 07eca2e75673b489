// Package redisstore is an idempotency.Store on Redis, so that every process
// of a fleet sees the same keys: a request claimed on one is answered 409 on
// the others, and its result is replayed by all of them.
//
// Each step of the store contract (claim, renew, complete, release) is one
// Lua script, run with EVALSHA: one round trip, atomic in Redis. A fresh key
// costs two round trips (claim, complete), a replay one, and a handler
// slower than a third of the lease one more per renewal. Leases and TTLs are
// Redis expiries (PEXPIRE, in milliseconds), so Redis forgets a key by
// itself when nothing renews it, whatever happened to the process that held
// it. A request whose lease ran out while nobody claimed its key still
// saves its result: the complete script finds the key absent and writes
// the whole hash anew.
//
// Each idempotency key is one Redis hash named Prefix + scope + ":{" +
// digest + "}", where scope (16 hex digits) and digest (64) are the two
// parts of the middleware's store key: no client text reaches Redis, the
// braces make the digest the Redis Cluster hash tag, so that all of a
// key's data stays in one slot whatever the prefix, and the keys of one
// scope can be counted with SCAN MATCH Prefix+scope+":*". The hash holds
// the request's fingerprint ("f"), the fencing token ("t") of the claim or
// of the request whose result it is, and the saved response ("r") once it
// is completed.
//
// go-redis sends a command again when its connection drops before the
// reply (up to Options.MaxRetries, 3 by default), so a script may run
// twice for one call. Each script answers its second run as its first: a
// claim finds its own token and is acquired, a complete finds its own
// result and succeeds, a release finds the key gone and succeeds. Setting
// MaxRetries to -1 is therefore not needed for correctness.
//
// The caller builds and owns the client: a *redis.Client, a
// *redis.ClusterClient or a *redis.Ring; the store never dials or closes
// it.
//
// # Timeouts
//
// A go-redis client ignores ctx deadlines unless its
// ContextTimeoutEnabled is set: on a Redis that accepts connections and
// never answers, each call waits for the client's ReadTimeout (3s by
// default). The middleware does not rely on it: it answers 503 at its
// StoreTimeout whatever the client does, and leaves the call to end on its
// own goroutine. Set ContextTimeoutEnabled, and a ReadTimeout and
// WriteTimeout near StoreTimeout, so that those goroutines end soon too:
//
//	rdb := redis.NewClient(&redis.Options{
//		Addr:                  "redis:6379",
//		ContextTimeoutEnabled: true,
//		ReadTimeout:           500 * time.Millisecond,
//		WriteTimeout:          500 * time.Millisecond,
//	})
//
// # What Redis can lose, and what it costs
//
// Exactly-once holds as long as Redis keeps what it was told. Two of its
// ordinary behaviours break that, and each costs the same: the handler
// runs a second time for a key whose claim or result was lost.
//
//   - Eviction. With a maxmemory-policy of allkeys-* (allkeys-lru,
//     allkeys-lfu, allkeys-random) a full Redis deletes any key, and with
//     volatile-* (volatile-lru, volatile-lfu, volatile-random,
//     volatile-ttl) any key with an expiry, which every key of this store
//     has: a claim or a saved result can vanish, and a retry then runs
//     the handler again. Give the store a Redis (or a database of one)
//     with maxmemory-policy noeviction: when full, it refuses writes, and
//     the middleware answers 503 without running the handler, which fails
//     closed. Size its memory for the results that one TTL brings.
//   - Failover. Redis replicates asynchronously: a claim or a result
//     acknowledged by a primary that fails before its replica got it is
//     gone once the replica is promoted (Redis Sentinel and Cluster both
//     allow it), and the retry runs the handler again, or runs beside a
//     request still in flight. WAIT narrows the window but does not close
//     it. Where a second run must never happen, record the key with the
//     handler's effect in the service's own database (a unique constraint
//     in the same transaction) and treat this store as the fast path.
package redisstore
