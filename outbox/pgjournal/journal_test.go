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
		return func() (outbox.Journal, error) { return pgjournal.New(pool, pgjournal.Options{}) }
	})
}

func TestNewCreatesTheTableOnce(t *testing.T) {
	pool := newPool(t, pg(t).NewDatabase(t))
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs { // processes starting together
		wg.Go(func() { _, errs[i] = pgjournal.New(pool, pgjournal.Options{Table: "shop.outbox"}) })
	}
	_, err := pool.Exec(context.Background(), "CREATE SCHEMA shop")
	require.NoError(t, err)
	wg.Wait()
	// Some may have run before the schema existed; none may fail another way.
	for _, err := range errs {
		if err != nil {
			assert.ErrorContains(t, err, "shop")
		}
	}
	j, err := pgjournal.New(pool, pgjournal.Options{Table: "shop.outbox"})
	require.NoError(t, err)
	require.NoError(t, j.Add(context.Background(), journaltest.Entry("k", 1)))
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT count(*) FROM shop.outbox").Scan(&n))
	assert.Equal(t, 1, n, "rows in the table New created")
}

func TestNewRejectsBadOptions(t *testing.T) {
	_, err := pgjournal.New(nil, pgjournal.Options{})
	assert.ErrorContains(t, err, "nil pool")
	pool := newPool(t, pg(t).NewDatabase(t))
	for _, name := range []string{"Outbox", "a;drop table x", "a.b.c", `"q"`, "1abc"} {
		_, err := pgjournal.New(pool, pgjournal.Options{Table: name})
		assert.ErrorContains(t, err, "Options.Table", "Table %q", name)
	}
	_, err = pgjournal.New(pool, pgjournal.Options{Horizon: -1})
	assert.ErrorContains(t, err, "Horizon")
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
