package pgstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/idempotency/pgstore"
	"github.com/stretchr/testify/require"
)

// newPool returns a pool on the database at url, closed when the test
// ends; tracer, if not nil, sees every statement.
func newPool(t testing.TB, url string, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// newDB returns a pool on a new database of the package's server.
func newDB(t testing.TB) *pgxpool.Pool {
	t.Helper()
	return newPool(t, pg(t).NewDatabase(t), nil)
}

// tables makes each store's table its own, in a database tests share.
var tables atomic.Int64

// newStore returns a migrated Store on pool, in a table of its own.
func newStore(t testing.TB, pool *pgxpool.Pool) (*pgstore.Store, string) {
	t.Helper()
	table := fmt.Sprintf("keys_%d", tables.Add(1))
	s, err := pgstore.New(pool, pgstore.Options{Table: table})
	require.NoError(t, err)
	require.NoError(t, s.Migrate(context.Background()))
	return s, table
}

// advance makes d pass for every row of table and of its lease table, as
// far as the database's clock goes (leases and TTLs are nothing else in
// the store), without waiting for it: every expiry moves d closer.
func advance(t testing.TB, pool *pgxpool.Pool, table string, d time.Duration) {
	t.Helper()
	for _, tab := range []string{table, table + "_leases"} {
		_, err := pool.Exec(context.Background(),
			"UPDATE "+tab+" SET expires_at = expires_at - $1::bigint * interval '1 microsecond'", d.Microseconds())
		require.NoError(t, err)
	}
}

// advanceKey is advance for one key.
func advanceKey(t testing.TB, pool *pgxpool.Pool, table, key string, d time.Duration) {
	t.Helper()
	tag, err := pool.Exec(context.Background(),
		"UPDATE "+table+" SET expires_at = expires_at - $2::bigint * interval '1 microsecond' WHERE key = $1", key, d.Microseconds())
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected(), "key %s", key)
	_, err = pool.Exec(context.Background(),
		"UPDATE "+table+"_leases SET expires_at = expires_at - $2::bigint * interval '1 microsecond' WHERE key = $1", key, d.Microseconds())
	require.NoError(t, err)
}

// createOrders creates the business table of the tests' order service.
func createOrders(t testing.TB, pool *pgxpool.Pool) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `CREATE TABLE IF NOT EXISTS orders (id bigserial PRIMARY KEY, ref bigint NOT NULL)`)
	require.NoError(t, err)
}

// count runs a count(*) query.
func count(t testing.TB, pool *pgxpool.Pool, query string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(), query, args...).Scan(&n))
	return n
}

// order is the body of a "create order" request and of its answer.
type order struct {
	ID  int64 `json:"id,omitempty"`
	Ref int64 `json:"ref"`
}

// Points in the order service's handler, where a test can stop it.
const (
	atBegin     = "begin"     // the transaction is open; nothing is written
	atWritten   = "written"   // the order is inserted, not committed
	atSaved     = "saved"     // CompleteTx saved the response, not committed
	atCommitted = "committed" // committed, not answered
)

// orderService creates one order row for each request it runs, in a
// transaction with its saved response (CompleteTx) when store is set, or
// alone when it is not (the bare handler, and the handler under another
// store).
type orderService struct {
	pool  *pgxpool.Pool
	store *pgstore.Store
	iso   pgx.TxIsoLevel // of the handler's transaction; "" is the database's default

	// at, if set, is called at each point; an error it returns fails the
	// request there (rolled back, answered 503).
	at func(ctx context.Context, point string) error

	// commitAnyway makes the handler commit even when CompleteTx failed:
	// a handler that ignores the error, to show the commit cannot happen.
	commitAnyway bool

	mu         sync.Mutex
	commitErrs []error // of commits made after a failed CompleteTx
	txErrs     []error // errors of CompleteTx
}

func (s *orderService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var o order
	if err := json.NewDecoder(r.Body).Decode(&o); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ctx := r.Context()
	fail := func(err error) { http.Error(w, err.Error(), http.StatusServiceUnavailable) }
	at := func(point string) error {
		if s.at == nil {
			return nil
		}
		return s.at(ctx, point)
	}
	tx, err := s.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: s.iso})
	if err != nil {
		fail(err)
		return
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after the commit
	if err := at(atBegin); err != nil {
		fail(err)
		return
	}
	if err := tx.QueryRow(ctx, `INSERT INTO orders (ref) VALUES ($1) RETURNING id`, o.Ref).Scan(&o.ID); err != nil {
		fail(err)
		return
	}
	if err := at(atWritten); err != nil {
		fail(err)
		return
	}
	body, _ := json.Marshal(o)
	header := http.Header{"Content-Type": {"application/json"}, "Location": {fmt.Sprintf("/orders/%d", o.ID)}}
	if lease, ok := idempotency.FromContext(ctx); ok && s.store != nil {
		if err := s.store.CompleteTx(ctx, tx, lease, http.StatusCreated, header, body); err != nil {
			s.mu.Lock()
			s.txErrs = append(s.txErrs, err)
			s.mu.Unlock()
			if !s.commitAnyway {
				fail(err)
				return
			}
			cerr := tx.Commit(ctx)
			s.mu.Lock()
			s.commitErrs = append(s.commitErrs, cerr)
			s.mu.Unlock()
			fail(err)
			return
		}
	}
	if err := at(atSaved); err != nil {
		fail(err)
		return
	}
	if err := tx.Commit(ctx); err != nil {
		fail(err)
		return
	}
	if err := at(atCommitted); err != nil {
		fail(err)
		return
	}
	for k, v := range header {
		w.Header()[k] = v
	}
	w.WriteHeader(http.StatusCreated)
	_, _ = w.Write(body)
}

func (s *orderService) errs() (tx, commit []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]error(nil), s.txErrs...), append([]error(nil), s.commitErrs...)
}

// reply is what a request got back.
type reply struct {
	status int
	header http.Header
	body   string
}

// post sends a "create order" POST with key to srv.
func post(t testing.TB, srv *httptest.Server, key string, ref int64) reply {
	t.Helper()
	r, err := postErr(srv, key, ref)
	require.NoError(t, err)
	return r
}

func postErr(srv *httptest.Server, key string, ref int64) (reply, error) {
	body, _ := json.Marshal(order{Ref: ref})
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/orders", strings.NewReader(string(body)))
	if err != nil {
		return reply{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(b)}, err
}

// serve starts a loopback server with h behind a middleware with opts,
// closed when the test ends.
func serve(t testing.TB, opts idempotency.Options, h http.Handler) *httptest.Server {
	t.Helper()
	m, err := idempotency.New(opts)
	require.NoError(t, err)
	srv := httptest.NewServer(m.Handler(h))
	t.Cleanup(srv.Close)
	return srv
}

// watchdog bounds how long a test waits for what happens at once when the
// code works; it is never reached then.
const watchdog = 10 * time.Second

// recv receives from ch, or fails the test if nothing comes in time.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(watchdog):
		require.FailNowf(t, "timed out", "waiting for %s", what)
		panic("unreachable")
	}
}
