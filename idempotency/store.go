package idempotency

import (
	"context"
	"time"
)

// Store keeps the state of idempotency keys, for one process or a fleet.
//
// A key is in one of three states: absent; claimed, by the one request that
// runs the handler for it, until its lease runs out unless renewed; or
// completed, with the saved result, until its TTL runs out. Each method is
// one atomic step, and a store that can should make it one round trip: a
// fresh key costs a Claim and a Complete, a replay one Claim.
//
// A claim carries a fencing token, made by the store and never reused for
// the same key. Renew, Complete and Release act only while the claim that
// the token names still holds the key, and return [ErrLeaseLost] otherwise,
// so that a request whose lease ran out can neither extend, overwrite nor
// delete what the request that took the key over does.
//
// The middleware passes keys that are hex digests of the caller's scope and
// idempotency key, 64 characters long: no client text reaches a store. It
// does not modify the byte slices it passes or gets back. Any other error
// than ErrLeaseLost means the store could not answer; the middleware then
// fails closed (see the package doc). Methods must be safe for concurrent
// use.
type Store interface {
	// Claim looks key up and, if it is absent or its claim's lease has run
	// out, claims it for lease in the same step, for a request with the
	// given fingerprint.
	Claim(ctx context.Context, key string, fingerprint []byte, lease time.Duration) (Claim, error)

	// Renew extends the claim that token names to lease from now.
	Renew(ctx context.Context, key, token string, lease time.Duration) error

	// Complete replaces the claim that token names with result, kept for
	// ttl. The fingerprint of the claim stays with the result.
	Complete(ctx context.Context, key, token string, result []byte, ttl time.Duration) error

	// Release deletes the claim that token names, so that the next request
	// with the key claims it.
	Release(ctx context.Context, key, token string) error
}

// State is what [Store.Claim] found.
type State uint8

const (
	// Acquired means the key was absent, or its lease had run out, and now
	// belongs to the caller: Claim.Token names the claim.
	Acquired State = iota + 1

	// InFlight means another request holds the key and its lease runs.
	InFlight

	// Completed means a result is saved for the key.
	Completed
)

// Claim is the answer of [Store.Claim].
type Claim struct {
	// State says what Claim found.
	State State

	// Token is the fencing token of the new claim, when State is Acquired.
	Token string

	// Fingerprint is the fingerprint given by the request that holds the
	// key (InFlight) or whose result is saved (Completed).
	Fingerprint []byte

	// Result is the saved result, when State is Completed.
	Result []byte
}
