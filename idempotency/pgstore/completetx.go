package pgstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stormguard/retry/idempotency"
)

// CompleteTx saves the handler's response for lease's key in tx, the
// handler's own transaction, so that it commits with the handler's
// effects or not at all: after a crash at any point, a retry either gets
// the committed response replayed or runs the handler on a clean slate.
// lease is the one [idempotency.FromContext] gives the handler; status,
// header and body are the response the handler will write once tx has
// committed, saved as the middleware would save it ([idempotency.Lease.Result]:
// the same headers left out, the same size rule).
//
// It succeeds only while lease's token holds a claim whose lease runs, on
// the database's clock. Otherwise (the lease ran out, another request took
// the key over, or the result is saved already) it returns an error that
// matches [idempotency.ErrLeaseLost] and fails tx, so that its commit rolls
// back even if the handler goes on: two handlers never both commit. The
// handler then rolls back and answers an error; the middleware answers its
// client so that its retry gets the result of the request that holds the
// key. The row stays locked until tx ends, so commit soon after: a retry
// that comes once the lease has run out waits for the commit (up to the
// middleware's StoreTimeout); a duplicate while it runs, and the lease's
// renewal, do not wait. In REPEATABLE READ or SERIALIZABLE it sees the
// lease as tx's snapshot does (see the package doc), and a takeover after
// the snapshot, a serialization failure, matches ErrLeaseLost too.
//
// It runs one statement in tx on success, two when it fails. It also
// returns an error, without touching tx, for a response that the
// middleware never saves (see Lease.Result).
func (s *Store) CompleteTx(ctx context.Context, tx pgx.Tx, lease idempotency.Lease, status int, header http.Header, body []byte) error {
	if tx == nil {
		return fmt.Errorf("pgstore: CompleteTx: the transaction is nil")
	}
	return s.completeIn(ctx, lease, status, header, body, func(ctx context.Context, q string, args ...any) row {
		return tx.QueryRow(ctx, q, args...)
	})
}

// CompleteSQLTx is [Store.CompleteTx] for a database/sql transaction, on a
// driver for the same database (github.com/jackc/pgx/v5/stdlib or
// lib/pq), for handlers written against database/sql.
func (s *Store) CompleteSQLTx(ctx context.Context, tx *sql.Tx, lease idempotency.Lease, status int, header http.Header, body []byte) error {
	if tx == nil {
		return fmt.Errorf("pgstore: CompleteSQLTx: the transaction is nil")
	}
	return s.completeIn(ctx, lease, status, header, body, func(ctx context.Context, q string, args ...any) row {
		return tx.QueryRowContext(ctx, q, args...)
	})
}

// row is what CompleteTx reads its answer with: pgx's and database/sql's.
type row interface{ Scan(dest ...any) error }

// completeIn is CompleteTx on a transaction that query runs statements in.
func (s *Store) completeIn(ctx context.Context, lease idempotency.Lease, status int, header http.Header, body []byte,
	query func(ctx context.Context, q string, args ...any) row) error {
	if lease.TTL <= 0 {
		return fmt.Errorf("pgstore: CompleteTx: the lease's TTL %v is not positive", lease.TTL)
	}
	result, err := lease.Result(status, header, body)
	if err != nil {
		return fmt.Errorf("pgstore: CompleteTx: %w", err)
	}
	var (
		saved     bool
		isolation string
	)
	err = query(ctx, s.q.completeTx, lease.Key, lease.Token, result, micros(lease.TTL)).Scan(&saved, &isolation)
	if err == nil && saved {
		return nil
	}
	s.abort(ctx, query)
	switch {
	case err != nil && serializationFailure(err):
		// REPEATABLE READ or SERIALIZABLE, and the key's row changed
		// since the snapshot: only a takeover, a release or a reap
		// writes it while the handler runs, and each means the lease is
		// lost. (A renewal writes the lease table.)
		return fmt.Errorf("pgstore: CompleteTx: the key's row changed since this transaction's snapshot (taken over, released or reaped); roll back: %w",
			errors.Join(err, idempotency.ErrLeaseLost))
	case err != nil:
		if ctx.Err() != nil && errors.Is(context.Cause(ctx), idempotency.ErrLeaseLost) {
			err = errors.Join(err, idempotency.ErrLeaseLost)
		}
		return fmt.Errorf("pgstore: CompleteTx: nothing saved, roll back: %w", err)
	case isolation != "read committed":
		return fmt.Errorf("pgstore: CompleteTx: the lease ran out, the key was taken over, or its result is saved already, "+
			"as this %s transaction's snapshot sees them (it sees the lease renewed last before its first statement); roll back: %w",
			strings.ToUpper(isolation), idempotency.ErrLeaseLost)
	}
	return fmt.Errorf("pgstore: CompleteTx: the lease ran out, the key was taken over, or its result is saved already; roll back: %w",
		idempotency.ErrLeaseLost)
}

// serializationFailure reports whether err is PostgreSQL's SQLSTATE 40001,
// from pgx or any driver whose errors tell their SQLSTATE (lib/pq).
func serializationFailure(err error) bool {
	var coded interface{ SQLState() string }
	return errors.As(err, &coded) && coded.SQLState() == "40001"
}

// abortTimeout bounds the statement that fails a transaction whose
// CompleteTx did not save.
const abortTimeout = 5 * time.Second

// abort fails the transaction, so that a handler that ignores
// CompleteTx's error cannot commit its business rows without the saved
// response. It runs on a ctx of its own: on an ended ctx the driver sends
// nothing, and the transaction would stay committable. Its own error is
// the point (the transaction can only roll back now), or says the
// connection is gone, which fails the transaction as surely.
func (s *Store) abort(ctx context.Context, query func(ctx context.Context, q string, args ...any) row) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	_ = query(actx, s.q.abortTx).Scan() // no row: the error is the point, or the connection is gone
}
