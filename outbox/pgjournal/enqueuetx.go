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
// commits; an Outbox's Run over this Journal, in any process, claims it at
// its next poll (Options.PollInterval).
//
// The op is checked and filled in as outbox.Outbox.Enqueue does it (see
// [outbox.NewEntry]): an empty Key gets a fresh random key, a zero
// NotAfter is Options.Horizon from now. The same op enqueued again (same
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
	e, err := outbox.NewEntry(op, j.clock.Now(), j.horizon)
	if err != nil {
		return "", err
	}
	err = tx.QueryRow(ctx, j.sql.enqueue, args(e)...).Scan(&key)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", outbox.ErrKeyConflict
	case err != nil:
		return "", fmt.Errorf("pgjournal: enqueue: %w", err)
	}
	return key, nil
}
