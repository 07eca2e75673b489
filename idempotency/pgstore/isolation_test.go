package pgstore_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/benbjohnson/clock"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/idempotency"
)

// renewals is a Store that says on renewed what each Renew returned.
type renewals struct {
	idempotency.Store
	renewed chan error
}

func (r *renewals) Renew(ctx context.Context, key, token string, lease time.Duration) error {
	err := r.Store.Renew(ctx, key, token, lease)
	r.renewed <- err
	return err
}

// A handler whose transaction runs in REPEATABLE READ or SERIALIZABLE and
// spans a renewal of its lease commits: the renewal does not write the
// row that CompleteTx updates, so CompleteTx is no serialization failure.
func TestCompleteTxCommitsAcrossARenewalInEveryIsolation(t *testing.T) {
	t.Parallel()
	for _, iso := range []pgx.TxIsoLevel{pgx.ReadCommitted, pgx.RepeatableRead, pgx.Serializable} {
		t.Run(string(iso), func(t *testing.T) {
			t.Parallel()
			pool, s, _ := ordersDB(t)
			clk := clock.NewMock()
			store := &renewals{Store: s, renewed: make(chan error, 4)}
			const lease = 3 * time.Second
			wrote, renewed := make(chan struct{}), make(chan struct{})
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ctx := r.Context()
				lease, _ := idempotency.FromContext(ctx)
				fail := func(err error) { http.Error(w, err.Error(), http.StatusServiceUnavailable) }
				tx, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: iso})
				if err != nil {
					fail(err)
					return
				}
				defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
				// The first statement takes the snapshot, before the renewal.
				if _, err := tx.Exec(ctx, "INSERT INTO orders (ref) VALUES (1)"); err != nil {
					fail(err)
					return
				}
				close(wrote)
				<-renewed
				if err := s.CompleteTx(ctx, tx, lease, http.StatusCreated, nil, []byte(`{"id":1}`)); err != nil {
					fail(err)
					return
				}
				if err := tx.Commit(ctx); err != nil {
					fail(err)
					return
				}
				w.WriteHeader(http.StatusCreated)
				_, _ = w.Write([]byte(`{"id":1}`))
			})
			srv := serve(t, idempotency.Options{Store: store, Lease: lease, Clock: clk}, h)
			answer := make(chan reply, 1)
			go func() {
				r, _ := postErr(srv, "k", 1)
				answer <- r
			}()
			recv(t, wrote, "the handler's first statement")
			clk.Add(lease / 2) // past a third of the lease: the renewal runs
			require.NoError(t, recv(t, store.renewed, "the renewal"))
			close(renewed)
			got := recv(t, answer, "the answer")
			require.Equal(t, http.StatusCreated, got.status, got.body)
			assert.Equal(t, 1, count(t, pool, "SELECT count(*) FROM orders"))
			again := post(t, srv, "k", 1)
			assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
			assert.Equal(t, `{"id":1}`, again.body)
		})
	}
}

// A duplicate that arrives (at another process) while the first request
// is between CompleteTx and its commit is told at once that the key is in
// flight: 409, not a wait on the row's lock that ends in 503 and holds a
// connection meanwhile. A renewal in that window does not wait either.
func TestDuplicateBetweenCompleteTxAndCommitGets409AtOnce(t *testing.T) {
	t.Parallel()
	pool, s, table := ordersDB(t)
	at, paused, resume := pausing(atSaved)
	svc := &orderService{pool: pool, store: s, at: at}
	srv := serve(t, idempotency.Options{Store: s}, svc)
	other := serve(t, idempotency.Options{Store: s}, svc) // another process

	first := make(chan reply, 1)
	go func() {
		r, _ := postErr(srv, "k", 1)
		first <- r
	}()
	recv(t, paused, "the handler to pause after CompleteTx")
	dup := post(t, other, "k", 1)
	assert.Equal(t, http.StatusConflict, dup.status, dup.body)

	var key, token string
	require.NoError(t, pool.QueryRow(context.Background(), "SELECT key, token FROM "+table).Scan(&key, &token))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // never reached when it works
	defer cancel()
	assert.NoError(t, s.Renew(ctx, key, token, time.Minute), "the renewal does not wait for the commit")

	close(resume)
	committed := recv(t, first, "the first answer")
	require.Equal(t, http.StatusCreated, committed.status, committed.body)
	again := post(t, other, "k", 1)
	assert.Equal(t, "true", again.header.Get(idempotency.ReplayedHeader))
	assert.Equal(t, committed.body, again.body)
	assert.Equal(t, 1, count(t, pool, "SELECT count(*) FROM orders"))
}

// After CompleteTx has committed, a slow step after the commit (sending
// mail, say) keeps its ctx: the renewal finds the key completed with the
// request's own token and is no lost lease.
func TestRenewalAfterCommittedCompleteTxKeepsTheHandlersCtx(t *testing.T) {
	t.Parallel()
	pool, s, _ := ordersDB(t)
	clk := clock.NewMock()
	store := &renewals{Store: s, renewed: make(chan error, 4)}
	const lease = 3 * time.Second
	committed, renewed := make(chan struct{}), make(chan struct{})
	causes := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		lease, _ := idempotency.FromContext(ctx)
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, "INSERT INTO orders (ref) VALUES (1)"); err != nil {
				return err
			}
			return s.CompleteTx(ctx, tx, lease, http.StatusCreated, nil, []byte(`{"id":1}`))
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		close(committed)
		<-renewed // the slow step after the commit
		causes <- context.Cause(ctx)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":1}`))
	})
	srv := serve(t, idempotency.Options{Store: store, Lease: lease, Clock: clk}, h)
	answer := make(chan reply, 1)
	go func() {
		r, _ := postErr(srv, "k", 1)
		answer <- r
	}()
	recv(t, committed, "the commit")
	clk.Add(lease / 2)
	renewErr := recv(t, store.renewed, "the renewal")
	close(renewed)
	assert.NoError(t, renewErr, "a key completed with the request's own token is not a lost lease")
	cause := recv(t, causes, "the handler's ctx")
	assert.False(t, errors.Is(cause, idempotency.ErrLeaseLost), "the handler's ctx ended: %v", cause)
	assert.NoError(t, cause)
	got := recv(t, answer, "the answer")
	assert.Equal(t, http.StatusCreated, got.status, got.body)
	assert.Equal(t, 1, count(t, pool, "SELECT count(*) FROM orders"))
}

// Under REPEATABLE READ and SERIALIZABLE, CompleteTx sees the lease as the
// transaction's snapshot does: a renewal committed after the snapshot is
// not seen, and a lease that had run out as of the snapshot fails clearly,
// naming the isolation level. Under READ COMMITTED it sees the renewal.
func TestCompleteTxSeesTheLeaseAsItsSnapshotDoes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		iso   pgx.TxIsoLevel
		saved bool
	}{{pgx.ReadCommitted, true}, {pgx.RepeatableRead, false}, {pgx.Serializable, false}} {
		t.Run(string(tc.iso), func(t *testing.T) {
			t.Parallel()
			pool, s, table := ordersDB(t)
			ctx := context.Background()
			at, paused, resume := pausing(atWritten)
			svc := &orderService{pool: pool, store: s, iso: tc.iso, at: func(ctx context.Context, point string) error {
				if point == atBegin {
					// Before the snapshot: the lease has run out, and a
					// renewal (a row of the lease table) has too.
					var key, token string
					if err := pool.QueryRow(ctx, "SELECT key, token FROM "+table).Scan(&key, &token); err != nil {
						return err
					}
					if err := s.Renew(ctx, key, token, time.Minute); err != nil {
						return err
					}
					for _, tab := range []string{table, table + "_leases"} {
						if _, err := pool.Exec(ctx, "UPDATE "+tab+" SET expires_at = expires_at - interval '1 hour'"); err != nil {
							return err
						}
					}
				}
				return at(ctx, point)
			}}
			srv := serve(t, idempotency.Options{Store: s, Clock: clock.NewMock()}, svc)
			answer := make(chan reply, 1)
			go func() {
				r, _ := postErr(srv, "k", 1)
				answer <- r
			}()
			recv(t, paused, "the handler after its snapshot")
			// A renewal the snapshot does not see.
			_, err := pool.Exec(ctx, "UPDATE "+table+"_leases SET expires_at = clock_timestamp() + interval '1 minute'")
			require.NoError(t, err)
			close(resume)
			got := recv(t, answer, "the answer")
			txErrs, _ := svc.errs()
			if tc.saved {
				assert.Equal(t, http.StatusCreated, got.status, got.body)
				assert.Empty(t, txErrs)
				return
			}
			assert.Equal(t, http.StatusServiceUnavailable, got.status, got.body)
			require.Len(t, txErrs, 1)
			assert.ErrorIs(t, txErrs[0], idempotency.ErrLeaseLost)
			assert.Contains(t, txErrs[0].Error(), strings.ToUpper(string(tc.iso))+" transaction's snapshot")
			assert.Zero(t, count(t, pool, "SELECT count(*) FROM orders"))
		})
	}
}
