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
	body    []byte
	omitted bool // the body was too large to save: a replay sends none
}

// recordVersion is the first byte of an encoded record, so that a later
// format can tell old records from new ones in a shared store.
const recordVersion = 1

const flagOmitted = 1

var errBadRecord = errors.New("idempotency: saved result is unreadable")

// encode returns the record as bytes for a Store: version, flags, status,
// then each header name with its values, then the body, every field but the
// body preceded by its length.
func (r *record) encode() []byte {
	n := 4 + len(r.body)
	for k, vs := range r.header {
		n += len(k) + 2*binary.MaxVarintLen32
		for _, v := range vs {
			n += len(v) + binary.MaxVarintLen32
		}
	}
	b := make([]byte, 0, n)
	flags := byte(0)
	if r.omitted {
		flags |= flagOmitted
	}
	b = append(b, recordVersion, flags)
	b = binary.BigEndian.AppendUint16(b, uint16(r.status))
	b = binary.AppendUvarint(b, uint64(len(r.header)))
	for k, vs := range r.header {
		b = appendString(b, k)
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = appendString(b, v)
		}
	}
	return append(b, r.body...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeRecord reverses encode. The body it returns shares b's memory.
func decodeRecord(b []byte) (record, error) {
	if len(b) < 4 || b[0] != recordVersion {
		return record{}, errBadRecord
	}
	r := record{omitted: b[1]&flagOmitted != 0, status: int(binary.BigEndian.Uint16(b[2:4]))}
	if r.status < 200 || r.status > 999 { // net/http panics on a code out of range
		return record{}, errBadRecord
	}
	d := decoder{b: b[4:]}
	nh := d.uvarint()
	if nh > uint64(len(d.b)) { // each header takes at least a byte
		return record{}, errBadRecord
	}
	r.header = make(http.Header, nh)
	for range nh {
		k := d.string()
		nv := d.uvarint()
		if d.bad || nv > uint64(len(d.b)) {
			return record{}, errBadRecord
		}
		vs := make([]string, nv)
		for i := range vs {
			vs[i] = d.string()
		}
		r.header[k] = vs
	}
	if d.bad {
		return record{}, errBadRecord
	}
	r.body = d.b
	return r, nil
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

func (d *decoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad = true
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
