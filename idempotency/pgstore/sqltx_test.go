package pgstore_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// CompleteSQLTx is CompleteTx for a handler written against database/sql:
// the order and its response commit together, and a handler whose lease
// ran out cannot commit even if it tries.
func TestCompleteSQLTxCommitsWithTheHandlersRows(t *testing.T) {
	t.Parallel()
	pool, s, table := ordersDB(t)
	db := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { _ = db.Close() })
	paused, resume := make(chan struct{}), make(chan struct{}) // for the key "late"
	commitErr := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		lease, _ := idempotency.FromContext(ctx)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer tx.Rollback() //nolint:errcheck
		var id int64
		if err := tx.QueryRowContext(ctx, "INSERT INTO orders (ref) VALUES (1) RETURNING id").Scan(&id); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if r.Header.Get("Idempotency-Key") == "late" {
			close(paused)
			select {
			case <-resume:
			case <-time.After(watchdog): // a failed test must not hang its server's Close
			}
		}
		body := []byte(`{"id":` + strconv.FormatInt(id, 10) + `}`)
		if err := s.CompleteSQLTx(ctx, tx, lease, http.StatusCreated, nil, body); err != nil {
			commitErr <- tx.Commit() // a handler that ignores the error
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if err := tx.Commit(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(body)
	})
	srv := serve(t, idempotency.Options{Store: s, Clock: clock.NewMock()}, h)

	first := post(t, srv, "k", 1)
	require.Equal(t, http.StatusCreated, first.status, first.body)
	again := post(t, srv, "k", 1)
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, first.body, again.body)
	assert.Equal(t, 1, count(t, pool, "SELECT count(*) FROM orders"))

	late := make(chan reply, 1)
	go func() {
		r, _ := postErr(srv, "late", 1)
		late <- r
	}()
	recv(t, paused, "the handler to pause")
	advance(t, pool, table, time.Minute)
	close(resume)
	assert.Equal(t, http.StatusServiceUnavailable, recv(t, late, "the late answer").status)
	assert.Error(t, recv(t, commitErr, "the commit after a failed CompleteSQLTx"))
	assert.Equal(t, 1, count(t, pool, "SELECT count(*) FROM orders"), "the late order rolled back")
}
