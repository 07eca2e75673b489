package pgjournal

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/stormguard/retry/outbox"
)

// EnqueueTx writes op in the caller's transaction tx, in one statement, and
// returns its key: the op commits with the business rows that made it, or
// not at all (the transactional outbox). Nothing runs it before tx
// commits; at the commit, the statement's pg_notify wakes every Run over
// the table, which claims it at once (its next poll, should the notice be
// missed).
//
// The op is checked and filled in as outbox.Outbox.Enqueue does it (see
// [outbox.NewEntry]): an empty Key gets a fresh random key, a zero
// NotAfter is the Outbox's Horizon from its clock's now (see [Journal]). The same op enqueued again (same
// key, Kind and Payload) returns its key and adds nothing; another op under
// a key the table holds fails with outbox.ErrKeyConflict. Neither case
// fails the statement, so tx stays usable.
func (j *Journal) EnqueueTx(ctx context.Context, tx pgx.Tx, op outbox.Op) (key string, err error) {
	if err := j.check(); err != nil {
		return "", err
	}
	if tx == nil {
		return "", errors.New("pgjournal: EnqueueTx with a nil transaction")
	}
	e, err := outbox.NewEntry(op, j.now(), j.horizon())
	if err != nil {
		return "", err
	}
	q := j.sql.enqueueQuiet
	if j.notices.take() {
		q = j.sql.enqueue
	}
	err = tx.QueryRow(ctx, q, args(e)...).Scan(&key)
	j.notices.done()
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", outbox.ErrKeyConflict
	case err != nil:
		return "", fmt.Errorf("pgjournal: enqueue: %w", err)
	}
	return key, nil
}
