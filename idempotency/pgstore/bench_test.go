package pgstore_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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

// BenchmarkScaleClients is the store called directly (no HTTP) from
// exactly 1, 2, 8 and 64 goroutines, on a pool of pgxpool's default size:
// fresh is what the middleware asks for a new key (Claim, then Complete
// with a 64-byte result), replay a Claim that finds the saved result.
// ns/op is wall time per request over all the goroutines, so it should
// not grow from 1 to 64 (the pool queues what it cannot serve); req/s is
// the same as a rate and p99-µs the 99th percentile of one request.
func BenchmarkScaleClients(b *testing.B) {
	pool := newPool(b, pg(b).NewDatabase(b), nil)
	s, _ := newStore(b, pool)
	ctx := context.Background()
	fp := make([]byte, 32)
	result := make([]byte, 64)
	const replayKey = "replay"
	if _, err := s.Claim(ctx, replayKey, "t0", fp, time.Second); err != nil {
		b.Fatal(err)
	}
	if err := s.Complete(ctx, replayKey, "t0", fp, result, time.Hour); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"fresh", "replay"} {
		for _, g := range []int{1, 2, 8, 64} {
			b.Run(fmt.Sprintf("%s/clients=%d", mode, g), func(b *testing.B) {
				b.ReportAllocs()
				timedClients(b, g, func() error {
					if mode == "replay" {
						c, err := s.Claim(ctx, replayKey, "t1", fp, time.Second)
						if err == nil && c.State != idempotency.Completed {
							err = fmt.Errorf("replay found state %v", c.State)
						}
						return err
					}
					key := "fresh-" + strconv.FormatInt(benchKeys.Add(1), 10)
					if _, err := s.Claim(ctx, key, "t", fp, time.Second); err != nil {
						return err
					}
					return s.Complete(ctx, key, "t", fp, result, time.Minute)
				})
			})
		}
	}
}

// timedClients runs b.N calls of call from g goroutines, timing each,
// and reports req/s and the p99 latency in µs.
func timedClients(b *testing.B, g int, call func() error) {
	var next atomic.Int64
	var mu sync.Mutex
	var all []time.Duration
	var wg sync.WaitGroup
	b.ResetTimer()
	for range g {
		wg.Go(func() {
			var mine []time.Duration
			defer func() { mu.Lock(); all = append(all, mine...); mu.Unlock() }()
			for next.Add(1) <= int64(b.N) {
				start := time.Now()
				if err := call(); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(start))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	if len(all) > 0 {
		b.ReportMetric(float64(all[min(len(all)-1, len(all)*99/100)].Nanoseconds())/1e3, "p99-µs")
	}
}
