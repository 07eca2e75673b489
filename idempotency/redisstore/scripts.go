package redisstore

import "github.com/redis/go-redis/v9"

// The scripts keep one key's state in one hash. A claim is "t" (its
// token) and "f" (the fingerprint); a completed key has "f" and "r" (the
// result) and no "t". Every script touches KEYS[1] alone, so it runs in
// that key's slot on a Cluster.

// claimScript: ARGV = token, fingerprint, lease in ms. It answers {0} if
// the caller now holds the key, {1, f} if another request does, and
// {2, f, r} if a result is saved. An expired claim is gone from Redis
// already, so it is claimed like an absent key.
var claimScript = redis.NewScript(`
local v = redis.call('HMGET', KEYS[1], 'f', 'r')
if v[1] then
  if v[2] then return {2, v[1], v[2]} end
  return {1, v[1]}
end
redis.call('HSET', KEYS[1], 't', ARGV[1], 'f', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {0}
`)

// renewScript: ARGV = token, lease in ms. 1 if renewed, 0 if the token no
// longer holds the key.
var renewScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 't') ~= ARGV[1] then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
`)

// completeScript: ARGV = token, result, TTL in ms. 1 if saved, 0 if the
// token no longer holds the key.
var completeScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 't') ~= ARGV[1] then return 0 end
redis.call('HDEL', KEYS[1], 't')
redis.call('HSET', KEYS[1], 'r', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`)

// releaseScript: ARGV = token. 1 if released, 0 if the token no longer
// holds the key.
var releaseScript = redis.NewScript(`
if redis.call('HGET', KEYS[1], 't') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
`)
