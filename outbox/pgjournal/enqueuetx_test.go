package pgjournal_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/outbox/pgjournal"
	"github.com/stormguard/retry/retrytest"
)

// counter is a pgx tracer that counts the statements sent.
type counter struct{ n atomic.Int64 }

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (*counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// shop makes the business table of the tests: an order and its op commit
// together.
func shop(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `CREATE TABLE orders (id text PRIMARY KEY, op_key text NOT NULL)`)
	require.NoError(t, err)
}

func TestEnqueueTxIsOneStatement(t *testing.T) {
	cfg, err := pgxpool.ParseConfig(pg(t).NewDatabase(t))
	require.NoError(t, err)
	c := &counter{}
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	migrate(t, pool)
	j, err := pgjournal.New(pool, pgjournal.Options{})
	require.NoError(t, err)
	shop(t, pool)

	ctx := context.Background()
	for i := range 3 { // the first also prepares the statement: count each
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		before := c.n.Load()
		key, err := j.EnqueueTx(ctx, tx, outbox.Op{Kind: "charge", Payload: []byte{byte(i)}})
		require.NoError(t, err)
		assert.Equal(t, int64(1), c.n.Load()-before, "statements sent by EnqueueTx")
		_, err = tx.Exec(ctx, `INSERT INTO orders VALUES ($1, $2)`, string(rune('a'+i)), key)
		require.NoError(t, err)
		require.NoError(t, tx.Commit(ctx))
	}
}

// The op commits with the business row, or not at all.
func TestEnqueueTxCommitsWithTheBusinessRow(t *testing.T) {
	j, pool := newJournal(t)
	shop(t, pool)
	ctx := context.Background()
	order := func(id string, commit bool) string {
		var key string
		rollback := errors.New("rollback")
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			var err error
			if key, err = j.EnqueueTx(ctx, tx, outbox.Op{Kind: "charge", Payload: []byte(id)}); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO orders VALUES ($1, $2)`, id, key); err != nil {
				return err
			}
			if !commit {
				return rollback // BeginFunc rolls back
			}
			return nil
		})
		if commit {
			require.NoError(t, err)
		} else {
			require.ErrorIs(t, err, rollback)
		}
		return key
	}
	kept := order("o1", true)
	order("o2", false)
	es, err := j.Load(ctx)
	require.NoError(t, err)
	require.Len(t, es, 1, "only the committed transaction's op")
	assert.Equal(t, kept, es[0].Op.Key)
	assert.Equal(t, "o1", string(es[0].Op.Payload))
	assert.Equal(t, outbox.Pending, es[0].State)
	assert.Equal(t, es[0].Enqueued.Add(24*time.Hour), es[0].Op.NotAfter, "the default horizon")
	var stored string
	require.NoError(t, pool.QueryRow(ctx, `SELECT op_key FROM orders WHERE id = 'o1'`).Scan(&stored))
	assert.Equal(t, kept, stored, "the order holds its op's key")
}

func TestEnqueueTxSameOpAndConflict(t *testing.T) {
	j, pool := newJournal(t)
	ctx := context.Background()
	enqueue := func(op outbox.Op) (string, error) {
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(ctx)
		key, err := j.EnqueueTx(ctx, tx, op)
		// The transaction stays usable whatever EnqueueTx answered.
		_, xerr := tx.Exec(ctx, `SELECT 1`)
		require.NoError(t, xerr, "the transaction after EnqueueTx")
		require.NoError(t, tx.Commit(ctx))
		return key, err
	}
	op := outbox.Op{Key: "order-7", Kind: "charge", Payload: []byte("7 EUR")}
	key, err := enqueue(op)
	require.NoError(t, err)
	assert.Equal(t, "order-7", key, "a caller's key is kept")
	again, err := enqueue(op)
	require.NoError(t, err)
	assert.Equal(t, key, again, "the same op enqueued again")
	_, err = enqueue(outbox.Op{Key: "order-7", Kind: "charge", Payload: []byte("9 EUR")})
	assert.ErrorIs(t, err, outbox.ErrKeyConflict)
	es, err := j.Load(ctx)
	require.NoError(t, err)
	require.Len(t, es, 1)
	assert.Equal(t, "7 EUR", string(es[0].Op.Payload))
}

func TestEnqueueTxBadInput(t *testing.T) {
	j, pool := newJournal(t)
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(ctx)
	_, err = j.EnqueueTx(ctx, tx, outbox.Op{})
	assert.ErrorIs(t, err, outbox.ErrInvalidOp, "empty Kind")
	_, err = j.EnqueueTx(ctx, tx, outbox.Op{Key: "a b", Kind: "k"})
	assert.ErrorIs(t, err, outbox.ErrInvalidOp, "bad key")
	_, err = j.EnqueueTx(ctx, nil, outbox.Op{Kind: "k"})
	assert.ErrorContains(t, err, "nil transaction")
	require.NoError(t, j.Close())
	_, err = j.EnqueueTx(ctx, tx, outbox.Op{Kind: "k"})
	assert.ErrorIs(t, err, outbox.ErrClosed)
}

// The Horizon and Clock of EnqueueTx are the Outbox's, given once to
// outbox.New: an op from a transaction gets the NotAfter an op from
// Enqueue gets, and a second Outbox over the journal with other ones is
// refused, so that the two cannot disagree. (They were pgjournal.Options
// of their own, to be kept equal to the Outbox's by hand.)
func TestEnqueueTxTakesTheOutboxsHorizonAndClock(t *testing.T) {
	j, pool := newJournal(t)
	ctx := context.Background()
	clk := retrytest.NewClock()
	o, err := outbox.New(j, outbox.Options{Horizon: time.Hour, Clock: clk})
	require.NoError(t, err)
	var key string
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		key, err = j.EnqueueTx(ctx, tx, outbox.Op{Kind: "charge"})
		return err
	}))
	fromEnqueue, err := o.Enqueue(ctx, outbox.Op{Kind: "charge"})
	require.NoError(t, err)
	es, err := j.Get(ctx, []string{key, fromEnqueue})
	require.NoError(t, err)
	require.Len(t, es, 2)
	for _, e := range es {
		assert.WithinDuration(t, clk.Now(), e.Enqueued, time.Microsecond, "enqueued at the Outbox's clock")
		assert.WithinDuration(t, clk.Now().Add(time.Hour), e.Op.NotAfter, time.Microsecond, "NotAfter at the Outbox's horizon")
	}

	_, err = outbox.New(j, outbox.Options{Horizon: 2 * time.Hour, Clock: clk})
	assert.ErrorContains(t, err, "another Horizon or Clock")
	_, err = outbox.New(j, outbox.Options{Horizon: time.Hour})
	assert.ErrorContains(t, err, "another Horizon or Clock", "the real clock, not the Outbox's")
	_, err = outbox.New(j, outbox.Options{Horizon: time.Hour, Clock: clk})
	assert.NoError(t, err, "the same defaults")
}
