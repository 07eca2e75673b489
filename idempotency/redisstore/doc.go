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
// it.
//
// Each idempotency key is one Redis hash named Prefix + "{" + digest + "}",
// where digest is the middleware's SHA-256 of scope and key: no client text
// reaches Redis, and the braces make the digest the Redis Cluster hash tag,
// so that all of a key's data stays in one slot whatever the prefix. The
// hash holds the request's fingerprint ("f"), the claim's fencing token
// ("t") while a request holds the key, and the saved response ("r") once
// it is completed.
//
// The caller builds and owns the client: a *redis.Client, a
// *redis.ClusterClient or a *redis.Ring; the store never dials or closes
// it. Set the client's timeouts to what a request may wait for the store;
// the middleware bounds each call by its StoreTimeout too.
package redisstore
