package idempotency

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"net/http"
)

// credentialHeaders are the request headers that carry a caller's
// credentials, for the default scope: RFC 9110's Authorization and
// Proxy-Authorization, RFC 6265's Cookie, and X-API-Key, the most common
// of the API-key headers.
var credentialHeaders = [...]string{"Authorization", "Proxy-Authorization", "Cookie", "X-Api-Key"}

// credentialScope is the default Options.Scope: a SHA-256 digest of every
// credential the request carries (credentialHeaders, and the TLS client
// certificate), or "" when it has none. It keeps one caller's results from
// another without knowing how the service authenticates; its limits are in
// the doc of Options.Scope. Each credential goes in with its name and
// count, so that no two different sets make the same input.
func credentialScope(r *http.Request) string {
	var stack [512]byte // most credentials fit: no allocation
	b := stack[:0]
	for _, name := range credentialHeaders {
		vals := r.Header[name] // the names are canonical already
		if len(vals) == 0 {
			continue
		}
		b = appendField(b, name)
		b = binary.AppendUvarint(b, uint64(len(vals)))
		for _, v := range vals {
			b = appendField(b, v)
		}
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		// The leaf: the certificate that the client proved it holds the
		// key of. Its digest, so that the input stays small.
		sum := sha256.Sum256(r.TLS.PeerCertificates[0].Raw)
		b = appendField(b, "tls-client-certificate")
		b = append(b, sum[:]...)
	}
	if len(b) == 0 {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
