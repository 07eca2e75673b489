package pgstore

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Migrate creates the store's table, its index and its lease table if they
// do not exist
// (the SQL is in the package doc, for teams that run their own
// migrations); run it again after an upgrade that adds to them. It is safe to run from every process at start-up: a
// transaction-scoped advisory lock makes concurrent runs take turns.
func (s *Store) Migrate(ctx context.Context) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext($1))`, "pgstore.migrate:"+s.table); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, fmt.Sprintf(schema, s.ident, s.index, s.leases))
		return err
	})
	if err != nil {
		return fmt.Errorf("pgstore: migrate %s: %w", s.table, err)
	}
	return nil
}
