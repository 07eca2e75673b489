package idempotency

import (
	"encoding/binary"
	"net/http"
)

// ParseKey exposes parseKey to the external tests, for the fuzzer.
var ParseKey = parseKey

// Replay exposes replay to the external tests, for the fuzzer.
func Replay(w http.ResponseWriter, result []byte) { replay(w, result, nil) }

// EncodeRecord encodes a saved response as the middleware does.
func EncodeRecord(status int, header http.Header, body []byte) []byte {
	return (&record{status: status, header: header, body: body}).encode()
}

// StoreKey exposes storeKey to the external tests.
var StoreKey = storeKey

// NotSaved exposes notSaved to the external tests: the response headers
// that are neither saved nor replayed.
var NotSaved = notSaved

// EncodeRecordRaw encodes a version 1 record as a release that saved every
// header would have: with no header left out.
func EncodeRecordRaw(status int, header http.Header, body []byte) []byte {
	b := []byte{recordVersion, 0, byte(status >> 8), byte(status)}
	b = binary.AppendUvarint(b, uint64(len(header)))
	for k, vs := range header {
		b = appendString(b, k)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = appendString(b, v)
		}
	}
	return append(b, body...)
}
