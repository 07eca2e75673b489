package pgstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/idempotency/redisstore"
	"github.com/stormguard/retry/internal/redisserver"
	"github.com/stretchr/testify/require"
)

// statementCount is a pgx tracer that counts statements.
type statementCount struct{ n atomic.Int64 }

func (c *statementCount) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (*statementCount) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

var benchKeys atomic.Int64

// BenchmarkFreshKey is the cost of a request with a fresh key whose
// handler writes one order row in a transaction: the bare handler (no
// middleware, no key), the middleware with this store (the claim, and
// CompleteTx in the handler's transaction), and the middleware with the
// Redis store (a claim and a complete in Redis; the row in PostgreSQL).
// Both servers run on loopback. pg-stmts/op counts the statements
// PostgreSQL ran for each request, BEGIN and COMMIT included.
func BenchmarkFreshKey(b *testing.B) {
	url := pg(b).NewDatabase(b)
	counter := &statementCount{}
	pool := newPool(b, url, counter)
	createOrders(b, pool)
	s, _ := newStore(b, pool)
	rdb := redis.NewClient(&redis.Options{Addr: redisserver.Start(b).Addr})
	b.Cleanup(func() { _ = rdb.Close() })
	rs, err := redisstore.New(rdb, redisstore.Options{})
	require.NoError(b, err)
	middleware := func(store idempotency.Store, h http.Handler) http.Handler {
		m, err := idempotency.New(idempotency.Options{Store: store})
		require.NoError(b, err)
		return m.Handler(h)
	}
	for _, bc := range []struct {
		name  string
		h     http.Handler
		keyed bool
	}{
		{"bare", &orderService{pool: pool}, false},
		{"pgstore", middleware(s, &orderService{pool: pool, store: s}), true},
		{"redisstore", middleware(rs, &orderService{pool: pool}), true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ops, start := 0, counter.n.Load()
			for b.Loop() {
				ops++
				key := benchKeys.Add(1) // fresh across -count runs too
				r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(`{"ref":1}`))
				r.Header.Set("Content-Type", "application/json")
				if bc.keyed {
					r.Header.Set("Idempotency-Key", bc.name+strconv.FormatInt(key, 10))
				}
				w := httptest.NewRecorder()
				bc.h.ServeHTTP(w, r)
				if w.Code != http.StatusCreated {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
			b.ReportMetric(float64(counter.n.Load()-start)/float64(ops), "pg-stmts/op")
		})
	}
}
