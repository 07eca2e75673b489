package retryhttp

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net/http"
	"strings"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/loopvals"
)

const defaultIdempotencyHeader = "Idempotency-Key"

// replayedHeader marks a response that an idempotency server replayed from
// what it saved for the key, as package idempotency and Stripe's API do.
const replayedHeader = "Idempotent-Replayed"

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

// autoKey returns the key that AutoIdempotencyKey gives req.
//
// The key belongs to the logical call, not to one request: inside a live
// outer retry loop (a retry.Do or retry.Hedge whose op sends req, or a
// Transport whose Base this one is), each attempt of that loop makes its
// request anew, and a new key each time would make the server run the
// write once per attempt. So the loop keeps a key per write, a digest of
// method, URL and body, and every attempt that sends the same write again
// sends the same key, while two different writes in one op get two keys.
// Outside such a loop the Transport is the loop, and the key is the
// request's.
func autoKey(req *http.Request) string {
	vals := loopvals.Of(req.Context())
	if vals == nil {
		return newKey()
	}
	return vals.LoadOrStore(writeOf(req), func() any { return newKey() }).(string)
}

// write identifies a write within one retry loop: a SHA-256 of its method,
// URL and body. A type of its own, so that no other package's loop value
// meets it.
type write [sha256.Size]byte

// writeOf digests req. The body is read through GetBody, a fresh copy, so
// that req's own body is left for the attempt. A body without GetBody
// cannot be read before it is sent: such a write is known by its method,
// URL and length alone, so that an outer attempt that sends it again still
// sends the same key; a different body under the same key then gets the
// server's 422 rather than a second run. A GetBody that fails is treated
// the same way: the attempt will meet the failure itself.
func writeOf(req *http.Request) write {
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) { // length-prefixed, so that fields cannot run into each other
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	field([]byte(method))
	field([]byte(req.URL.String()))
	if sum, ok := bodySum(req); ok {
		field(sum[:])
	} else {
		binary.BigEndian.PutUint64(n[:], uint64(req.ContentLength))
		field(n[:])
	}
	var w write
	h.Sum(w[:0])
	return w
}

// bodySum returns the SHA-256 of req's body, read from GetBody, or false if
// it cannot be read without taking req's own body.
func bodySum(req *http.Request) ([sha256.Size]byte, bool) {
	if req.Body == nil || req.Body == http.NoBody {
		return sha256.Sum256(nil), true
	}
	if req.GetBody == nil {
		return [sha256.Size]byte{}, false
	}
	body, err := req.GetBody()
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	defer body.Close()
	h := sha256.New()
	if _, err := io.Copy(h, body); err != nil {
		return [sha256.Size]byte{}, false
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum, true
}

// replayed reports whether resp was replayed by an idempotency server: its
// status was saved for the key and can never change, whatever it is.
func replayed(h http.Header) bool {
	v := h[replayedHeader]
	return len(v) > 0 && strings.EqualFold(strings.TrimSpace(v[0]), "true")
}

// finalIfReplayed keeps a replayed answer from being retried: retrying
// would get the same replay again until the attempts run out (a handler's
// own 409 with Retry-After, say, saved and replayed). It reports whether it
// refused a retry.
func finalIfReplayed(d retry.Decision, err error) (retry.Decision, bool) {
	se, ok := err.(*StatusError)
	if !d.Retry || !ok || !replayed(se.Header) {
		return d, false
	}
	return retry.Decision{Reason: d.Reason + "; replayed (" + replayedHeader + "): final"}, true
}
