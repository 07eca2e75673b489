package pgjournal

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
)

// Options configure a [Journal]. The zero Options are ready to use.
type Options struct {
	// Table is the table's name, perhaps with its schema ("jobs.outbox"):
	// lower-case letters, digits and underscores [outbox_ops].
	Table string

	// Horizon is how long after EnqueueTx an op with a zero NotAfter is
	// given up [24h]; keep it equal to the Outbox's Options.Horizon.
	Horizon time.Duration

	// Clock is the time source of EnqueueTx [the real clock]; give it the
	// Outbox's.
	Clock retry.Clock
}

// Journal is an [outbox.SharedJournal] in one PostgreSQL table, shared by
// every process that opens it with the same table name. See the package
// doc for the table and how each call uses it.
//
// Its methods are safe for concurrent use. The caller owns the pool:
// Close does not close it.
type Journal struct {
	pool    *pgxpool.Pool
	sql     sqlText
	horizon time.Duration
	clock   retry.Clock
	closed  atomic.Bool
}

var _ outbox.SharedJournal = (*Journal)(nil)

// New returns a Journal over the table opts.Table in pool's database,
// creating the table and its index when missing (under an advisory lock,
// so that processes starting together do not race).
func New(pool *pgxpool.Pool, opts Options) (*Journal, error) {
	if pool == nil {
		return nil, errors.New("pgjournal: New with a nil pool")
	}
	if opts.Table == "" {
		opts.Table = "outbox_ops"
	}
	q, err := newSQL(opts.Table)
	if err != nil {
		return nil, err
	}
	j := &Journal{pool: pool, sql: q, horizon: opts.Horizon, clock: opts.Clock}
	switch {
	case j.horizon < 0:
		return nil, fmt.Errorf("pgjournal: Options.Horizon %v is negative", j.horizon)
	case j.horizon == 0:
		j.horizon = 24 * time.Hour
	}
	if j.clock == nil {
		j.clock = realClock{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), createTimeout)
	defer cancel()
	// The catalog first: when the table is there, as it is for every
	// process but the first, New takes no lock on it. DDL (ALTER TABLE,
	// CREATE INDEX) would wait behind any open EnqueueTx, and every other
	// process's enqueues, claims and renewals would queue behind it.
	var ready bool
	if err := pool.QueryRow(ctx, q.ready).Scan(&ready); err != nil {
		return nil, fmt.Errorf("pgjournal: look up table %s: %w", q.table, err)
	}
	if !ready {
		if err := migrate(ctx, pool, q); err != nil {
			return nil, err
		}
	}
	return j, nil
}

// Migrate creates the journal's table, its columns and its index where
// they are missing, as New does for a table it does not find (the SQL is
// in the package doc, for teams that run their own migrations). Run it at
// deploy time, or from every process at start-up: a transaction-scoped
// advisory lock makes concurrent runs take turns. Its statements wait for
// open transactions on the table; New, which asks the catalog first, does
// not run them when the table is complete.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts Options) error {
	if pool == nil {
		return errors.New("pgjournal: Migrate with a nil pool")
	}
	if opts.Table == "" {
		opts.Table = "outbox_ops"
	}
	q, err := newSQL(opts.Table)
	if err != nil {
		return err
	}
	return migrate(ctx, pool, q)
}

func migrate(ctx context.Context, pool *pgxpool.Pool, q sqlText) error {
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, q.lock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, q.create)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgjournal: create table %s: %w", q.table, err)
	}
	return nil
}

// createTimeout bounds New's work on the database.
const createTimeout = 30 * time.Second

func (j *Journal) check() error {
	if j.closed.Load() {
		return fmt.Errorf("pgjournal: %w", outbox.ErrClosed)
	}
	return nil
}

// Add inserts e's op, with no lease; it fails with an error matching
// outbox.ErrDuplicate, and changes nothing, when the table holds its key.
func (j *Journal) Add(ctx context.Context, e outbox.Entry) error {
	if err := j.check(); err != nil {
		return err
	}
	tag, err := j.pool.Exec(ctx, j.sql.add, args(e)...)
	if err != nil {
		return fmt.Errorf("pgjournal: add: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return outbox.ErrDuplicate
	}
	return nil
}

// Update writes e's progress, fenced by e.Lease: see
// [outbox.SharedJournal].
func (j *Journal) Update(ctx context.Context, e outbox.Entry) error {
	if err := j.check(); err != nil {
		return err
	}
	a := args(e)
	tag, err := j.pool.Exec(ctx, j.sql.update, e.Op.Key, a[3], a[4], a[5], a[6], a[7], a[9], a[10], a[11], nullText(e.Lease), a[12])
	if err != nil {
		return fmt.Errorf("pgjournal: update: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	// Why not: a rare path, worth a second statement.
	var lease string
	switch err := j.pool.QueryRow(ctx, j.sql.owner, e.Op.Key).Scan(&lease); {
	case errors.Is(err, pgx.ErrNoRows):
		return errors.New("pgjournal: update of a key the journal does not hold")
	case err != nil:
		return fmt.Errorf("pgjournal: update: %w", err)
	}
	return outbox.ErrLeaseLost
}

// Load returns every op in the table, in the order they were added.
func (j *Journal) Load(ctx context.Context) ([]outbox.Entry, error) {
	if err := j.check(); err != nil {
		return nil, err
	}
	rows, err := j.pool.Query(ctx, j.sql.load)
	if err != nil {
		return nil, fmt.Errorf("pgjournal: load: %w", err)
	}
	es, _, err := scanAll(rows)
	if err != nil {
		return nil, fmt.Errorf("pgjournal: load: %w", err)
	}
	return es, nil
}

// Close makes later calls fail with an error matching outbox.ErrClosed.
// It does not close the pool, which is the caller's.
func (j *Journal) Close() error {
	j.closed.Store(true)
	return nil
}

// args are the insert's parameters for e, $1 to $13.
func args(e outbox.Entry) []any {
	payload := e.Op.Payload
	if payload == nil {
		payload = []byte{}
	}
	return []any{e.Op.Key, e.Op.Kind, payload, e.Op.NotAfter, int16(e.State), e.Attempts,
		nullTime(e.Next), int64(e.LastWait), e.Enqueued, nullTime(e.Finished), e.Reason, e.LastError, encodeTrace(e.Trace)}
}

func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t
}

func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// scanAll reads rows of cols, returning the entries and their ids.
func scanAll(rows pgx.Rows) ([]outbox.Entry, []int64, error) {
	defer rows.Close()
	var es []outbox.Entry
	var ids []int64
	for rows.Next() {
		var e outbox.Entry
		var id int64
		var state int16
		var lastWait int64
		var next, finished pgtype.Timestamptz
		var trace []byte
		if err := rows.Scan(&id, &e.Op.Key, &e.Op.Kind, &e.Op.Payload, &e.Op.NotAfter, &state, &e.Attempts,
			&next, &lastWait, &e.Enqueued, &finished, &e.Reason, &e.LastError, &e.Lease, &trace); err != nil {
			return nil, nil, err
		}
		t, err := decodeTrace(trace)
		if err != nil {
			return nil, nil, err
		}
		e.Trace = t
		e.State, e.LastWait = outbox.State(state), time.Duration(lastWait)
		if next.Valid {
			e.Next = next.Time
		}
		if finished.Valid {
			e.Finished = finished.Time
		}
		es = append(es, e)
		ids = append(ids, id)
	}
	return es, ids, rows.Err()
}

// realClock is the real time, when Options set no Clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(parent, d)
}
func (realClock) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(parent, d)
}
