package outbox

import (
	"context"
	"time"
)

// JournalCounts is what a [CountingJournal] says of the ops it holds, for
// [Outbox.Stats] over a journal that many processes share.
type JournalCounts struct {
	Pending, Running, Failed int
	// OldestPending is when the oldest op not finished was enqueued; zero
	// when there is none.
	OldestPending time.Time
}

// A CountingJournal is a [SharedJournal] that can count its ops: Pending
// (not finished, no live lease), Running (not finished, leased at now) and
// Failed, so that Stats tells what the whole journal holds, the ops of
// EnqueueTx and of other processes included, not only this Outbox's.
// pgjournal's Journal is one.
type CountingJournal interface {
	SharedJournal
	Counts(ctx context.Context, now time.Time) (JournalCounts, error)
}

// count asks the journal for its counts, when it can give them, and keeps
// them for Stats: Run's loop calls it at each poll, so that Stats, which
// must stay cheap, never reads the journal itself.
func (o *Outbox) count(ctx context.Context, now time.Time) {
	cj, ok := o.shared.j.(CountingJournal)
	if !ok {
		return
	}
	c, err := cj.Counts(ctx, now)
	if err != nil {
		return // the last counts stand; the next poll asks again
	}
	o.mu.Lock()
	o.counts, o.counted = c, true
	o.mu.Unlock()
}
