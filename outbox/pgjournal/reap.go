package pgjournal

import (
	"context"
	"fmt"
	"time"

	"github.com/stormguard/retry/outbox"
)

// reapBatch is how many rows one of Reap's statements deletes at most.
const reapBatch = 1000

var _ outbox.DeadLetterJournal = (*Journal)(nil)

// DeadLetters returns the failed ops, in the order they were added, for
// outbox.Outbox.DeadLetters: it reads those rows alone, not the table.
func (j *Journal) DeadLetters(ctx context.Context) ([]outbox.Entry, error) {
	if err := j.check(); err != nil {
		return nil, err
	}
	rows, err := j.pool.Query(ctx, j.sql.dead)
	if err != nil {
		return nil, fmt.Errorf("pgjournal: dead letters: %w", err)
	}
	es, _, err := scanAll(rows)
	if err != nil {
		return nil, fmt.Errorf("pgjournal: dead letters: %w", err)
	}
	return es, nil
}

// Reap deletes the ops that succeeded more than retention ago (by the
// Journal's clock), in statements of at most 1,000 rows, oldest first,
// each its own short transaction, and returns how many it deleted; it
// stops early with ctx's error. Pending and failed ops are never deleted.
// An op enqueued again after its row is gone runs again, as with the file
// journal's compaction, so keep retention longer than any client retries
// an intent (24h, the file journal's, is a fair start). Run it on a ticker;
// rows another transaction holds are skipped, so every process may.
func (j *Journal) Reap(ctx context.Context, retention time.Duration) (deleted int, err error) {
	if err := j.check(); err != nil {
		return 0, err
	}
	if retention < 0 {
		return 0, fmt.Errorf("pgjournal: Reap with a negative retention %v", retention)
	}
	before := j.now().Add(-retention)
	for {
		if err := ctx.Err(); err != nil {
			return deleted, fmt.Errorf("pgjournal: reap: %w", err)
		}
		tag, err := j.pool.Exec(ctx, j.sql.reap, before, reapBatch)
		if err != nil {
			return deleted, fmt.Errorf("pgjournal: reap: %w", err)
		}
		n := int(tag.RowsAffected())
		deleted += n
		if n < reapBatch {
			return deleted, nil
		}
	}
}
