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
	// Release when the claim that the token names no longer holds the key:
	// its lease ran out and another request claimed the key, or the claim
	// was completed or released already. It is the fencing that keeps a
	// request that lost its lease from overwriting the result of the one
	// that took over.
	ErrLeaseLost = errors.New("idempotency: lease lost")

	// ErrStoreFull is what a [MemoryStore] returns when a new key or a
	// result would pass its bounds. It never drops a saved result before
	// its TTL to make room: forgetting a result would let a retry run the
	// handler again.
	ErrStoreFull = errors.New("idempotency: store full")
)

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...)
}
