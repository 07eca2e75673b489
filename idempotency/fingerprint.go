package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"net/http"
	"strings"
)

// fingerprint is a SHA-256 digest of what makes two requests the same
// request: method, path, query, content type and body. A key sent again
// with another fingerprint gets 422. Each field goes in with its length
// first, so that no two different requests make the same input; the body
// goes in as its own digest, so that it is hashed where it lies, without a
// copy. Other headers are left out: retries may differ in them (a
// refreshed Authorization, a new traceparent) and still be the same
// request.
func fingerprint(r *http.Request, body []byte) []byte {
	var stack [256]byte // most requests' fields fit: no allocation
	b := stack[:0]
	b = appendField(b, r.Method)
	b = appendField(b, r.URL.EscapedPath())
	b = appendField(b, r.URL.RawQuery)
	b = appendField(b, strings.TrimSpace(firstValue(r.Header["Content-Type"]))) // Header.Get, but for the canonicalization
	sum := sha256.Sum256(body)
	b = append(b, sum[:]...)
	sum = sha256.Sum256(b)
	return append(make([]byte, 0, sha256.Size), sum[:]...)
}

func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// firstValue returns vs[0], or "" if vs is empty.
func firstValue(vs []string) string {
	if len(vs) == 0 {
		return ""
	}
	return vs[0]
}
