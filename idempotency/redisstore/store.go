package redisstore

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stormguard/retry/idempotency"
)

const defaultPrefix = "idempotency:"

// Options configures a [Store]. The zero value is ready to use.
type Options struct {
	// Prefix starts the name of every key the store writes
	// ["idempotency:"]. It must not hold '{' or '}', which would change the
	// Cluster hash tag; give each service its own prefix if they share a
	// Redis and their clients' keys could meet.
	Prefix string
}

// Store is an [idempotency.Store] on Redis. It is safe for concurrent use,
// as the client is.
type Store struct {
	rdb    redis.UniversalClient
	prefix string
}

// New returns a Store that keeps its keys in rdb. It does not contact
// Redis: the first request does. Invalid options give an error that names
// the field and matches [idempotency.ErrInvalidOptions].
func New(rdb redis.UniversalClient, opts Options) (*Store, error) {
	if v := reflect.ValueOf(rdb); rdb == nil || v.Kind() == reflect.Pointer && v.IsNil() { // a nil *redis.Client too
		return nil, fmt.Errorf("%w: redisstore: the client is nil", idempotency.ErrInvalidOptions)
	}
	if strings.ContainsAny(opts.Prefix, "{}") {
		return nil, fmt.Errorf("%w: redisstore: Prefix %q holds a brace, which would change the Cluster hash tag",
			idempotency.ErrInvalidOptions, opts.Prefix)
	}
	if opts.Prefix == "" {
		opts.Prefix = defaultPrefix
	}
	return &Store{rdb: rdb, prefix: opts.Prefix}, nil
}

// Key returns the name of the Redis key that holds key's state: Prefix,
// then the scope part of key and a colon, then the rest of key in braces,
// the Cluster hash tag. So the keys of one scope can be counted with
// SCAN MATCH Prefix+scope+":*", and spread over every slot of a Cluster.
func (s *Store) Key(key string) string {
	scope, rest, ok := strings.Cut(key, ":")
	if !ok {
		return s.prefix + "{" + key + "}"
	}
	return s.prefix + scope + ":{" + rest + "}"
}

// Claim implements [idempotency.Store].
func (s *Store) Claim(ctx context.Context, key, token string, fingerprint []byte, lease time.Duration) (idempotency.Claim, error) {
	v, err := claimScript.Run(ctx, s.rdb, []string{s.Key(key)}, token, fingerprint, ms(lease)).Slice()
	if err != nil {
		return idempotency.Claim{}, fmt.Errorf("redisstore: claim: %w", err)
	}
	state, _ := v[0].(int64)
	switch {
	case state == 0 && len(v) == 1:
		return idempotency.Claim{State: idempotency.Acquired}, nil
	case state == 1 && len(v) == 2:
		return idempotency.Claim{State: idempotency.InFlight, Fingerprint: bytesOf(v[1])}, nil
	case state == 2 && len(v) == 3:
		return idempotency.Claim{State: idempotency.Completed, Fingerprint: bytesOf(v[1]), Result: bytesOf(v[2])}, nil
	}
	return idempotency.Claim{}, fmt.Errorf("redisstore: claim: unexpected answer %v", v)
}

// Renew implements [idempotency.Store].
func (s *Store) Renew(ctx context.Context, key, token string, lease time.Duration) error {
	return s.run(ctx, "renew", renewScript, key, token, ms(lease))
}

// Complete implements [idempotency.Store].
func (s *Store) Complete(ctx context.Context, key, token string, fingerprint, result []byte, ttl time.Duration) error {
	return s.run(ctx, "complete", completeScript, key, token, fingerprint, result, ms(ttl))
}

// Release implements [idempotency.Store].
func (s *Store) Release(ctx context.Context, key, token string) error {
	return s.run(ctx, "release", releaseScript, key, token)
}

// run runs one of the scripts that act only while token holds key: 1 means
// done, 0 that the lease is lost.
func (s *Store) run(ctx context.Context, step string, script *redis.Script, key string, args ...any) error {
	n, err := script.Run(ctx, s.rdb, []string{s.Key(key)}, args...).Int()
	switch {
	case err != nil:
		return fmt.Errorf("redisstore: %s: %w", step, err)
	case n == 0:
		return idempotency.ErrLeaseLost
	}
	return nil
}

// ms is d in whole milliseconds, rounded up so that a lease is never
// shorter than asked, and at least 1: PEXPIRE 0 would delete the key.
func ms(d time.Duration) int64 {
	return max(int64((d+time.Millisecond-1)/time.Millisecond), 1)
}

// bytesOf converts a bulk string from a script's answer.
func bytesOf(v any) []byte {
	s, _ := v.(string)
	return []byte(s)
}
