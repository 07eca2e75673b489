package outbox

import (
	"context"
	"time"

	"github.com/stormguard/retry"
)

// Journal is where an Outbox keeps its ops. [FileJournal] is the embedded
// one; another store can implement it.
//
// The contract:
//   - Add records e, a new op, and returns only once it is durable: after a
//     crash, Load returns it. It returns an error matching [ErrDuplicate],
//     and changes nothing, if the journal holds e.Op.Key already.
//   - Update replaces the state of the op with e's key by e, durably before
//     it returns: every field but Op.Kind, Op.Payload and Enqueued, which
//     never change after Add (Op.NotAfter may: [Outbox.Redrive] extends
//     it). An Update of a key the journal does not hold is an error.
//   - Load returns the latest state of every op the journal holds, in the
//     order they were added. A journal may forget an op that succeeded
//     long ago (FileJournal does so after 24h); it keeps pending and failed
//     ops until told otherwise.
//   - Calls may come from many goroutines at once. A journal that cannot
//     write must return an error, never report a write it did not make.
//   - Close releases the journal; calls after it fail.
//
// The ctx of each call bounds how long it may wait to start; a write that
// has started may finish after ctx ends.
type Journal interface {
	Add(ctx context.Context, e Entry) error
	Update(ctx context.Context, e Entry) error
	Load(ctx context.Context) ([]Entry, error)
	Close() error
}

// DefaultsJournal is a [Journal] that fills in ops itself, outside
// [Outbox.Enqueue], such as pgjournal's EnqueueTx: [New] gives it the
// Outbox's Horizon and Clock, so that they are set in one place and an op
// enqueued in a transaction gets the same NotAfter as one from Enqueue.
//
// UseDefaults is called once per Outbox made over the journal, before New
// returns; it returns an error (New fails with it) when the journal serves
// an Outbox with other defaults already, so that two Outboxes over one
// journal cannot disagree.
type DefaultsJournal interface {
	Journal
	UseDefaults(d Defaults) error
}

// Defaults are what an Outbox fills in an op it enqueues: NotAfter is
// Horizon after Clock's now when the op has none.
type Defaults struct {
	Horizon time.Duration // never 0: the Outbox's, 24h unless set
	Clock   retry.Clock   // never nil
}
