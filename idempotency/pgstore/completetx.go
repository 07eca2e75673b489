package pgstore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
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
// of the request waits for the commit (up to the middleware's
// StoreTimeout), and so does the lease's renewal.
//
// It runs one statement in tx on success, two when it fails. It also
// returns an error, without touching tx, for a response that the
// middleware never saves (see Lease.Result).
func (s *Store) CompleteTx(ctx context.Context, tx pgx.Tx, lease idempotency.Lease, status int, header http.Header, body []byte) error {
	if tx == nil {
		return fmt.Errorf("pgstore: CompleteTx: the transaction is nil")
	}
	return s.completeIn(ctx, lease, status, header, body, func(ctx context.Context, q string, args ...any) (int64, error) {
		tag, err := tx.Exec(ctx, q, args...)
		return tag.RowsAffected(), err
	})
}

// CompleteSQLTx is [Store.CompleteTx] for a database/sql transaction, on a
// driver for the same database (github.com/jackc/pgx/v5/stdlib or
// lib/pq), for handlers written against database/sql.
func (s *Store) CompleteSQLTx(ctx context.Context, tx *sql.Tx, lease idempotency.Lease, status int, header http.Header, body []byte) error {
	if tx == nil {
		return fmt.Errorf("pgstore: CompleteSQLTx: the transaction is nil")
	}
	return s.completeIn(ctx, lease, status, header, body, func(ctx context.Context, q string, args ...any) (int64, error) {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	})
}

// completeIn is CompleteTx on a transaction that exec runs statements in.
func (s *Store) completeIn(ctx context.Context, lease idempotency.Lease, status int, header http.Header, body []byte,
	exec func(ctx context.Context, q string, args ...any) (int64, error)) error {
	if lease.TTL <= 0 {
		return fmt.Errorf("pgstore: CompleteTx: the lease's TTL %v is not positive", lease.TTL)
	}
	result, err := lease.Result(status, header, body)
	if err != nil {
		return fmt.Errorf("pgstore: CompleteTx: %w", err)
	}
	n, err := exec(ctx, s.q.completeTx, lease.Key, lease.Token, result, micros(lease.TTL))
	if err == nil && n == 1 {
		return nil
	}
	s.abort(ctx, exec)
	if err != nil {
		if ctx.Err() != nil && errors.Is(context.Cause(ctx), idempotency.ErrLeaseLost) {
			err = errors.Join(err, idempotency.ErrLeaseLost)
		}
		return fmt.Errorf("pgstore: CompleteTx: nothing saved, roll back: %w", err)
	}
	return fmt.Errorf("pgstore: CompleteTx: the lease ran out, the key was taken over, or its result is saved already; roll back: %w",
		idempotency.ErrLeaseLost)
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
func (s *Store) abort(ctx context.Context, exec func(ctx context.Context, q string, args ...any) (int64, error)) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
	defer cancel()
	_, _ = exec(actx, s.q.abortTx)
}
