package idempotency

import "net/http"

// ParseKey exposes parseKey to the external tests, for the fuzzer.
var ParseKey = parseKey

// Replay exposes replay to the external tests, for the fuzzer.
func Replay(w http.ResponseWriter, result []byte) { replay(w, result, nil) }

// EncodeRecord encodes a saved response as the middleware does.
func EncodeRecord(status int, header http.Header, body []byte) []byte {
	return (&record{status: status, header: header, body: body}).encode()
}

// NotSaved exposes notSaved to the external tests: the response headers
// that are neither saved nor replayed.
var NotSaved = notSaved
