package pgjournal_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/outbox/pgjournal"
)

// newPool returns a pool on a new database of the package's server.
func newPool(t testing.TB, url string) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// newJournal returns a Journal on a new database, and its pool.
func newJournal(t testing.TB) (*pgjournal.Journal, *pgxpool.Pool) {
	t.Helper()
	pool := newPool(t, pg(t).NewDatabase(t))
	migrate(t, pool)
	j, err := pgjournal.New(pool, pgjournal.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	return j, pool
}

// migrate makes the default table in pool's database.
func migrate(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	require.NoError(t, pgjournal.Migrate(context.Background(), pool, pgjournal.Options{}))
}
