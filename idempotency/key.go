package idempotency

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
)

// MaxKeyLength is the longest idempotency key accepted, in bytes, after the
// quotes and escapes of the quoted form are taken off. Stripe's limit is
// the same.
const MaxKeyLength = 255

// Why a key is refused; the middleware puts the text in its 400 answer.
var (
	errKeyEmpty     = errors.New("the key is empty")
	errKeyTooLong   = errors.New("the key is longer than 255 bytes")
	errKeyMalformed = errors.New("the key is neither a token nor a quoted string (RFC 8941 sf-string)")
)

// parseKey returns the idempotency key that a header value carries. The
// draft makes the value an RFC 8941 sf-string ("8e03…"); many clients,
// Stripe's among them, send it bare. Both forms are accepted and name the
// same key: `"abc"` and `abc` are one key. A bare key must be an RFC 9110
// token, so that it cannot be confused with a quoted one; a quoted key may
// hold any printable ASCII, with \" and \\ escaped. Parameters after a
// quoted string are refused rather than silently dropped. Surrounding
// spaces and tabs are ignored, as HTTP does.
func parseKey(v string) (string, error) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return "", errKeyEmpty
	}
	var key string
	if v[0] == '"' {
		k, ok := parseString(v)
		if !ok {
			return "", errKeyMalformed
		}
		key = k
	} else {
		for i := 0; i < len(v); i++ {
			if !isTchar(v[i]) {
				return "", errKeyMalformed
			}
		}
		key = v
	}
	switch {
	case key == "":
		return "", errKeyEmpty
	case len(key) > MaxKeyLength:
		return "", errKeyTooLong
	}
	return key, nil
}

// parseString parses v, which starts with a quote, as one RFC 8941
// sf-string (§4.2.5) and nothing after it.
func parseString(v string) (string, bool) {
	var b strings.Builder
	for i := 1; i < len(v); i++ {
		c := v[i]
		switch {
		case c == '\\':
			i++
			if i == len(v) || (v[i] != '"' && v[i] != '\\') {
				return "", false
			}
			b.WriteByte(v[i])
		case c == '"':
			return b.String(), i == len(v)-1
		case c < 0x20 || c > 0x7e:
			return "", false
		default:
			b.WriteByte(c)
		}
	}
	return "", false // no closing quote
}

// isTchar reports whether c may appear in an RFC 9110 token (§5.6.2).
func isTchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// storeKey is the name under which a store keeps a key: the scope's part,
// 16 hex digits of a SHA-256 of the scope, a colon, then a hex SHA-256 of
// the scope and the idempotency key. No client text reaches the store (no
// odd characters, hash tags or lengths); a scope and a key cannot run into
// each other, since the scope's length goes first; and a store can count
// what each scope holds (see [MemoryOptions].MaxScopeEntries). 64 bits of
// scope are plenty for counting: two scopes that share them share a quota,
// never a result, since the digest after the colon covers the whole scope.
func storeKey(scope, key string) string {
	var stack [384]byte // a 64-byte scope and a key of MaxKeyLength fit
	b := appendField(stack[:0], scope)
	b = append(b, key...)
	sum := sha256.Sum256(b)
	var out [scopeHexLen + 1 + 2*sha256.Size]byte
	if scope == "" {
		copy(out[:], noScope[:])
	} else {
		scopePart((*[scopeHexLen]byte)(out[:]), scope)
	}
	out[scopeHexLen] = ':'
	hex.Encode(out[scopeHexLen+1:], sum[:])
	return string(out[:])
}

// scopeHexLen is the length of the scope part of a store key.
const scopeHexLen = 16

// scopePart writes the scope part of a store key for scope into dst.
func scopePart(dst *[scopeHexLen]byte, scope string) {
	sc := sha256.Sum256([]byte(scope))
	hex.Encode(dst[:], sc[:scopeHexLen/2])
}

// noScope is the scope part for the scope "", which requests without
// credentials share: worked out once rather than for each request.
var noScope = func() (p [scopeHexLen]byte) {
	scopePart(&p, "")
	return p
}()

// scopeOf returns the scope part of a store key: the text before its first
// colon, or "" if it has none.
func scopeOf(key string) string {
	if i := strings.IndexByte(key, ':'); i >= 0 {
		return key[:i]
	}
	return ""
}

// newToken returns a fencing token: 128 random bits, so that no two claims
// of a key, on any process, ever share one. The middleware makes it, not
// the store, so that a Claim sent twice carries the same token and can
// find its own claim (see [Store]).
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return hex.EncodeToString(b[:])
}
