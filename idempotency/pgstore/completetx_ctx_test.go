package pgstore_test

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/idempotency"
)

// A CompleteTx on a ctx that has ended sends nothing, but it must still
// leave the transaction unable to commit: the middleware ends the
// handler's ctx with cause ErrLeaseLost the moment a paused process wakes
// past its lease, and a handler that commits on context.WithoutCancel
// would otherwise commit an order whose response is never saved, and a
// retry would make a second. The error says the lease was lost when that
// is the ctx's cause.
func TestCompleteTxOnAnEndedCtxCannotCommit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		cause error
		want  error
	}{
		{"lease lost", idempotency.ErrLeaseLost, idempotency.ErrLeaseLost},
		{"canceled", nil, context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pool, s, _ := ordersDB(t)
			errs := make(chan error, 2)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				lease, _ := idempotency.FromContext(r.Context())
				ctx, cancel := context.WithCancelCause(r.Context())
				defer cancel(nil)
				bg := context.WithoutCancel(ctx)
				tx, err := pool.Begin(bg)
				if err != nil {
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
					return
				}
				defer tx.Rollback(bg) //nolint:errcheck
				if _, err := tx.Exec(bg, "INSERT INTO orders (ref) VALUES (1)"); err != nil {
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
					return
				}
				cancel(tc.cause)
				errs <- s.CompleteTx(ctx, tx, lease, http.StatusCreated, nil, []byte(`{"id":1}`))
				errs <- tx.Commit(bg) // a handler that ignores the error
				w.WriteHeader(http.StatusServiceUnavailable)
			})
			srv := serve(t, idempotency.Options{Store: s}, h)
			post(t, srv, "k", 1)
			err := recv(t, errs, "CompleteTx")
			require.Error(t, err)
			assert.ErrorIs(t, err, tc.want)
			commit := recv(t, errs, "the commit")
			require.Error(t, commit, "the commit must fail")
			assert.ErrorIs(t, commit, pgx.ErrTxCommitRollback)
			assert.Zero(t, count(t, pool, "SELECT count(*) FROM orders"), "no order without its saved response")
		})
	}
}

// A handler that commits its response with CompleteTx and writes nothing
// itself: the first client gets exactly what every replay gets, the
// saved 201, not net/http's empty 200. If its transaction rolled back
// instead, nothing was done: the client is told to retry, the key is
// free, and the retry runs the handler again.
func TestFirstAnswerAfterCompleteTxIsTheSavedOne(t *testing.T) {
	t.Parallel()
	pool, s, _ := ordersDB(t)
	var rollBack atomic.Bool
	rollBack.Store(true)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lease, _ := idempotency.FromContext(r.Context())
		ctx := r.Context()
		tx, err := pool.Begin(ctx)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		var id int64
		if err := tx.QueryRow(ctx, "INSERT INTO orders (ref) VALUES (1) RETURNING id").Scan(&id); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		header := http.Header{"Content-Type": {"application/json"}}
		if err := s.CompleteTx(ctx, tx, lease, http.StatusCreated, header, []byte(fmt.Sprintf(`{"id":%d}`, id))); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if rollBack.Swap(false) {
			return // the deferred Rollback: nothing committed, nothing written
		}
		_ = tx.Commit(ctx) // and writes nothing: the middleware sends the saved response
	})
	srv := serve(t, idempotency.Options{Store: s}, h)

	rolled := post(t, srv, "k", 1)
	assert.Equal(t, http.StatusServiceUnavailable, rolled.status, rolled.body)
	assert.Zero(t, count(t, pool, "SELECT count(*) FROM orders"))

	first := post(t, srv, "k", 1)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	assert.Equal(t, "application/json", first.header.Get("Content-Type"))
	assert.Empty(t, first.header.Get(idempotency.ReplayedHeader), "the first answer is not a replay")
	again := post(t, srv, "k", 1)
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, again.status, first.status)
	assert.Equal(t, again.body, first.body, "the first client gets what replays get")
	assert.Equal(t, 1, count(t, pool, "SELECT count(*) FROM orders"))
}
