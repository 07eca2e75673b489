package outbox

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// FileJournal is the embedded [Journal]: one append-only file, with no
// dependency but the standard library.
//
// Each Add and Update appends one record (framed as the package doc says)
// and returns once the file is fsync'd. Calls made at the same time share
// one write and one fsync (group commit): a caller that arrives while a
// sync runs waits for it, then the next sync carries every record that
// arrived meanwhile. A write or sync that fails is undone: the file is cut
// back to its last durable record and synced, the calls of that batch and
// of the batch waiting for it fail, and so does every later call (Load
// too) until the journal is reopened, so that no record of a failed call
// comes back after a restart.
//
// On Linux the file's blocks are reserved ahead of its records, 4 MiB at
// a time (fallocate, then zeros written over them), so that a sync
// flushes data and no metadata. A crash
// leaves that reserved tail as zeros, which recovery reads as the end (a
// zero length), as it reads a torn record; Close trims it.
//
// The file starts with a header (a magic string and the format's
// version, see record.go), so that OpenFile never takes another file for a
// journal. OpenFile replays the file. A crash mid-append leaves a torn
// tail: the last write's records, some of which may not have reached the
// disk. So recovery keeps every record before the first one whose length,
// checksum or fields do not hold (every record whose Add or Update
// returned) and cuts the file there. Damage anywhere else is not a
// crash's doing: if a valid record of a later write follows the bad one
// (each record carries the number of the write that carried it), the disk
// lost data that was synced, and OpenFile leaves the file as it is and
// fails with an error matching [ErrCorrupt] that says at which byte; so
// does it for a file that is not a journal. Such a file is for a person to
// look at (its records after the damage are intact); OpenFile never
// drops acknowledged ops to open it.
//
// A file of the format before the header (v0.1) still opens, with the
// same rule but stricter, since its records carry no write numbers: any
// valid record after a bad one makes it [ErrCorrupt]. OpenFile then
// rewrites it in the current format, as a compaction does; the upgrade
// is one-way.
//
// When the file has grown to twice what its compaction would write (and
// to at least 1 MiB), it is compacted: the latest state of each op is written to a new file,
// which is fsync'd and renamed over the old one, and the directory is
// fsync'd. Ops that succeeded more than 24h ago are dropped then; those
// that succeeded more recently are kept without their payload, so that
// enqueueing one again is still recognized. Pending and failed ops are kept.
// In memory, a succeeded op's payload is dropped as it succeeds, and an op
// that succeeded more than 24h ago is forgotten, compaction or not: when
// its key is added again, and by a look over every op at most once an
// hour, from an Add or an Update. The Outbox forgets it too (see
// Outbox.Wait).
//
// One FileJournal owns the file at a time: OpenFile takes an exclusive lock
// (flock on Unix; a lock file beside the journal elsewhere), and a second
// OpenFile, from this process or another, fails with [ErrLocked] until
// Close. The file is created with mode 0600: it holds every payload.
type FileJournal struct {
	path   string
	unlock func() error

	mu       sync.Mutex
	flushed  *sync.Cond // signaled when a flush ends
	f        *os.File
	size     int64 // bytes of records in the file
	alloc    int64 // the file's length: size, then a zero tail reserved ahead
	prealloc bool  // whether the file system lets us reserve (preallocate)
	live     int64 // what a compacted file would take: its ops' keptSize
	compact  int64 // least size at which to compact
	entries  map[string]*fileEntry
	seq      uint64
	buf      []byte // records not yet written
	spare    []byte
	cur      *batch // the batch buf belongs to
	flushing bool
	err      error // sticky: set when a write or sync failed
	closed   bool
	writeNo  uint64    // number of the last write begun (see record.go)
	swept    time.Time // when forgetExpired last looked
	old      bool      // the file has no header: OpenFile upgrades it

	// writeAt, when set, writes in place of j.f.WriteAt: tests make
	// writes fail with it.
	writeAt func(f *os.File, b []byte, off int64) (int, error)
}

type fileEntry struct {
	Entry
	seq  uint64 // Add order
	live int64  // its keptSize
}

// keptSize is the size of e's record in a compacted file, from size, that
// of the record of type typ just written for it: compaction writes an add,
// with the fields an update leaves out, and without the payload of a
// succeeded op; for an op that succeeded more than retention ago it writes
// nothing. (An op that succeeded recently counts until the next compaction
// as kept: compaction then comes later, never sooner, than it could. For
// a record of the old format, whose times are shorter, the size is about.)
func keptSize(typ byte, e *Entry, size int64) int64 {
	succeeded := e.State == Succeeded
	if expired(e, time.Now()) {
		return 0
	}
	payload := fieldSize(len(e.Op.Payload))
	if typ == recAdd {
		size -= payload
	} else {
		var b [binary.MaxVarintLen64 + 2]byte
		size += fieldSize(len(e.Op.Kind)) + int64(len(appendTime(b[:0], e.Enqueued)))
	}
	if succeeded {
		return size + fieldSize(0)
	}
	return size + payload
}

// fieldSize is the size of a string or byte slice of n bytes in a record.
func fieldSize(n int) int64 {
	var b [binary.MaxVarintLen64]byte
	return int64(len(binary.AppendUvarint(b[:0], uint64(n))) + n)
}

// minCompact is the least size at which a journal is compacted.
const minCompact = 1 << 20

// preallocChunk is how far ahead of its records the file's blocks are
// reserved (see [FileJournal]): a sync into reserved space flushes no
// metadata, and the reservation itself is made once per chunk.
const preallocChunk = 4 << 20

// OpenFile opens the journal at path, creating it when missing, and
// recovers what it holds (see [FileJournal]). It fails with an error
// matching [ErrLocked] if the journal is open elsewhere.
func OpenFile(path string) (*FileJournal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("outbox: open journal: %w", err)
	}
	unlock, err := lockFile(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	j := &FileJournal{path: path, unlock: unlock, f: f, entries: make(map[string]*fileEntry), prealloc: true}
	j.flushed = sync.NewCond(&j.mu)
	if err := j.recover(); err != nil {
		f.Close()
		unlock()
		return nil, err
	}
	_ = os.Remove(path + ".compact") // a compaction cut short by a crash
	if j.old {                       // the format before the header: rewrite it in this one
		j.mu.Lock()
		err := j.compactLocked()
		j.mu.Unlock()
		if err != nil {
			j.f.Close()
			j.unlock()
			return nil, fmt.Errorf("outbox: upgrade the journal's format: %w", err)
		}
		j.old = false
	}
	// The file may be new: make its name as durable as its records.
	if err := syncDir(filepath.Dir(path)); err != nil {
		f.Close()
		unlock()
		return nil, err
	}
	j.compact = minCompact
	return j, nil
}

// reserve makes sure the file's blocks are reserved past need, a chunk
// at a time. Only the flush leader (or OpenFile) calls it.
func (j *FileJournal) reserve(need int64) error {
	if !j.prealloc || need < j.alloc {
		return nil
	}
	to := (need/preallocChunk + 1) * preallocChunk
	ok, err := preallocate(j.f, j.alloc, to)
	if err != nil {
		return err
	}
	if !ok {
		j.prealloc = false
		return nil
	}
	j.alloc = to
	return nil
}

// Add implements [Journal].
func (j *FileJournal) Add(ctx context.Context, e Entry) error {
	if err := validKey(e.Op.Key); err != nil {
		return err
	}
	if len(e.Op.Payload) > MaxPayload {
		return fmt.Errorf("%w: payload of %d bytes, over MaxPayload", ErrInvalidOp, len(e.Op.Payload))
	}
	e.Op.Payload = slices.Clone(e.Op.Payload)
	return j.commit(ctx, func() error {
		now := time.Now()
		j.forgetExpired(now)
		if old, ok := j.entries[e.Op.Key]; ok {
			if !expired(&old.Entry, now) {
				return ErrDuplicate
			}
			// Succeeded longer ago than the retention: forgotten, as
			// compaction would have, and the key is free again.
			j.live -= old.live
			delete(j.entries, e.Op.Key)
		}
		n := len(j.buf)
		j.buf = appendRecord(j.buf, recAdd, &e, j.nextWrite())
		j.apply(recAdd, e, int64(len(j.buf)-n))
		return nil
	})
}

// Update implements [Journal].
func (j *FileJournal) Update(ctx context.Context, e Entry) error {
	return j.commit(ctx, func() error {
		j.forgetExpired(time.Now())
		if _, ok := j.entries[e.Op.Key]; !ok {
			return ErrUnknownKey
		}
		n := len(j.buf)
		j.buf = appendRecord(j.buf, recUpdate, &e, j.nextWrite())
		j.apply(recUpdate, e, int64(len(j.buf)-n))
		return nil
	})
}

// Load implements [Journal].
func (j *FileJournal) Load(ctx context.Context) ([]Entry, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil, ErrClosed
	}
	if j.err != nil { // j.entries may hold records that failed to write
		return nil, j.err
	}
	all := make([]*fileEntry, 0, len(j.entries))
	for _, e := range j.entries {
		all = append(all, e)
	}
	slices.SortFunc(all, func(a, b *fileEntry) int { return compareSeq(a.seq, b.seq) })
	out := make([]Entry, len(all))
	for i, e := range all {
		out[i] = e.Entry
		out[i].Op.Payload = slices.Clone(e.Op.Payload)
	}
	return out, nil
}

func compareSeq(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Close waits for a write under way, then closes the file and releases its
// lock. Calls after Close fail with [ErrClosed].
func (j *FileJournal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return nil
	}
	j.closed = true
	for j.flushing {
		j.flushed.Wait()
	}
	if j.cur != nil { // appended after the last flush: never durable
		j.cur.err = ErrClosed
		close(j.cur.done)
		j.cur = nil
	}
	var err error
	if j.alloc > j.size { // leave no zero tail behind a clean close
		err = j.f.Truncate(j.size)
	}
	err = errors.Join(err, j.f.Close())
	return errors.Join(err, j.unlock())
}

// syncDir fsyncs a directory, so that a file created or renamed in it
// survives a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("outbox: sync journal directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("outbox: sync journal directory: %w", err)
	}
	return nil
}
