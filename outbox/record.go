package outbox

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"time"

	"github.com/stormguard/retry"
)

// The journal file is a header, then a sequence of records. The header is
// the 8 bytes of fileHeader: "\x89OBXJNL" (a first byte that no text
// starts with) and the format's version, 1. Each record is framed as
//
//	length  uint32, little-endian: the payload's length in bytes
//	crc     uint32, little-endian: CRC-32C (Castagnoli) of the payload
//	payload length bytes
//
// and each payload is a type byte, the number of the write (the group
// commit) that carried it as a uvarint, then fields in a fixed order:
// strings and byte slices as a uvarint length then the bytes, integers as
// varints, times as a uvarint then, unless it is 0 (the zero time), a
// varint: the uvarint is the time's nanoseconds within its second plus
// one, the varint its Unix seconds, so that every time.Time the journal
// is given comes back, the year 2300 as well as 1970.
//
//	recAdd (type 3):    key, kind, payload, enqueued, then the state fields
//	recUpdate (type 4): key, then the state fields
//	state:     notAfter, state, attempts, next, lastWait, finished, reason, lastError,
//	           then the Trace: its stop reason, its count of attempts, how many
//	           it keeps, and for each kept one: number, wait, start,
//	           duration, reason
//
// A record that ends after lastError (one written before the Trace was
// kept) has an empty Trace.
//
// A file without the header is a journal of the format before: records of
// types 1 and 2 (or 3 and 4) with no write number, and in types 1 and 2
// each time as one varint of Unix nanoseconds (0 for the zero time), which
// wraps past 2262. OpenFile reads it, then rewrites it in this format (a
// compaction): the upgrade is one-way.
//
// The write numbers grow along the file, and tell a torn tail from a
// corrupt file (see [FileJournal]): a crash tears only the last write, so
// the records found beyond a bad one are of that write, or of the one
// before when the tear cut a write's first record; a valid record of a
// later write means that a record the journal had synced went bad.
//
// A record is a whole Entry's state, so replaying records in order and
// keeping the last one per key rebuilds every op: a record written twice
// (as compaction may) does no harm.
const (
	recAdd    byte = 1 // an add, and the type of an add of the old format
	recUpdate byte = 2 // an update, and the type of an update of the old format

	// wholeTimes is added to the type of a record whose times are whole
	// (seconds and nanoseconds): the type of each record written now.
	wholeTimes byte = 2

	frameHeader = 8
	fileHeader  = "\x89OBXJNL\x01"
	headerSize  = int64(len(fileHeader))
	// maxRecord bounds one record's payload: MaxPayload plus its fields.
	// A length above it is a torn or corrupt header, not a record.
	maxRecord = MaxPayload + 4<<10
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var errCorrupt = errors.New("outbox: corrupt journal record")

// appendRecord appends the framed record of e, carried by write number
// write, to b.
func appendRecord(b []byte, typ byte, e *Entry, write uint64) []byte {
	start := len(b)
	b = append(b, make([]byte, frameHeader)...)
	b = append(b, typ+wholeTimes)
	b = binary.AppendUvarint(b, write)
	b = appendString(b, e.Op.Key)
	if typ == recAdd {
		b = appendString(b, e.Op.Kind)
		b = appendString(b, e.Op.Payload) // no string(): that would copy it
		b = appendTime(b, e.Enqueued)
	}
	b = appendTime(b, e.Op.NotAfter)
	b = binary.AppendUvarint(b, uint64(e.State))
	b = binary.AppendVarint(b, int64(e.Attempts))
	b = appendTime(b, e.Next)
	b = binary.AppendVarint(b, int64(e.LastWait))
	b = appendTime(b, e.Finished)
	b = appendString(b, e.Reason)
	b = appendString(b, e.LastError)
	b = appendTrace(b, &e.Trace)
	p := b[start+frameHeader:]
	binary.LittleEndian.PutUint32(b[start:], uint32(len(p)))
	binary.LittleEndian.PutUint32(b[start+4:], crc32.Checksum(p, castagnoli))
	return b
}

func appendTrace(b []byte, t *retry.Trace) []byte {
	b = binary.AppendUvarint(b, uint64(t.Stop()))
	b = binary.AppendUvarint(b, uint64(t.Attempts()))
	kept := 0
	for range t.All() {
		kept++
	}
	b = binary.AppendUvarint(b, uint64(kept))
	for a := range t.All() {
		b = binary.AppendVarint(b, int64(a.Number))
		b = binary.AppendVarint(b, int64(a.Wait))
		b = appendTime(b, a.Start)
		b = binary.AppendVarint(b, int64(a.Duration))
		b = appendString(b, a.Reason)
	}
	return b
}

func appendString[T string | []byte](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendTime(b []byte, t time.Time) []byte {
	if t.IsZero() {
		return binary.AppendUvarint(b, 0)
	}
	b = binary.AppendUvarint(b, uint64(t.Nanosecond())+1)
	return binary.AppendVarint(b, t.Unix())
}

// decoder reads the fields of one record's payload; the first error sticks.
type decoder struct {
	p     []byte
	err   error
	whole bool // times are whole (types 3 and 4), not Unix nanoseconds
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.p)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.p)
	if n <= 0 {
		d.err = errCorrupt
		return 0
	}
	d.p = d.p[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.p)) {
		d.err = errCorrupt
		return nil
	}
	v := d.p[:n:n]
	d.p = d.p[n:]
	return v
}

func (d *decoder) time() time.Time {
	if !d.whole {
		if ns := d.varint(); ns != 0 {
			return time.Unix(0, ns)
		}
		return time.Time{}
	}
	ns := d.uvarint()
	switch {
	case d.err != nil || ns == 0:
		return time.Time{}
	case ns > 1e9:
		d.err = errCorrupt
		return time.Time{}
	}
	return time.Unix(d.varint(), int64(ns-1))
}

// maxKept is the most attempts a retry.Trace keeps.
const maxKept = 64

func (d *decoder) trace() retry.Trace {
	stop := retry.StopReason(d.uvarint())
	n := d.uvarint()
	kept := d.uvarint()
	if d.err != nil || kept > maxKept || kept > n || n > 1<<40 {
		d.err = errCorrupt
		return retry.Trace{}
	}
	as := make([]retry.Attempt, kept)
	for i := range as {
		as[i] = retry.Attempt{Number: int(d.varint()), Wait: time.Duration(d.varint()), Start: d.time(), Duration: time.Duration(d.varint()), Reason: string(d.bytes())}
	}
	return retry.NewTrace(stop, as)
}

// decodeRecord parses a record's payload (CRC already checked) into its
// type, write number and Entry; for recUpdate only the key and state
// fields (NotAfter among them) are set. A record of a file without the
// header (old) has no write number.
func decodeRecord(p []byte, old bool) (typ byte, write uint64, e Entry, err error) {
	if len(p) == 0 {
		return 0, 0, e, errCorrupt
	}
	typ = p[0]
	d := decoder{p: p[1:]}
	if typ > wholeTimes {
		typ -= wholeTimes
		d.whole = true
	}
	if typ != recAdd && typ != recUpdate || !old && !d.whole {
		return 0, 0, e, errCorrupt
	}
	if !old {
		write = d.uvarint()
	}
	e.Op.Key = string(d.bytes())
	if typ == recAdd {
		e.Op.Kind = string(d.bytes())
		if pl := d.bytes(); len(pl) > 0 {
			e.Op.Payload = append([]byte(nil), pl...)
		}
		e.Enqueued = d.time()
	}
	e.Op.NotAfter = d.time()
	e.State = State(d.uvarint())
	e.Attempts = int(d.varint())
	e.Next = d.time()
	e.LastWait = time.Duration(d.varint())
	e.Finished = d.time()
	e.Reason = string(d.bytes())
	e.LastError = string(d.bytes())
	if len(d.p) > 0 {
		e.Trace = d.trace()
	}
	if d.err == nil && (len(d.p) != 0 || e.State > Failed || e.Attempts < 0) {
		d.err = errCorrupt
	}
	return typ, write, e, d.err
}
