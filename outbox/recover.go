package outbox

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
)

// recover checks the header, replays the records into j.entries and cuts
// a torn tail. It leaves a file that is not a journal, or one damaged
// before its tail, as it is, and fails with [ErrCorrupt].
func (j *FileJournal) recover() error {
	st, err := j.f.Stat()
	if err != nil {
		return fmt.Errorf("outbox: read journal: %w", err)
	}
	size := st.Size()
	var head [headerSize]byte
	n, err := j.f.ReadAt(head[:], 0)
	if err != nil && err != io.EOF {
		return fmt.Errorf("outbox: read journal: %w", err)
	}
	var from int64 // where the records start
	switch {
	case int64(n) == headerSize && string(head[:n-1]) == fileHeader[:n-1]:
		if v := head[n-1]; v != fileHeader[n-1] {
			return fmt.Errorf("outbox: journal %s has format version %d, which this package cannot read", j.path, v)
		}
		from = headerSize
	case size < headerSize && string(head[:n]) == fileHeader[:n]:
		// New, or its creation was cut short by a crash.
		if _, err := j.f.WriteAt([]byte(fileHeader), 0); err != nil {
			return fmt.Errorf("outbox: write journal header: %w", err)
		}
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("outbox: write journal header: %w", err)
		}
		size, from = headerSize, headerSize
	default:
		j.old = true // or not a journal: told below
	}

	r := bufio.NewReaderSize(io.NewSectionReader(j.f, from, size-from), 1<<16)
	good, records := from, 0
	var hdr [frameHeader]byte
	var p []byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			return fmt.Errorf("outbox: read journal: %w", err)
		}
		n := binary.LittleEndian.Uint32(hdr[:])
		if n == 0 || n > maxRecord {
			break
		}
		p = slices.Grow(p[:0], int(n))[:n]
		if _, err := io.ReadFull(r, p); err != nil {
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				break
			}
			return fmt.Errorf("outbox: read journal: %w", err)
		}
		if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(hdr[4:]) {
			break
		}
		typ, write, e, err := decodeRecord(p, j.old)
		if err != nil || write < j.writeNo {
			break
		}
		j.apply(typ, e, frameHeader+int64(n))
		good += frameHeader + int64(n)
		records++
		j.writeNo = write
	}
	if good < size {
		if err := j.checkTail(good, size, records); err != nil {
			return err
		}
	}
	// Whatever follows the last good record goes: a torn record, the zero
	// tail a crash left reserved, and any record of the torn write that
	// did reach the disk, which must not come back once later appends
	// reach it. The space reserved afresh reads as zeros.
	if size != good {
		if err := j.f.Truncate(good); err != nil {
			return fmt.Errorf("outbox: cut the journal's torn tail: %w", err)
		}
		if err := j.f.Sync(); err != nil {
			return fmt.Errorf("outbox: cut the journal's torn tail: %w", err)
		}
	}
	j.size, j.alloc = good, good
	if err := j.reserve(good); err != nil {
		return fmt.Errorf("outbox: reserve journal space: %w", err)
	}
	return nil
}

// checkTail tells whether the bytes from the first bad record, at offset
// bad, to size are a tail that a crash tore, and fails with [ErrCorrupt]
// if not: if a valid record of a later write than the last good one's
// follows (in a file of the old format, any valid record: it has no
// write numbers), or if a file without the header does not start with a
// record (nor holds only zeros, the space an old journal reserved).
func (j *FileJournal) checkTail(bad, size int64, records int) error {
	rest := make([]byte, size-bad)
	if _, err := j.f.ReadAt(rest, bad); err != nil {
		return fmt.Errorf("outbox: read journal: %w", err)
	}
	if j.old && records == 0 && slices.ContainsFunc(rest, func(c byte) bool { return c != 0 }) {
		return fmt.Errorf("%w: %s is not a journal: it has no journal header, and no record at its start; it was left as it is", ErrCorrupt, j.path)
	}
	for at := 1; at+frameHeader <= len(rest); at++ {
		n := int(binary.LittleEndian.Uint32(rest[at:]))
		if n == 0 || n > maxRecord || at+frameHeader+n > len(rest) {
			continue
		}
		p := rest[at+frameHeader : at+frameHeader+n]
		if crc32.Checksum(p, castagnoli) != binary.LittleEndian.Uint32(rest[at+4:]) {
			continue
		}
		// A tear in a write's first record leaves the last good record
		// in the write before it: the torn write is then j.writeNo+1.
		if _, write, _, err := decodeRecord(p, j.old); err == nil && (j.old || write > j.writeNo+1) {
			return fmt.Errorf("%w: %s: record %d, at byte %d, does not hold, yet a record written after it, at byte %d, does: "+
				"a crash tears only the last write, so the disk lost data that was synced; the file was left as it is",
				ErrCorrupt, j.path, records+1, bad, bad+int64(at))
		}
	}
	return nil
}

// apply replays one record, of size bytes, on j.entries. An update of an
// unknown key is one whose add was compacted away after the op finished:
// dropped.
func (j *FileJournal) apply(typ byte, e Entry, size int64) {
	old, ok := j.entries[e.Op.Key]
	switch {
	case !ok && typ == recAdd:
		j.seq++
		old = &fileEntry{seq: j.seq}
		j.entries[e.Op.Key] = old
	case !ok:
		return
	case typ == recUpdate:
		e.Op.Kind, e.Op.Payload, e.Enqueued = old.Op.Kind, old.Op.Payload, old.Enqueued
	}
	old.Entry = e
	l := keptSize(typ, &e, size)
	j.live += l - old.live
	old.live = l
	if e.State == Succeeded {
		// Enough to recognize the key; a journal that runs for months
		// must not hold every payload it ran.
		old.Op.Payload = nil
	}
}
