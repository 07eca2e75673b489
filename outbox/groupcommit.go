package outbox

import (
	"context"
	"errors"
	"fmt"
)

// batch is one group commit: every record appended between two flushes.
type batch struct {
	done chan struct{} // closed when its flush ended, err then set
	lead chan struct{} // closed when the flush before it ended
	err  error
}

// commit runs add under j.mu, which appends records to j.buf, then returns
// once they are durable. A caller that finds no flush running becomes the
// leader: it writes and syncs every record appended so far, its own among
// them. Callers that arrive meanwhile wait for their batch; when a flush
// ends, one of the next batch's callers leads its flush. So a caller waits
// for at most the flush under way and its own.
func (j *FileJournal) commit(ctx context.Context, add func() error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j.mu.Lock()
	switch {
	case j.closed:
		j.mu.Unlock()
		return ErrClosed
	case j.err != nil:
		err := j.err
		j.mu.Unlock()
		return err
	}
	if err := add(); err != nil {
		j.mu.Unlock()
		return err
	}
	lead := false
	if j.cur == nil {
		j.cur = &batch{done: make(chan struct{}), lead: make(chan struct{})}
		j.writeNo++       // the number nextWrite gave add
		lead = j.flushing // this caller flushes the batch once the flush under way ends
	}
	b := j.cur
	if !j.flushing {
		j.flush()
		j.mu.Unlock()
		return b.err
	}
	j.mu.Unlock()
	if !lead {
		// Only the batch's first caller waits for its turn: a wake-up of
		// every caller at each turn cost the group commit a fifth of its
		// throughput from 64 goroutines.
		<-b.done // bounded: the flush under way, then b's
		return b.err
	}
	<-b.lead // closed by the end of the flush under way
	j.mu.Lock()
	if j.cur == b && !j.flushing && !j.closed { // no caller arriving since took the lead
		j.flush()
	}
	j.mu.Unlock()
	<-b.done
	return b.err
}

// nextWrite is the number of the write that will carry a record appended
// now: the current batch's.
func (j *FileJournal) nextWrite() uint64 {
	if j.cur != nil {
		return j.writeNo
	}
	return j.writeNo + 1
}

// flush writes and syncs the current batch, with j.mu held on entry and on
// return but not during the write, then hands the lead to the next batch.
// After a failed write (or compaction) it writes nothing more: the batch
// waiting for it fails with the same error, unwritten, and commit fails
// every later call, so no flush starts with j.err set.
func (j *FileJournal) flush() {
	j.flushing = true
	buf, b, at := j.buf, j.cur, j.size
	j.buf, j.cur = j.spare[:0], nil
	j.mu.Unlock()
	err := j.write(buf, at)
	if err != nil {
		err = j.unwrite(at, err)
	}
	j.mu.Lock()
	j.spare = buf
	if err != nil && j.err == nil {
		j.err = fmt.Errorf("outbox: journal write failed, reopen it to recover: %w", err)
	}
	if err == nil {
		j.size += int64(len(buf))
	}
	b.err = j.err
	close(b.done)
	if j.err == nil && j.size >= j.compact && j.size >= 2*j.live {
		if err := j.compactLocked(); err != nil {
			j.err = fmt.Errorf("outbox: journal compaction failed, reopen it to recover: %w", err)
		}
	}
	j.flushing = false
	if j.err != nil {
		j.failPending()
	}
	if j.cur != nil {
		close(j.cur.lead)
	}
	j.flushed.Broadcast()
}

// failPending fails the batch appended after the journal failed, unwritten.
func (j *FileJournal) failPending() {
	if b := j.cur; b != nil {
		b.err = j.err
		close(b.lead)
		close(b.done)
		j.buf, j.cur = j.buf[:0], nil
	}
}

// write writes buf at offset at, after the last record, and syncs it.
// Only the leader calls it.
func (j *FileJournal) write(buf []byte, at int64) error {
	if err := j.reserve(at + int64(len(buf))); err != nil {
		return err
	}
	writeAt := j.f.WriteAt
	if j.writeAt != nil {
		writeAt = func(b []byte, off int64) (int, error) { return j.writeAt(j.f, b, off) }
	}
	if _, err := writeAt(buf, at); err != nil {
		return err
	}
	return syncData(j.f)
}

// unwrite undoes a failed write at offset at: a write cut short (a full
// disk, a quota, RLIMIT_FSIZE) or a failed sync may have left whole
// records of the batch in the file, which a reopen would replay as ops
// whose Add or Update failed. So the file is cut back to at, the size of
// its last durable record, and synced. Only the leader calls it; it
// returns err, joined with its own failure if the cut failed too.
func (j *FileJournal) unwrite(at int64, err error) error {
	if terr := j.f.Truncate(at); terr != nil {
		return errors.Join(err, fmt.Errorf("and cutting the failed write off failed: %w", terr))
	}
	j.alloc = at // the reserved tail went with the cut
	if serr := j.f.Sync(); serr != nil {
		return errors.Join(err, fmt.Errorf("and syncing the cut failed: %w", serr))
	}
	return err
}
