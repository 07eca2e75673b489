package pgstore

import (
	"context"
	"fmt"
)

// Reap deletes the rows whose time has run out: results past their TTL and
// claims past their lease (a process that died mid-request). It deletes
// them in statements of at most Options.ReapBatch rows, oldest first, each
// its own short transaction, until one deletes fewer, and returns how many
// keys it deleted; then the lease rows of renewals that have run out. It
// stops early, with ctx's error, when ctx ends. It never
// deletes a live claim or a result within its TTL, whatever the clocks of
// the processes say: it too asks the database's clock.
//
// Nothing depends on Reap for correctness: every statement of the store
// treats an expired row as absent. It keeps the table, and its index,
// about one TTL of keys large. Run it on a ticker, every minute or so (see
// the package doc); rows that another transaction has locked are skipped,
// so every process of a fleet may run it.
func (s *Store) Reap(ctx context.Context) (deleted int, err error) {
	for {
		if err := ctx.Err(); err != nil {
			return deleted, fmt.Errorf("pgstore: reap: %w", err)
		}
		tag, err := s.pool.Exec(ctx, s.q.reap, s.reapBatch)
		if err != nil {
			return deleted, fmt.Errorf("pgstore: reap: %w", err)
		}
		n := int(tag.RowsAffected())
		deleted += n
		if n < s.reapBatch {
			break
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return deleted, fmt.Errorf("pgstore: reap: %w", err)
		}
		tag, err := s.pool.Exec(ctx, s.q.reapLeases, s.reapBatch)
		if err != nil {
			return deleted, fmt.Errorf("pgstore: reap leases: %w", err)
		}
		if tag.RowsAffected() < int64(s.reapBatch) {
			return deleted, nil
		}
	}
}
