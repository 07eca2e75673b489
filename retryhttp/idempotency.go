package retryhttp

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strings"
)

const defaultIdempotencyHeader = "Idempotency-Key"

// idempotent reports whether RFC 9110 §9.2.2 makes method idempotent:
// sending it twice has the effect of sending it once. An empty method is
// GET, as in net/http.
func idempotent(method string) bool {
	switch method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace,
		http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// rewindable reports whether req's body can be sent again: it has none, or
// GetBody makes a fresh copy. The Transport never buffers a body itself.
func rewindable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// hasKey reports whether h carries a non-empty idempotency key under name,
// canonical, or under any other spelling of it: net/http sends a header
// whatever the letter case of its map key, and the server sees it.
func hasKey(h http.Header, name string) bool {
	if v := h[name]; len(v) > 0 {
		return strings.TrimSpace(v[0]) != ""
	}
	for k, v := range h {
		if len(v) > 0 && strings.EqualFold(k, name) && strings.TrimSpace(v[0]) != "" {
			return true
		}
	}
	return false
}

// setKey sets the idempotency key in h, a copy of the caller's header,
// under name, removing any other spelling of it (an empty one, since a
// request with a non-empty key never gets one made).
func setKey(h http.Header, name, key string) {
	for k := range h {
		if strings.EqualFold(k, name) {
			delete(h, k)
		}
	}
	h[name] = []string{key}
}

// newKey returns a random UUIDv4 (RFC 9562) from crypto/rand.
func newKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])  // never fails: crypto/rand crashes the program instead
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // variant 10
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}
