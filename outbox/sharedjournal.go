package outbox

import (
	"context"
	"errors"
	"time"
)

// SharedJournal is a [Journal] that many processes share, such as a table
// in one PostgreSQL database (package outbox/pgjournal). An Outbox over a
// SharedJournal does not load it: Run claims due ops, a few at a time,
// each under a lease, polling every Options.PollInterval and at once after
// an Enqueue in this process. A process that dies leaves its claims to
// lapse; once the lease ends, another process claims the op and resumes it
// under its key, with its attempt count and its next time as written.
//
// The contract, beyond Journal's (whose Load need not be cheap, since the
// Outbox does not call it):
//   - Add records an op with no lease.
//   - Claim leases to c.Owner, until c.Until, at most c.Limit pending ops of
//     c.Kinds whose Next is at or before c.Now and that no lease holds: never
//     claimed, released, or whose lease ended at or before c.Now. It
//     returns their latest state, earliest Next first, each with Lease set
//     to a token that no other claim was or will be given. Ops that a
//     concurrent Claim is taking are skipped, not waited for (in SQL, FOR
//     UPDATE SKIP LOCKED), so that no op is given to two claims. With
//     c.Count, the same write adds 1 to each claimed op's Attempts, and the
//     entries returned hold the new count: the claim counts the attempt it
//     is for, durably before the call, in the statement that claims.
//   - Update is fenced: it writes only when e.Lease is the op's lease (an
//     empty e.Lease: the op has none), and otherwise changes nothing and
//     returns an error matching [ErrLeaseLost], so that a process whose
//     lease lapsed and was taken cannot write over the new owner's
//     outcome. An Update that leaves the op Succeeded or Failed ends its
//     lease.
//   - Renew extends, to until, the lease of each entry of held whose Lease
//     still holds its op, and returns the keys of those it no longer
//     holds.
//   - Release ends e's lease if e.Lease still holds the op, so that
//     another process may claim it at once; a lease it no longer holds is
//     not an error.
//   - Get returns the latest state of the ops among keys that it holds, in
//     any order. Run uses it, once per poll, for the ops enqueued here
//     that another process may have finished, so that [Outbox.Wait] sees
//     the outcome of an op wherever it ran.
//
// Times are the Outbox's clock readings: the clocks of the processes that
// share a journal must agree to well within a lease.
type SharedJournal interface {
	Journal
	Claim(ctx context.Context, c ClaimRequest) ([]Entry, error)
	Renew(ctx context.Context, held []Entry, until time.Time) (lost []string, err error)
	Release(ctx context.Context, e Entry) error
	Get(ctx context.Context, keys []string) ([]Entry, error)
}

// ListeningJournal is a [SharedJournal] that tells of the ops committed
// by other processes (or in a transaction, such as pgjournal's EnqueueTx),
// so that Run claims them at once rather than at its next poll. Run calls
// Listen once, in a goroutine of its own, and ends its ctx when it stops.
//
// Listen calls wake whenever ops may have become due, and at least once
// after each time it (re)connects, since notices sent meanwhile are lost;
// it keeps listening through failures (reconnecting, with a bounded
// backoff), and returns once ctx ends. Notices are a hint: the poll stays
// the fallback, so a notice missed costs latency, never an op.
type ListeningJournal interface {
	SharedJournal
	Listen(ctx context.Context, wake func()) error
}

// ReleasingJournal is a [SharedJournal] that writes a pending op and
// gives its lease back in one write, where Update then Release take two:
// what Run does at the end of each attempt that leaves its op pending (a
// failure it will retry, a refusal, a stop). Run uses UpdateRelease when
// the journal has it.
//
// UpdateRelease writes e, a Pending entry, as Update does, fenced by
// e.Lease ([ErrLeaseLost] when another lease holds the op), and ends that
// lease in the same write, so that another process may claim the op at
// once.
type ReleasingJournal interface {
	SharedJournal
	UpdateRelease(ctx context.Context, e Entry) error
}

// ClaimRequest asks a [SharedJournal] for due ops.
type ClaimRequest struct {
	Owner string    // who claims: one name per Outbox, for the journal's records
	Kinds []string  // only ops of these kinds (those with a handler)
	Now   time.Time // ops due at or before Now; leases ended by Now have lapsed
	Until time.Time // the end of the lease given
	Limit int       // at most this many ops, at least 1
	// Count adds 1 to the Attempts of each op claimed, in the claim's
	// write. Run sets it, so that a crash after the claim leaves the
	// attempt counted without a write of its own before the call; an op
	// it then does not attempt (a guard refuses it, Run stops) gets the
	// count back with the write that puts it back.
	Count bool
}

// ErrLeaseLost is matched by the error of a [SharedJournal]'s Update of an
// op whose lease the caller no longer holds: it lapsed and another process
// claimed the op, which is now that process's to run and record.
var ErrLeaseLost = errors.New("outbox: the op's lease is held by another claim")
