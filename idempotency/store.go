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
// # Fencing
//
// Each claim has a fencing token, made by the middleware (128 random bits,
// so never reused) and given to Claim. Renew and Release act only while the
// claim that the token names still holds the key; Complete also when the
// key is absent (its lease ran out and nobody claimed it since), since the
// result is then the only one there is. Otherwise they return
// [ErrLeaseLost], so that a request whose lease ran out can neither extend,
// overwrite nor delete what the request that took the key over does.
//
// # Each call may arrive twice
//
// A store call whose reply is lost may be sent again as it was, token
// included: a client library re-sends a command when its connection drops
// before the reply (go-redis does, up to MaxRetries times). The first
// sending may have taken effect, so each method must give the same answer
// to its second sending as to its first:
//
//   - Claim that finds the key claimed with its own token answers Acquired.
//   - Complete that finds the key completed with its own token returns nil,
//     and keeps the result saved first.
//   - Release that finds the key absent returns nil.
//   - Renew that finds its own claim extends it again.
//
// A store keeps the token with the result for this. The shared test suite
// of this module checks each case.
//
// # Keys
//
// The middleware passes keys of the form scope + ":" + digest, where scope
// is 16 hex digits, a digest of the caller's scope (see Options.Scope), and
// digest 64 hex digits, a SHA-256 of the scope and the idempotency key: no
// client text reaches a store. A store may count or bound what each scope
// holds by the part before the colon, as [MemoryStore] does; a key without
// a colon belongs to the scope "". The middleware does not modify the byte
// slices it passes or gets back.
//
// # Errors
//
// Any other error than ErrLeaseLost means the store could not answer; the
// middleware then fails closed (see the package doc). Methods must be safe
// for concurrent use.
type Store interface {
	// Claim looks key up and, if it is absent or its claim's lease has run
	// out, claims it with token for lease in the same step, for a request
	// with the given fingerprint. A claim that token already holds is
	// Acquired again (the same call sent twice).
	Claim(ctx context.Context, key, token string, fingerprint []byte, lease time.Duration) (Claim, error)

	// Renew extends the claim that token names to lease from now. It
	// returns ErrLeaseLost if token no longer holds an unexpired claim. A
	// store whose handlers save their response in their own transaction
	// (Lease.Result) may return nil for a key completed with token: the
	// handler's commit saved it, and the handler may still be running.
	Renew(ctx context.Context, key, token string, lease time.Duration) error

	// Complete saves result for key, kept for ttl with fingerprint, in
	// place of the claim that token names. It saves it too if the key is
	// absent: the lease ran out but nobody claimed the key since. It
	// returns nil if the key is completed with token already (the same
	// call sent twice), and ErrLeaseLost if another claim holds the key or
	// another request's result is saved.
	Complete(ctx context.Context, key, token string, fingerprint, result []byte, ttl time.Duration) error

	// Release deletes the claim that token names, so that the next request
	// with the key claims it. It returns nil if the key is absent, and
	// ErrLeaseLost if another claim or a result holds the key.
	Release(ctx context.Context, key, token string) error
}

// State is what [Store.Claim] found.
type State uint8

const (
	// Acquired means the key was absent, or its lease had run out, or it
	// was claimed with the caller's token already, and now belongs to the
	// caller's token.
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

	// Fingerprint is the fingerprint given by the request that holds the
	// key (InFlight) or whose result is saved (Completed).
	Fingerprint []byte

	// Result is the saved result, when State is Completed.
	Result []byte
}
