package outbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// retention is how long a succeeded op is remembered after it finished, so
// that enqueueing it again is recognized: the time package idempotency and
// Stripe keep a key.
const retention = 24 * time.Hour

// expired reports whether e succeeded longer than retention before now:
// then it is forgotten, in the journal and in the Outbox.
func expired(e *Entry, now time.Time) bool {
	return e.State == Succeeded && e.Finished.Before(now.Add(-retention))
}

// compactLocked rewrites the journal with one record per op it keeps (see
// [FileJournal]), then swaps the new file in. It is called by the flush
// leader with j.mu held; records appended meanwhile wait in j.buf and go to
// the new file.
func (j *FileJournal) compactLocked() error {
	now := time.Now()
	all := make([]*fileEntry, 0, len(j.entries))
	for k, e := range j.entries {
		if expired(&e.Entry, now) {
			delete(j.entries, k)
			j.live -= e.live
			continue
		}
		if e.State == Succeeded {
			e.Op.Payload = nil // enough to recognize the key
		}
		all = append(all, e)
	}
	slices.SortFunc(all, func(a, b *fileEntry) int { return compareSeq(a.seq, b.seq) })
	buf := []byte(fileHeader)
	for _, e := range all {
		n := len(buf)
		buf = appendRecord(buf, recAdd, &e.Entry, j.writeNo)
		e.live = int64(len(buf) - n)
	}

	tmp := j.path + ".compact"
	f, err := os.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	unlock, err := lockFileOnly(f)
	if err != nil {
		f.Close()
		return err
	}
	fail := func(err error) error {
		f.Close()
		unlock()
		os.Remove(tmp)
		return err
	}
	if _, err := f.WriteAt(buf, 0); err != nil {
		return fail(err)
	}
	alloc := int64(len(buf))
	if j.prealloc {
		to := (alloc/preallocChunk + 1) * preallocChunk
		ok, err := preallocate(f, alloc, to)
		if err != nil {
			return fail(err)
		}
		if ok {
			alloc = to
		}
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	// The new file holds the lock before it takes the journal's name, so
	// that no other OpenFile can slip in between.
	if err := os.Rename(tmp, j.path); err != nil {
		return fail(err)
	}
	if err := syncDir(filepath.Dir(j.path)); err != nil {
		return fmt.Errorf("%w (the journal was compacted, but the rename may not be durable)", err)
	}
	old := j.f
	j.f = f
	j.size, j.alloc, j.live = int64(len(buf)), alloc, int64(len(buf))
	j.swapLock(unlock)
	old.Close()
	return nil
}
