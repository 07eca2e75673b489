package idempotency

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
)

// authorizationScope is the default Options.Scope: a SHA-256 digest of the
// request's Authorization header, or "" when it has none. It keeps one
// caller's results from another without knowing how the service
// authenticates; its limits are in the doc of Options.Scope.
func authorizationScope(r *http.Request) string {
	vals := r.Header.Values("Authorization")
	if len(vals) == 0 {
		return ""
	}
	var stack [256]byte // most credentials fit: no allocation
	b := stack[:0]
	for _, v := range vals {
		b = appendField(b, v)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// storeKey is the name under which a store keeps a key: a hex SHA-256 of
// the scope and the idempotency key, so that no client text reaches the
// store (no odd characters, hash tags or lengths), and so that a scope and
// a key cannot run into each other: the scope's length goes first.
func storeKey(scope, key string) string {
	var stack [384]byte // a 64-byte scope and a key of MaxKeyLength fit
	b := appendField(stack[:0], scope)
	b = append(b, key...)
	sum := sha256.Sum256(b)
	var out [2 * sha256.Size]byte
	hex.Encode(out[:], sum[:])
	return string(out[:])
}
