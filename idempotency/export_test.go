package idempotency

import "net/http"

// ParseKey exposes parseKey to the external tests, for the fuzzer.
var ParseKey = parseKey

// Replay exposes replay to the external tests, for the fuzzer.
var Replay = replay

// EncodeRecord encodes a saved response as the middleware does.
func EncodeRecord(status int, header http.Header, body []byte) []byte {
	return (&record{status: status, header: header, body: body}).encode()
}

// StoreKey exposes storeKey to the external tests.
var StoreKey = storeKey
