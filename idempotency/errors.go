package idempotency

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidOptions is matched, with errors.Is, by every error that
	// [New] and [NewMemoryStore] return for options they cannot use. The
	// message names the field.
	ErrInvalidOptions = errors.New("idempotency: invalid options")

	// ErrLeaseLost is what a [Store] returns from Renew, Complete and
	// Release when the key is no longer the token's to change: another
	// request claimed it after the lease ran out, or another request's
	// result is saved, or (for Renew) the lease ran out. It is the fencing
	// that keeps a request that lost its lease from overwriting the result
	// of the one that took over.
	ErrLeaseLost = errors.New("idempotency: lease lost")

	// ErrStoreFull is matched, with errors.Is, by the error a [MemoryStore]'s
	// Claim returns when a new key would pass its bounds, in all or for the
	// key's scope. It never drops a saved result before its TTL to make
	// room, nor refuses the result of a claim it admitted: either would let
	// a retry run the handler again.
	ErrStoreFull = errors.New("idempotency: store full")
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...)
}
