package pgjournal

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	"github.com/stormguard/retry/outbox"
)

// Update and Release are written in batches, as a group commit: a write
// that finds another batch being written waits for it to end, and the
// writes that queued meanwhile go together in one statement and one
// commit. Each call still returns only once its own write is committed,
// so that an outcome Update acknowledged is one a crash cannot undo, and
// Wait reports an op done only after it is durable. One write at a time
// pays one statement, as before; 100 handlers finishing together pay one
// statement, and one WAL flush, for the lot, where each commit of its own
// waited for the flush of the one before (BENCHMARKS.md).
//
// While writes keep coming, a batch also waits a little for the next ones,
// as PostgreSQL's commit_delay does for its commits: after a batch, a
// writer that finds fewer than gatherRows writes queued waits for more,
// as long as the batch before took to write, from minGather to
// maxGather. A write that finds the writer idle is written at once, so a
// quiet Journal pays no delay; a busy one pays at most maxGather more per
// write, and a database that is slow to commit gets larger batches, as
// many writes in each as came while the one before was written. In
// BENCHMARKS.md's runs, a busy Journal's outcome statements fell to
// 0.27–0.4 of what they were (River's completer, measured beside it
// there, waits up to 250 ms to gather 100 completions).
const (
	// maxBatch bounds the writes of one statement, and so its size.
	maxBatch = 500
	// gatherRows is a batch large enough to go without waiting for more.
	gatherRows = 256
	// minGather and maxGather bound the wait for more writes after a
	// batch.
	minGather = time.Millisecond
	maxGather = 10 * time.Millisecond
	// batchTimeout bounds one batch's statement: its callers' contexts are
	// theirs, a batch is everyone's.
	batchTimeout = 30 * time.Second
)

// write is one Update, Release or UpdateRelease waiting for its batch.
type write struct {
	e       outbox.Entry
	release bool       // a Release
	free    bool       // an UpdateRelease: the Update ends the lease
	done    chan error // buffered: the batch never waits for its caller
}

// batcher queues the writes of one Journal. Its zero value is ready.
type batcher struct {
	mu      sync.Mutex
	queue   []*write
	writing bool          // a goroutine is writing batches; it takes the queue when done
	full    chan struct{} // made with the first write; a send says gatherRows are queued
}

// submit queues w and waits for its batch to be committed, or for ctx to
// end (the write may still be committed then, as a statement cut short by
// a cancel may be).
func (j *Journal) submit(ctx context.Context, w *write) error {
	return j.batch.submit(ctx, w, j.writeBatch)
}

// submit is Journal.submit with the statement that writes a batch, flush,
// given: the tests of the batching rule give their own.
func (b *batcher) submit(ctx context.Context, w *write, flush func([]*write)) error {
	w.done = make(chan error, 1)
	b.mu.Lock()
	if b.full == nil {
		b.full = make(chan struct{}, 1)
	}
	b.queue = append(b.queue, w)
	start := !b.writing
	b.writing = true
	if !start && len(b.queue) == gatherRows {
		select {
		case b.full <- struct{}{}:
		default:
		}
	}
	b.mu.Unlock()
	if start {
		go b.writeBatches(flush)
	}
	select {
	case err := <-w.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// writeBatches writes the queue a batch at a time until it is empty. The
// first batch goes at once; each later one, when fewer than gatherRows
// writes queued while the one before was written, after a wait for more
// (gather).
func (b *batcher) writeBatches(flush func([]*write)) {
	var took time.Duration
	for first := true; ; first = false {
		b.mu.Lock()
		if !first && len(b.queue) > 0 && len(b.queue) < gatherRows {
			select {
			case <-b.full: // a signal from before this wait
			default:
			}
			b.mu.Unlock()
			t := time.NewTimer(gather(took))
			select {
			case <-b.full:
			case <-t.C:
			}
			t.Stop()
			b.mu.Lock()
		}
		batch, rest := takeBatch(b.queue)
		b.queue = rest
		if len(batch) == 0 {
			b.writing = false
			b.mu.Unlock()
			return
		}
		b.mu.Unlock()
		t0 := time.Now()
		flush(batch)
		took = time.Since(t0)
	}
}

// gather is how long a writer waits for more writes after a batch whose
// statement took took.
func gather(took time.Duration) time.Duration {
	return min(max(took, minGather), maxGather)
}

// takeBatch splits q into the next batch and what waits for the one
// after: at most maxBatch writes, one per key, so that each row is written
// once per statement, in the order its writes came.
func takeBatch(q []*write) (batch, rest []*write) {
	seen := make(map[string]struct{}, min(len(q), maxBatch))
	for _, w := range q {
		_, dup := seen[w.e.Op.Key]
		if dup || len(batch) == maxBatch {
			rest = append(rest, w)
			continue
		}
		seen[w.e.Op.Key] = struct{}{}
		batch = append(batch, w)
	}
	return batch, rest
}

// writeBatch writes batch in one statement (sql.batch) and tells each
// write how it went.
func (j *Journal) writeBatch(batch []*write) {
	ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
	defer cancel()
	var u updateArrays
	var relKeys, relLeases []string
	for _, w := range batch {
		if w.release {
			relKeys, relLeases = append(relKeys, w.e.Op.Key), append(relLeases, w.e.Lease)
			continue
		}
		u.add(w.e, w.free)
	}
	rows, err := j.pool.Query(ctx, j.sql.batch, u.keys, u.notAfter, u.state, u.attempts, u.next, u.lastWait,
		u.finished, u.reason, u.lastError, u.lease, u.trace, relKeys, relLeases, u.free)
	var written []string
	if err == nil {
		for rows.Next() {
			var k string
			if err = rows.Scan(&k); err != nil {
				break
			}
			written = append(written, k)
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
	}
	if err != nil {
		for _, w := range batch {
			w.done <- fmt.Errorf("pgjournal: %s: %w", w.verb(), err)
		}
		return
	}
	var missed []*write
	for _, w := range batch {
		if w.release || slices.Contains(written, w.e.Op.Key) {
			w.done <- nil
			continue
		}
		missed = append(missed, w)
	}
	if len(missed) > 0 {
		j.whyNot(ctx, missed)
	}
}

// whyNot tells the Updates that changed no row why: another lease holds
// the op, or the journal does not hold it at all. A rare path, worth a
// second statement.
func (j *Journal) whyNot(ctx context.Context, missed []*write) {
	keys := make([]string, len(missed))
	for i, w := range missed {
		keys[i] = w.e.Op.Key
	}
	es, err := j.Get(ctx, keys)
	for _, w := range missed {
		switch {
		case err != nil:
			w.done <- fmt.Errorf("pgjournal: update: %w", err)
		case slices.ContainsFunc(es, func(e outbox.Entry) bool { return e.Op.Key == w.e.Op.Key }):
			w.done <- outbox.ErrLeaseLost
		default:
			w.done <- errors.New("pgjournal: update of a key the journal does not hold")
		}
	}
}

func (w *write) verb() string {
	switch {
	case w.release:
		return "release"
	case w.free:
		return "update and release"
	}
	return "update"
}

// updateArrays are the columns of a batch's Updates, one array each, as
// sql.batch unnests them.
type updateArrays struct {
	keys, reason, lastError []string
	lease                   []pgtype.Text
	notAfter                []time.Time
	next, finished          []pgtype.Timestamptz
	state                   []int16
	attempts                []int32
	lastWait                []int64
	trace                   [][]byte
	free                    []bool // the write ends the lease (UpdateRelease)
}

func (u *updateArrays) add(e outbox.Entry, free bool) {
	u.free = append(u.free, free)
	u.keys = append(u.keys, e.Op.Key)
	u.notAfter = append(u.notAfter, e.Op.NotAfter)
	u.state = append(u.state, int16(e.State))
	u.attempts = append(u.attempts, int32(e.Attempts))
	u.next = append(u.next, timestamptz(e.Next))
	u.lastWait = append(u.lastWait, int64(e.LastWait))
	u.finished = append(u.finished, timestamptz(e.Finished))
	u.reason = append(u.reason, e.Reason)
	u.lastError = append(u.lastError, e.LastError)
	u.lease = append(u.lease, pgtype.Text{String: e.Lease, Valid: e.Lease != ""})
	u.trace = append(u.trace, encodeTrace(e.Trace))
}

func timestamptz(t time.Time) pgtype.Timestamptz {
	return pgtype.Timestamptz{Time: t, Valid: !t.IsZero()}
}
