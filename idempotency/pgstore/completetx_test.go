package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/idempotency/pgstore"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ordersDB returns a new database with the orders table and a migrated
// store, and the store's table.
func ordersDB(t *testing.T) (*pgxpool.Pool, *pgstore.Store, string) {
	t.Helper()
	pool := newDB(t)
	createOrders(t, pool)
	s, table := newStore(t, pool)
	return pool, s, table
}

func decodeOrder(t *testing.T, body string) order {
	t.Helper()
	var o order
	require.NoError(t, json.Unmarshal([]byte(body), &o), "body %q", body)
	return o
}

func TestBusinessRowsAndResponseCommitTogether(t *testing.T) {
	t.Parallel()
	t.Run("committed: one order, and its response replayed", func(t *testing.T) {
		t.Parallel()
		pool, s, table := ordersDB(t)
		srv := serve(t, idempotency.Options{Store: s}, &orderService{pool: pool, store: s})
		first := post(t, srv, "k", 1)
		require.Equal(t, http.StatusCreated, first.status, first.body)
		assert.Equal(t, 1, count(t, pool, "SELECT count(*) FROM orders"))
		assert.Equal(t, 1, count(t, pool, "SELECT count(*) FROM "+table+" WHERE result IS NOT NULL"), "saved with the order")
		again := post(t, srv, "k", 1)
		assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
		assert.Equal(t, first.body, again.body)
		assert.Equal(t, first.header.Get("Location"), again.header.Get("Location"))
		assert.Equal(t, 1, count(t, pool, "SELECT count(*) FROM orders"), "the replay made no order")
	})
	t.Run("rolled back after the save: neither, and the retry runs anew", func(t *testing.T) {
		t.Parallel()
		pool, s, table := ordersDB(t)
		var failed atomic.Bool
		svc := &orderService{pool: pool, store: s, at: func(_ context.Context, point string) error {
			if point == atSaved && failed.CompareAndSwap(false, true) {
				return errors.New("the handler failed after CompleteTx")
			}
			return nil
		}}
		srv := serve(t, idempotency.Options{Store: s}, svc)
		assert.Equal(t, http.StatusServiceUnavailable, post(t, srv, "k", 1).status)
		assert.Zero(t, count(t, pool, "SELECT count(*) FROM orders"))
		assert.Zero(t, count(t, pool, "SELECT count(*) FROM "+table), "no result saved; the 503 released the key")
		again := post(t, srv, "k", 1)
		require.Equal(t, http.StatusCreated, again.status, again.body)
		assert.Empty(t, again.header.Get(idempotency.ReplayedHeader), "the handler ran on a clean slate")
		assert.Equal(t, 1, count(t, pool, "SELECT count(*) FROM orders"))
	})
	t.Run("the commit fails: neither", func(t *testing.T) {
		t.Parallel()
		pool := newDB(t)
		ctx := context.Background()
		// A constraint checked at COMMIT: the insert and CompleteTx pass,
		// the commit does not.
		_, err := pool.Exec(ctx, `CREATE TABLE orders (id bigserial PRIMARY KEY, ref bigint NOT NULL,
			CONSTRAINT one_per_ref UNIQUE (ref) DEFERRABLE INITIALLY DEFERRED);
			INSERT INTO orders (ref) VALUES (5)`)
		require.NoError(t, err)
		s, table := newStore(t, pool)
		srv := serve(t, idempotency.Options{Store: s}, &orderService{pool: pool, store: s})
		assert.Equal(t, http.StatusServiceUnavailable, post(t, srv, "k", 5).status)
		assert.Equal(t, 1, count(t, pool, "SELECT count(*) FROM orders"), "the order that was there only")
		assert.Zero(t, count(t, pool, "SELECT count(*) FROM "+table+" WHERE result IS NOT NULL"), "no result without its order")
	})
}

// pausing returns an at hook that stops the first run at point until
// resume is closed, and says on paused when it got there.
func pausing(point string) (at func(context.Context, string) error, paused <-chan struct{}, resume chan struct{}) {
	p, r := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	return func(_ context.Context, at string) error {
		if at == point && first.CompareAndSwap(false, true) {
			close(p)
			select { // not ctx: a paused process does not see its ctx end either
			case <-r:
			case <-time.After(watchdog): // a failed test must not hang its server's Close
			}
		}
		return nil
	}, p, r
}

// A handler pauses (a GC pause, a stopped VM) past its lease, on the
// database's clock; the retry takes the key over and commits. The paused
// handler wakes up, and even when it ignores CompleteTx's error and
// commits, its transaction rolls back: two handlers never both commit,
// and every retry gets the takeover's response. The middleware's clock
// never moves, so it is the database's clock alone that decides.
func TestTakenOverHandlerCannotCommit(t *testing.T) {
	t.Parallel()
	for _, iso := range []pgx.TxIsoLevel{pgx.ReadCommitted, pgx.RepeatableRead, pgx.Serializable} {
		t.Run(string(iso), func(t *testing.T) {
			t.Parallel()
			takenOverCannotCommit(t, iso)
		})
	}
}

// takenOverCannotCommit is TestTakenOverHandlerCannotCommit for a handler
// whose transaction runs in iso: in REPEATABLE READ and SERIALIZABLE the
// takeover changed the key's row after the snapshot, and CompleteTx's
// serialization failure is a lost lease too.
func takenOverCannotCommit(t *testing.T, iso pgx.TxIsoLevel) {
	pool, s, table := ordersDB(t)
	at, paused, resume := pausing(atWritten)
	svc := &orderService{pool: pool, store: s, iso: iso, at: at, commitAnyway: true}
	const lease = 10 * time.Second
	srv := serve(t, idempotency.Options{Store: s, Lease: lease, Clock: clock.NewMock()}, svc)

	first := make(chan reply, 1)
	go func() {
		r, err := postErr(srv, "k", 1)
		if err != nil {
			r = reply{status: -1, body: err.Error()}
		}
		first <- r
	}()
	recv(t, paused, "the first handler to pause")
	advance(t, pool, table, lease+time.Second)

	takeover := post(t, srv, "k", 1)
	require.Equal(t, http.StatusCreated, takeover.status, takeover.body)
	won := decodeOrder(t, takeover.body)

	close(resume)
	lost := recv(t, first, "the paused request's answer")
	assert.Equal(t, http.StatusServiceUnavailable, lost.status, lost.body)
	txErrs, commitErrs := svc.errs()
	require.Len(t, txErrs, 1)
	assert.ErrorIs(t, txErrs[0], idempotency.ErrLeaseLost)
	require.Len(t, commitErrs, 1)
	assert.ErrorIs(t, commitErrs[0], pgx.ErrTxCommitRollback, "CompleteTx failed the transaction: the commit rolled back")

	var ids []int64
	rows, err := pool.Query(context.Background(), "SELECT id FROM orders")
	require.NoError(t, err)
	ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	require.NoError(t, err)
	assert.Equal(t, []int64{won.ID}, ids, "only the takeover's order exists")
	for range 3 {
		again := post(t, srv, "k", 1)
		assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
		assert.Equal(t, takeover.body, again.body, "every retry gets the takeover's response")
	}
}

// A handler whose lease ran out on the database's clock cannot commit even
// when nobody has taken its key over yet: a claim may come at any moment,
// and the check must not depend on whether it came first. The middleware's
// own clock says the lease still runs. The retry then runs on a clean
// slate, and its response is the one kept.
func TestHandlerPastItsLeaseCannotCommitEvenUntaken(t *testing.T) {
	t.Parallel()
	pool, s, table := ordersDB(t)
	at, paused, resume := pausing(atWritten)
	svc := &orderService{pool: pool, store: s, at: at}
	const lease = 10 * time.Second
	srv := serve(t, idempotency.Options{Store: s, Lease: lease, Clock: clock.NewMock()}, svc)

	first := make(chan reply, 1)
	go func() {
		r, _ := postErr(srv, "k", 1)
		first <- r
	}()
	recv(t, paused, "the handler to pause")
	advance(t, pool, table, lease+time.Second)
	close(resume)
	assert.Equal(t, http.StatusServiceUnavailable, recv(t, first, "the answer").status)
	txErrs, _ := svc.errs()
	require.Len(t, txErrs, 1)
	assert.ErrorIs(t, txErrs[0], idempotency.ErrLeaseLost)
	assert.Zero(t, count(t, pool, "SELECT count(*) FROM orders"))

	retry := post(t, srv, "k", 1)
	require.Equal(t, http.StatusCreated, retry.status, retry.body)
	assert.Equal(t, 1, count(t, pool, "SELECT count(*) FROM orders"))
	assert.Equal(t, retry.body, post(t, srv, "k", 1).body)
}

// A takeover's claim waits for the transaction that saved the result:
// once a handler's CompleteTx has run, its lease may run out before the
// commit without another request getting the key. The retry comes after
// the lease has run out on the database's clock, finds the row locked,
// waits, and gets the committed response.
func TestClaimWaitsForTheCommitOfASavedResult(t *testing.T) {
	t.Parallel()
	pool, s, table := ordersDB(t)
	at, paused, resume := pausing(atSaved)
	svc := &orderService{pool: pool, store: s, at: at}
	const lease = 50 * time.Millisecond // the mock clock renews nothing
	srv := serve(t, idempotency.Options{Store: s, Lease: lease, Clock: clock.NewMock()}, svc)
	ctx := context.Background()

	first := make(chan reply, 1)
	go func() {
		r, _ := postErr(srv, "k", 1)
		first <- r
	}()
	recv(t, paused, "the handler to pause after CompleteTx")
	// The committed version of the row is the claim: wait, on the
	// database's clock, until its lease has run out (50ms at most).
	_, err := pool.Exec(ctx, "SELECT pg_sleep(greatest(0, extract(epoch FROM max(expires_at) - clock_timestamp()))) FROM "+table)
	require.NoError(t, err)
	retried := make(chan reply, 1)
	go func() {
		r, _ := postErr(srv, "k", 1)
		retried <- r
	}()
	require.Eventually(t, func() bool {
		return count(t, pool, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'WITH live AS%'`) == 1
	}, watchdog, time.Millisecond, "the retry's claim waits for the row")
	close(resume)
	committed := recv(t, first, "the first answer")
	require.Equal(t, http.StatusCreated, committed.status, committed.body)
	r := recv(t, retried, "the retry's answer")
	assert.Equal(t, "true", r.header.Get(idempotency.ReplayedHeader), "status %d %s", r.status, r.body)
	assert.Equal(t, committed.body, r.body, "the retry got the committed response, not a second run")
	assert.Equal(t, 1, count(t, pool, "SELECT count(*) FROM orders"))
}

func TestCompleteTxRefusesWhatTheMiddlewareNeverSaves(t *testing.T) {
	t.Parallel()
	pool, s, _ := ordersDB(t)
	ctx := context.Background()
	errs := make(chan error, 4)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lease, _ := idempotency.FromContext(r.Context())
		tx, err := pool.Begin(ctx)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		errs <- s.CompleteTx(ctx, tx, lease, http.StatusServiceUnavailable, nil, nil)
		errs <- s.CompleteTx(ctx, tx, idempotency.Lease{Key: lease.Key, Token: lease.Token, TTL: time.Hour}, http.StatusOK, nil, nil)
		errs <- s.CompleteTx(ctx, nil, lease, http.StatusOK, nil, nil)
		// The refusals did not touch tx: it still commits.
		_, err = tx.Exec(ctx, "INSERT INTO orders (ref) VALUES (1)")
		if err == nil {
			err = tx.Commit(ctx)
		}
		errs <- err
		w.WriteHeader(http.StatusNoContent)
	})
	srv := serve(t, idempotency.Options{Store: s}, h)
	post(t, srv, "k", 1)
	assert.Error(t, recv(t, errs, "CompleteTx of a 503"), "a retryable status is never saved")
	assert.Error(t, recv(t, errs, "CompleteTx of a Lease not from FromContext"))
	assert.Error(t, recv(t, errs, "CompleteTx on a nil tx"))
	assert.NoError(t, recv(t, errs, "the commit"))
	assert.Equal(t, 1, count(t, pool, "SELECT count(*) FROM orders"))
}

// CompleteTx saves what the middleware would have saved for the same
// response: a replay of a key saved by CompleteTx and one of a key saved
// by the middleware itself are the same, Set-Cookie left out of both.
func TestCompleteTxSavesWhatTheMiddlewareWouldSave(t *testing.T) {
	t.Parallel()
	pool, s, _ := ordersDB(t)
	respond := func(inTx bool) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			header := http.Header{"Content-Type": {"application/json"}, "Set-Cookie": {"session=secret"}, "X-Order": {"a", "b"}}
			body := []byte(`{"id":1}`)
			if inTx {
				lease, _ := idempotency.FromContext(r.Context())
				err := pgx.BeginFunc(r.Context(), pool, func(tx pgx.Tx) error {
					return s.CompleteTx(r.Context(), tx, lease, http.StatusCreated, header, body)
				})
				if err != nil {
					http.Error(w, err.Error(), http.StatusServiceUnavailable)
					return
				}
			}
			for k, v := range header {
				w.Header()[k] = v
			}
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write(body)
		})
	}
	mux := http.NewServeMux()
	mux.Handle("/tx/", respond(true))
	mux.Handle("/plain/", respond(false))
	srv := serve(t, idempotency.Options{Store: s}, mux)
	replay := func(path string) reply {
		t.Helper()
		for range 2 {
			req, err := http.NewRequest(http.MethodPost, srv.URL+path, nil)
			require.NoError(t, err)
			req.Header.Set("Idempotency-Key", "k"+strings.Trim(path, "/"))
			resp, err := srv.Client().Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			if resp.Header.Get(idempotency.ReplayedHeader) == "true" {
				resp.Header.Del("Date")
				return reply{status: resp.StatusCode, header: resp.Header}
			}
		}
		require.FailNow(t, "no replay", path)
		return reply{}
	}
	inTx, plain := replay("/tx/"), replay("/plain/")
	assert.Equal(t, plain, inTx)
	assert.Empty(t, inTx.header.Get("Set-Cookie"))
	assert.Equal(t, []string{"a", "b"}, inTx.header.Values("X-Order"))
}
