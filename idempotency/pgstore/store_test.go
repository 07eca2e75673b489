package pgstore_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/idempotency/internal/storetest"
	"github.com/stormguard/retry/idempotency/pgstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStoreKeepsTheStoreContract(t *testing.T) {
	t.Parallel()
	pool := newDB(t)
	storetest.Run(t, storetest.Harness{
		New: func(t *testing.T) (idempotency.Store, func(time.Duration)) {
			s, table := newStore(t, pool)
			return s, func(d time.Duration) { advance(t, pool, table, d) }
		},
		RenewsOwnResult: true, // CompleteTx's commit, and the handler still runs
		Lease:           10 * time.Second,
	})
}

func TestNewRejectsInvalidOptions(t *testing.T) {
	t.Parallel()
	_, err := pgstore.New(nil, pgstore.Options{})
	require.ErrorIs(t, err, idempotency.ErrInvalidOptions, "a nil pool")

	// A pool that never connects: New does not contact the database.
	pool, err := pgxpool.New(context.Background(), "postgres://nobody@127.0.0.1:1/none")
	require.NoError(t, err)
	defer pool.Close()
	for _, tc := range []struct {
		opts pgstore.Options
		want string
	}{
		{pgstore.Options{Table: "Keys"}, "Table"},
		{pgstore.Options{Table: `keys"; DROP TABLE orders; --`}, "Table"},
		{pgstore.Options{Table: "a.b.c"}, "Table"},
		{pgstore.Options{Table: ".keys"}, "Table"},
		{pgstore.Options{Table: "1keys"}, "Table"},
		{pgstore.Options{Table: strings.Repeat("k", 53)}, "Table"},
		{pgstore.Options{ReapBatch: -1}, "ReapBatch"},
	} {
		_, err := pgstore.New(pool, tc.opts)
		require.ErrorIs(t, err, idempotency.ErrInvalidOptions, "%+v", tc.opts)
		assert.Contains(t, err.Error(), tc.want)
	}
	for _, table := range []string{"", "keys", "billing.idempotency_keys", strings.Repeat("k", 52)} {
		_, err := pgstore.New(pool, pgstore.Options{Table: table})
		assert.NoError(t, err, "Table %q", table)
	}
}

func TestStoreRefusesBadDurations(t *testing.T) {
	t.Parallel()
	s, _ := newStore(t, newDB(t))
	ctx := context.Background()
	k, tok := storetest.Key("k"), storetest.Token()
	_, err := s.Claim(ctx, k, tok, []byte("fp"), 0)
	assert.Error(t, err)
	_, err = s.Claim(ctx, k, tok, []byte("fp"), -time.Second)
	assert.Error(t, err)
	assert.Error(t, s.Renew(ctx, k, tok, 0))
	assert.Error(t, s.Complete(ctx, k, tok, []byte("fp"), []byte("r"), 0))
	c, err := s.Claim(ctx, k, tok, []byte("fp"), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, idempotency.Acquired, c.State, "nothing was written by the refused calls")
}

func TestMigrateIsSafeToRunConcurrentlyAndAgain(t *testing.T) {
	t.Parallel()
	pool := newDB(t)
	ctx := context.Background()
	_, err := pool.Exec(ctx, "CREATE SCHEMA billing")
	require.NoError(t, err)
	s, err := pgstore.New(pool, pgstore.Options{Table: "billing.idempotency_keys"})
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = s.Migrate(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
	require.NoError(t, s.Migrate(ctx), "again")
	assert.Equal(t, 1, count(t, pool,
		`SELECT count(*) FROM pg_indexes WHERE schemaname = 'billing' AND tablename = 'idempotency_keys' AND indexdef LIKE '%(expires_at)%'`),
		"the index Reap needs")
	c, err := s.Claim(ctx, storetest.Key("k"), storetest.Token(), []byte("fp"), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, idempotency.Acquired, c.State)
}

func TestLeasesAreCheckedOnTheDatabaseClock(t *testing.T) {
	t.Parallel()
	pool := newDB(t)
	s, table := newStore(t, pool)
	ctx := context.Background()
	k, tok := storetest.Key("k"), storetest.Token()
	_, err := s.Claim(ctx, k, tok, []byte("fp"), time.Hour)
	require.NoError(t, err)
	var left time.Duration
	require.NoError(t, pool.QueryRow(ctx, "SELECT extract(epoch FROM expires_at - clock_timestamp())::float8 * 1e9 FROM "+table).Scan(&left))
	assert.InDelta(t, float64(time.Hour), float64(left), float64(time.Minute), "the lease runs from the database's now")
	// The row's expiry, on the database's clock, is all that counts: the
	// client's clock is never asked.
	advance(t, pool, table, time.Hour)
	c, err := s.Claim(ctx, k, storetest.Token(), []byte("fp"), time.Hour)
	require.NoError(t, err)
	assert.Equal(t, idempotency.Acquired, c.State, "taken over once the database says the lease ran out")
}
