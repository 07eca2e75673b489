package redisstore

import "github.com/redis/go-redis/v9"

// The scripts keep one key's state in one hash: "t" is the token of the
// claim, or of the request whose result it is; "f" the fingerprint; "r"
// the result, once the key is completed. Every script touches KEYS[1]
// alone, so it runs in that key's slot on a Cluster.
//
// go-redis sends a script again when the reply to it is lost (the
// connection drops after Redis ran it), so each script answers its second
// sending as its first: the token tells the caller's own claim or result
// from another's (see idempotency.Store).

// claimScript: ARGV = token, fingerprint, lease in ms. It answers {0} if
// the caller's token now holds the key (or held it already: the same call
// again), {1, f} if another request does, and {2, f, r} if a result is
// saved. An expired claim is gone from Redis already, so it is claimed
// like an absent key.
var claimScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 't', 'f', 'r')
if v[2] then
  if v[3] then return {2, v[2], v[3]} end
  if v[1] == ARGV[1] then return {0} end
  return {1, v[2]}
end
redis.call('HSET', KEYS[1], 't', ARGV[1], 'f', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {0}
`)

// renewScript: ARGV = token, lease in ms. 1 if renewed, 0 if the token no
// longer holds a claim on the key.
var renewScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 't', 'r')
if v[1] ~= ARGV[1] or v[2] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// completeScript: ARGV = token, fingerprint, result, TTL in ms. 1 if saved
// or saved already by this token, 0 if another token holds the key. An
// absent key (the lease ran out, nobody claimed it since) is saved too.
var completeScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 't', 'r')
if v[1] then
  if v[1] ~= ARGV[1] then return 0 end
  if v[2] then return 1 end
elseif v[2] then
  return 0 -- a result saved without a token, by an older version
end
redis.call('HSET', KEYS[1], 't', ARGV[1], 'f', ARGV[2], 'r', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return 1
`)

// releaseScript: ARGV = token. 1 if released or absent already, 0 if
// another token or a result holds the key.
var releaseScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 't', 'r')
if not v[1] and not v[2] then return 1 end
if v[1] ~= ARGV[1] or v[2] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`)
