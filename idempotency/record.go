package idempotency

import (
	"encoding/binary"
	"errors"
	"net/http"
)

// record is a saved response: what a replay sends.
type record struct {
	status  int
	header  http.Header // as the handler set it when it wrote the status
	trailer http.Header // the trailers the handler set; nil for none
	body    []byte
	omitted bool // the body was too large to save: a replay sends none
}

// recordVersion is the first byte of an encoded record, so that a later
// format can tell old records from new ones in a shared store. Version 2
// adds the trailers, after the header; a record without trailers is still
// written as version 1, so that processes of an older release, sharing the
// store during a rolling upgrade, can replay it.
const (
	recordVersion         = 1
	recordVersionTrailers = 2
)

// notSaved reports whether a response header belongs to the session of the
// caller who got it, and so is neither saved nor replayed: a replay may go
// to a client that holds the key but not that session (the same key and
// body, another cookie). Set-Cookie (RFC 6265; Set-Cookie2 is its obsolete
// form) and Authentication-Info and Proxy-Authentication-Info (RFC 9110
// §11.6.3, §11.7.3). Stripe's replays, likewise, carry the status and the
// body, not the session.
func notSaved(name string) bool {
	switch len(name) { // most names are none of them: no need to canonicalize
	case len("Set-Cookie"), len("Set-Cookie2"), len("Authentication-Info"), len("Proxy-Authentication-Info"):
	default:
		return false
	}
	switch http.CanonicalHeaderKey(name) {
	case "Set-Cookie", "Set-Cookie2", "Authentication-Info", "Proxy-Authentication-Info":
		return true
	}
	return false
}

const flagOmitted = 1

var errBadRecord = errors.New("idempotency: saved result is unreadable")

// encode returns the record as bytes for a Store: version, flags, status,
// then each header name with its values, then (version 2) each trailer
// the same way, then the body, every field but the body preceded by its
// length. Headers that [notSaved] names are left out.
func (r *record) encode() []byte {
	n := 4 + len(r.body) + headerSize(r.header) + headerSize(r.trailer)
	b := make([]byte, 0, n)
	flags := byte(0)
	if r.omitted {
		flags |= flagOmitted
	}
	version := byte(recordVersion)
	if len(r.trailer) > 0 {
		version = recordVersionTrailers
	}
	b = append(b, version, flags)
	b = binary.BigEndian.AppendUint16(b, uint16(r.status))
	b = appendHeader(b, r.header)
	if version == recordVersionTrailers {
		b = appendHeader(b, r.trailer)
	}
	return append(b, r.body...)
}

func headerSize(h http.Header) int {
	n := binary.MaxVarintLen32
	for k, vs := range h {
		n += len(k) + 2*binary.MaxVarintLen32
		for _, v := range vs {
			n += len(v) + binary.MaxVarintLen32
		}
	}
	return n
}

func appendHeader(b []byte, h http.Header) []byte {
	saved := 0
	for k := range h {
		if !notSaved(k) {
			saved++
		}
	}
	b = binary.AppendUvarint(b, uint64(saved))
	for k, vs := range h {
		if notSaved(k) {
			continue
		}
		b = appendString(b, k)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = appendString(b, v)
		}
	}
	return b
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeRecord reverses encode. The body it returns shares b's memory.
func decodeRecord(b []byte) (record, error) {
	if len(b) < 4 || (b[0] != recordVersion && b[0] != recordVersionTrailers) {
		return record{}, errBadRecord
	}
	r := record{omitted: b[1]&flagOmitted != 0, status: int(binary.BigEndian.Uint16(b[2:4]))}
	if r.status < 200 || r.status > 999 { // net/http panics on a code out of range
		return record{}, errBadRecord
	}
	d := decoder{b: b[4:]}
	r.header = d.header()
	if b[0] == recordVersionTrailers {
		r.trailer = d.header()
	}
	if d.bad {
		return record{}, errBadRecord
	}
	r.body = d.b
	return r, nil
}

// header reads a header map written by appendHeader. Names that
// [notSaved] names are dropped, should a record of an older release hold
// them. It takes three allocations whatever the header holds: one string
// for all its names and values, one slice for all its values, the map.
func (d *decoder) header() http.Header {
	n, nvals, size := scanHeader(d.b)
	if size < 0 {
		d.bad = true
		return nil
	}
	text := string(d.b[:size])
	p := decoder{b: d.b[:size]}
	str := func() string { // the next string, as a part of text
		k := p.uvarint()
		at := size - len(p.b)
		p.b = p.b[k:]
		return text[at : at+int(k)]
	}
	p.uvarint() // n
	vals := make([]string, nvals)
	h := make(http.Header, n)
	for range n {
		k := str()
		nv := int(p.uvarint())
		vs := vals[:nv:nv] // capped: an append to one name's values leaves the next's alone
		vals = vals[nv:]
		for i := range vs {
			vs[i] = str()
		}
		if !notSaved(k) {
			h[k] = vs
		}
	}
	d.b = d.b[size:]
	return h
}

// scanHeader checks the header map that b starts with, as appendHeader
// wrote it, and returns how many names and values it has and its size in
// bytes, or a size of -1 if it is malformed. It allocates nothing.
func scanHeader(b []byte) (names uint64, vals, size int) {
	d := decoder{b: b}
	skip := func() {
		if k := d.uvarint(); k > uint64(len(d.b)) {
			d.bad = true
		} else {
			d.b = d.b[k:]
		}
	}
	names = d.uvarint()
	if d.bad || names > uint64(len(d.b)) { // each header takes at least a byte
		return 0, 0, -1
	}
	for range names {
		skip()
		nv := d.uvarint()
		if d.bad || nv > uint64(len(d.b)) {
			return 0, 0, -1
		}
		for range nv {
			skip()
		}
		vals += int(nv)
	}
	if d.bad {
		return 0, 0, -1
	}
	return names, vals, len(b) - len(d.b)
}

// decoder reads fields off b; once a read fails, bad is set and every
// later read returns zero values.
type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.b = d.b[n:]
	return v
}
