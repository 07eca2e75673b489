package pgjournal_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/outbox/journaltest"
	"github.com/stormguard/retry/outbox/pgjournal"
)

// TestJournalContract runs the journal contract's suite, with its claim,
// lease and fencing cases, on PostgreSQL.
func TestJournalContract(t *testing.T) {
	journaltest.Run(t, func(t *testing.T) journaltest.Open {
		pool := newPool(t, pg(t).NewDatabase(t))
		migrate(t, pool)
		return func() (outbox.Journal, error) { return pgjournal.New(pool, pgjournal.Options{}) }
	})
}

func TestMigrateFromProcessesStartingTogether(t *testing.T) {
	pool := newPool(t, pg(t).NewDatabase(t))
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = pgjournal.Migrate(ctx, pool, pgjournal.Options{Table: "shop.outbox"}) })
	}
	_, err := pool.Exec(ctx, "CREATE SCHEMA shop")
	require.NoError(t, err)
	wg.Wait()
	// Some may have run before the schema existed; none may fail another way.
	for _, err := range errs {
		if err != nil {
			assert.ErrorContains(t, err, "shop")
		}
	}
	require.NoError(t, pgjournal.Migrate(ctx, pool, pgjournal.Options{Table: "shop.outbox"}), "Migrate again")
	j, err := pgjournal.New(pool, pgjournal.Options{Table: "shop.outbox"})
	require.NoError(t, err)
	require.NoError(t, j.Add(ctx, journaltest.Entry("k", 1)))
	var n int
	require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM shop.outbox").Scan(&n))
	assert.Equal(t, 1, n, "rows in the table Migrate created")
}

// New checks the catalog and never creates: on a database that is not
// migrated, or only in part, it fails and names what is missing. (It
// created the table, and altered it, itself.)
func TestNewOnAnUnmigratedDatabase(t *testing.T) {
	pool := newPool(t, pg(t).NewDatabase(t))
	ctx := context.Background()
	_, err := pgjournal.New(pool, pgjournal.Options{Table: "jobs"})
	require.ErrorIs(t, err, pgjournal.ErrNotMigrated)
	assert.ErrorContains(t, err, "missing table jobs")
	assert.ErrorContains(t, err, "pgjournal.Migrate")
	var exists bool
	require.NoError(t, pool.QueryRow(ctx, "SELECT to_regclass('jobs') IS NOT NULL").Scan(&exists))
	assert.False(t, exists, "New created the table")

	require.NoError(t, pgjournal.Migrate(ctx, pool, pgjournal.Options{Table: "jobs"}))
	_, err = pool.Exec(ctx, "DROP INDEX jobs_leased; ALTER TABLE jobs DROP COLUMN trace")
	require.NoError(t, err)
	_, err = pgjournal.New(pool, pgjournal.Options{Table: "jobs"})
	require.ErrorIs(t, err, pgjournal.ErrNotMigrated)
	assert.ErrorContains(t, err, "missing column trace, index jobs_leased")

	require.NoError(t, pgjournal.Migrate(ctx, pool, pgjournal.Options{Table: "jobs"}), "Migrate completes it")
	_, err = pgjournal.New(pool, pgjournal.Options{Table: "jobs"})
	require.NoError(t, err)
}

// Migrate brings a table of an earlier version to this one: its claim
// index, which held running ops too, is replaced.
func TestMigrateReplacesTheOldIndex(t *testing.T) {
	pool := newPool(t, pg(t).NewDatabase(t))
	ctx := context.Background()
	require.NoError(t, pgjournal.Migrate(ctx, pool, pgjournal.Options{}))
	_, err := pool.Exec(ctx, "DROP INDEX outbox_ops_ready; DROP INDEX outbox_ops_leased; CREATE INDEX outbox_ops_due ON outbox_ops (next_at, id) WHERE state = 0")
	require.NoError(t, err)
	require.NoError(t, pgjournal.Migrate(ctx, pool, pgjournal.Options{}))
	var names []string
	require.NoError(t, pool.QueryRow(ctx, "SELECT array_agg(indexname::text ORDER BY indexname) FROM pg_indexes WHERE tablename = 'outbox_ops'").Scan(&names))
	assert.Equal(t, []string{"outbox_ops_key_key", "outbox_ops_leased", "outbox_ops_pkey", "outbox_ops_ready"}, names)
}

func TestNewRejectsBadOptions(t *testing.T) {
	_, err := pgjournal.New(nil, pgjournal.Options{})
	assert.ErrorContains(t, err, "nil pool")
	pool := newPool(t, pg(t).NewDatabase(t))
	for _, name := range []string{"Outbox", "a;drop table x", "a.b.c", `"q"`, "1abc"} {
		_, err := pgjournal.New(pool, pgjournal.Options{Table: name})
		assert.ErrorContains(t, err, "Options.Table", "Table %q", name)
	}
	err = pgjournal.Migrate(context.Background(), nil, pgjournal.Options{})
	assert.ErrorContains(t, err, "nil pool")
	err = pgjournal.Migrate(context.Background(), pool, pgjournal.Options{Table: "A"})
	assert.ErrorContains(t, err, "Options.Table")
}

// New on a table that is complete takes no lock on it: it asks the
// catalog, so a process starting behind an open EnqueueTx does not wait
// for it, nor make every other process's statements queue behind its DDL.
// (It ran ALTER TABLE and CREATE INDEX every time, and waited up to 30 s.)
// Migrate creates the table for teams that migrate at deploy time.
func TestNewTakesNoLockOnACompleteTable(t *testing.T) {
	pool := newPool(t, pg(t).NewDatabase(t))
	ctx := context.Background()
	require.NoError(t, pgjournal.Migrate(ctx, pool, pgjournal.Options{}))
	j, err := pgjournal.New(pool, pgjournal.Options{})
	require.NoError(t, err)
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = j.EnqueueTx(ctx, tx, outbox.Op{Kind: "charge", Payload: []byte("open")}) // holds its lock until commit
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := pgjournal.New(pool, pgjournal.Options{})
		done <- err
	}()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second): // it would wait the 30 s of its own bound
		require.FailNow(t, "New waited behind the open transaction")
	}
	require.NoError(t, tx.Commit(ctx))
}
