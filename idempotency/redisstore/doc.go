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
// it. Set the client's timeouts to what a request may wait for the store;
// the middleware bounds each call by its StoreTimeout too.
package redisstore
