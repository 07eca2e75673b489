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
