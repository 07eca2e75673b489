package pgstore

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"

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
	return s.completeIn(ctx, lease, status, header, body, func(q string, args ...any) (int64, error) {
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
	return s.completeIn(ctx, lease, status, header, body, func(q string, args ...any) (int64, error) {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	})
}

// completeIn is CompleteTx on a transaction that exec runs statements in.
func (s *Store) completeIn(ctx context.Context, lease idempotency.Lease, status int, header http.Header, body []byte,
	exec func(q string, args ...any) (int64, error)) error {
	if lease.TTL <= 0 {
		return fmt.Errorf("pgstore: CompleteTx: the lease's TTL %v is not positive", lease.TTL)
	}
	result, err := lease.Result(status, header, body)
	if err != nil {
		return fmt.Errorf("pgstore: CompleteTx: %w", err)
	}
	n, err := exec(s.q.completeTx, lease.Key, lease.Token, result, micros(lease.TTL))
	if err != nil {
		return fmt.Errorf("pgstore: CompleteTx: %w", err)
	}
	if n == 1 {
		return nil
	}
	_, _ = exec(s.q.abortTx) // its error is the point: tx can only roll back now
	return fmt.Errorf("pgstore: CompleteTx: the lease ran out, the key was taken over, or its result is saved already; roll back: %w",
		idempotency.ErrLeaseLost)
}
