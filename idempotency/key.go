package idempotency

import (
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
