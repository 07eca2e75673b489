package pgjournal

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
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
}

// Journal is an [outbox.SharedJournal] in one PostgreSQL table, shared by
// every process that opens it with the same table name. See the package
// doc for the table and how each call uses it.
//
// The Horizon and Clock of EnqueueTx and Reap are the Outbox's: outbox.New
// gives them to the Journal (see [outbox.DefaultsJournal]). Until then
// they are 24h and the real clock.
//
// Its methods are safe for concurrent use. The caller owns the pool:
// Close does not close it.
type Journal struct {
	pool     *pgxpool.Pool
	sql      sqlText
	defaults atomic.Pointer[outbox.Defaults] // nil until an Outbox gives its own
	notices  notices
	batch    batcher
	closed   atomic.Bool
}

var (
	_ outbox.SharedJournal   = (*Journal)(nil)
	_ outbox.DefaultsJournal = (*Journal)(nil)
)

// ErrNotMigrated is matched by the error of [New] on a database whose
// table, or one of its columns or indexes, is missing: run [Migrate].
var ErrNotMigrated = errors.New("pgjournal: the table is not migrated (run pgjournal.Migrate)")

// New returns a Journal over the table opts.Table in pool's database. It
// asks the catalog, which takes no lock on the table, that the table, its
// columns and its indexes are there, and fails with an error matching
// [ErrNotMigrated], naming what is missing, when they are not: [Migrate]
// makes them. New runs no DDL, so that a process starting behind an open
// transaction on the table neither waits for it nor makes every other
// process's statements queue behind its own.
func New(pool *pgxpool.Pool, opts Options) (*Journal, error) {
	if pool == nil {
		return nil, errors.New("pgjournal: New with a nil pool")
	}
	q, err := sqlFor(opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), newTimeout)
	defer cancel()
	var missing []string
	if err := pool.QueryRow(ctx, q.ready, columns).Scan(&missing); err != nil {
		return nil, fmt.Errorf("pgjournal: look up table %s: %w", q.table, err)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: missing %s", ErrNotMigrated, strings.Join(missing, ", "))
	}
	return &Journal{pool: pool, sql: q}, nil
}

// Migrate creates the journal's table, its columns and its indexes where
// they are missing, and drops the index of earlier versions (the SQL is
// in the package doc, for teams that run their own migrations). Run it at
// deploy time, before the processes that call [New]; it is safe to run
// from several at once: a transaction-scoped advisory lock makes them take
// turns. Its statements wait for the open transactions on the table, and
// the statements on the table wait for them.
func Migrate(ctx context.Context, pool *pgxpool.Pool, opts Options) error {
	if pool == nil {
		return errors.New("pgjournal: Migrate with a nil pool")
	}
	q, err := sqlFor(opts)
	if err != nil {
		return err
	}
	err = pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, q.lock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, q.create)
		return err
	})
	if err != nil {
		return fmt.Errorf("pgjournal: migrate %s: %w", q.table, err)
	}
	return nil
}

func sqlFor(opts Options) (sqlText, error) {
	if opts.Table == "" {
		opts.Table = "outbox_ops"
	}
	return newSQL(opts.Table)
}

// UseDefaults takes an Outbox's Horizon and Clock for EnqueueTx and Reap;
// outbox.New calls it. It fails when the Journal has other defaults
// already, from another Outbox: one journal, one Horizon and one Clock.
func (j *Journal) UseDefaults(d outbox.Defaults) error {
	if d.Horizon <= 0 || d.Clock == nil {
		return fmt.Errorf("pgjournal: defaults with a Horizon of %v and a Clock of %v", d.Horizon, d.Clock)
	}
	if j.defaults.CompareAndSwap(nil, &d) {
		return nil
	}
	old := j.defaults.Load()
	if old.Horizon != d.Horizon || !sameClock(old.Clock, d.Clock) {
		return fmt.Errorf("pgjournal: the journal serves an Outbox with another Horizon or Clock (%v, not %v): give every Outbox over one Journal the same", old.Horizon, d.Horizon)
	}
	return nil
}

// sameClock says whether a and b are one clock; clocks of a type that
// cannot be compared are the same only as the same value of a pointer.
func sameClock(a, b retry.Clock) bool {
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	if ta != tb || !ta.Comparable() {
		return false
	}
	return a == b
}

// now and horizon are the defaults' (see UseDefaults); without them,
// horizon is 0, which outbox.NewEntry takes as its 24h.
func (j *Journal) now() time.Time {
	if d := j.defaults.Load(); d != nil {
		return d.Clock.Now()
	}
	return time.Now()
}

func (j *Journal) horizon() time.Duration {
	if d := j.defaults.Load(); d != nil {
		return d.Horizon
	}
	return 0
}

// newTimeout bounds New's look-up in the catalog.
const newTimeout = 30 * time.Second

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
	q := j.sql.addQuiet
	if j.notices.take() {
		q = j.sql.add
	}
	var n int64
	err := j.pool.QueryRow(ctx, q, args(e)...).Scan(&n)
	j.notices.done()
	if err != nil {
		return fmt.Errorf("pgjournal: add: %w", err)
	}
	if n == 0 {
		return outbox.ErrDuplicate
	}
	return nil
}

// Update writes e's progress, fenced by e.Lease: see
// [outbox.SharedJournal]. Concurrent Updates and Releases share one
// statement and one commit (batch.go); each returns once its own write is
// committed.
func (j *Journal) Update(ctx context.Context, e outbox.Entry) error {
	if err := j.check(); err != nil {
		return err
	}
	return j.submit(ctx, &write{e: e})
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
