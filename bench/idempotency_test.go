package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stormguard/retry/idempotency"
	"github.com/stormguard/retry/idempotency/redisstore"
	"github.com/stormguard/retry/internal/redisserver"
	"github.com/stretchr/testify/require"
)

// Scenario 6: the server half of idempotency. One "create order" POST per
// iteration, from a plain http.Client, to a loopback server: with no
// middleware (none), behind the middleware with its in-memory store
// (memory), and behind it with a Redis store on a local redis-server
// (redis). Each middleware row is measured with a fresh key per request
// (the handler runs; the store is asked twice: claim, complete) and with
// one key sent again and again (replay: one claim, the handler does not
// run). The redis rows report redis-rt/op, the Redis round trips per
// request, counted by a go-redis hook. BenchmarkIdempotencyParallel runs
// the same rows from 32 concurrent clients and reports req/s.
//
// The middleware keeps results for 2s (TTL) with a 1s lease: so that a
// store holds what two seconds of traffic bring, as one does in a steady
// state, not every key of a run (with the 24h default, a fresh-key run
// would measure a store and a garbage collector that grow without end).
// The replay rows of the memory store have a store of their own, and each
// row starts after a garbage collection: a replay row that shared the
// fresh row's store measured the fresh keys still in it, a heap that the
// garbage collector marks on every cycle and that shrank as they expired,
// by as much as the fresh row had run.

const orderBody = `{"item":"book","quantity":1}`

// orderHandler is the handler behind every row: it reads the body and
// answers 201 with a small JSON order.
func orderHandler() http.Handler {
	var n atomic.Int64
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%d,"item":"book","quantity":1}`, n.Add(1))
	})
}

// roundTrips counts the commands and pipelines a go-redis client sends:
// each is one round trip.
type roundTrips struct{ n atomic.Int64 }

func (c *roundTrips) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *roundTrips) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmd)
	}
}

func (c *roundTrips) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.n.Add(1)
		return next(ctx, cmds)
	}
}

// idemRow is one server configuration.
type idemRow struct {
	name   string
	srv    *httptest.Server
	replay *httptest.Server // for the replay rows: srv, or one with a store of its own
	rt     *roundTrips      // nil but for redis
}

// idemServer serves orderHandler behind store's middleware, or bare if
// store is nil.
func idemServer(tb testing.TB, store idempotency.Store, bare bool) *httptest.Server {
	tb.Helper()
	h := orderHandler()
	if !bare {
		m, err := idempotency.New(idempotency.Options{Store: store, TTL: 2 * time.Second, Lease: time.Second})
		require.NoError(tb, err)
		h = m.Handler(h)
	}
	srv := httptest.NewServer(h)
	tb.Cleanup(srv.Close)
	return srv
}

// memoryStore is a MemoryStore large enough for any benchmark's b.N of
// fresh keys.
func memoryStore(tb testing.TB) idempotency.Store {
	s, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{MaxEntries: 1 << 24, MaxBytes: 1 << 32})
	require.NoError(tb, err)
	return s
}

// redisStore starts a redis-server and returns a store on it with a round
// trip counter.
func redisStore(tb testing.TB, addr string) (idempotency.Store, *roundTrips) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 64})
	tb.Cleanup(func() { _ = rdb.Close() })
	rt := &roundTrips{}
	rdb.AddHook(rt)
	s, err := redisstore.New(rdb, redisstore.Options{})
	require.NoError(tb, err)
	return s, rt
}

// idemRows returns the rows; the redis one only if redis-server is
// installed: benchmarks are not a CI gate, so they skip rather than fail.
func idemRows(b *testing.B) []idemRow {
	rows := []idemRow{
		{name: "none", srv: idemServer(b, nil, true)},
		{name: "memory", srv: idemServer(b, memoryStore(b), false), replay: idemServer(b, memoryStore(b), false)},
	}
	if _, err := exec.LookPath("redis-server"); err != nil {
		b.Logf("no redis-server: the redis rows are left out")
		return rows
	}
	store, rt := redisStore(b, redisserver.Start(b).Addr)
	srv := idemServer(b, store, false) // the keys live in redis-server, not in this heap
	return append(rows, idemRow{name: "redis", srv: srv, replay: srv, rt: rt})
}

// rowServer is the server of row for mode.
func rowServer(row idemRow, mode string) *httptest.Server {
	if mode == "replay" {
		return row.replay
	}
	return row.srv
}

// keySeq hands out fresh keys to every goroutine of a benchmark.
var keySeq atomic.Int64

// postOrder sends one order with key and checks the answer.
func postOrder(c *http.Client, url, key string) error {
	req, err := http.NewRequest(http.MethodPost, url+"/orders", bytes.NewReader([]byte(orderBody)))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func newIdemClient(tb testing.TB, conns int) *http.Client {
	tr := &http.Transport{MaxIdleConnsPerHost: conns, DisableCompression: true}
	tb.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func BenchmarkIdempotency(b *testing.B) {
	for _, row := range idemRows(b) {
		for _, mode := range []string{"fresh", "replay"} {
			if row.name == "none" && mode == "replay" {
				continue // nothing to replay without the middleware
			}
			b.Run(row.name+"-"+mode, func(b *testing.B) {
				srv := rowServer(row, mode)
				c := newIdemClient(b, 1)
				key := "replay-" + strconv.FormatInt(keySeq.Add(1), 10)
				if err := postOrder(c, srv.URL, key); err != nil { // saves it, warms scripts and conns
					b.Fatal(err)
				}
				var rt0 int64
				if row.rt != nil {
					rt0 = row.rt.n.Load()
				}
				b.ReportAllocs()
				runtime.GC() // not the garbage of the rows before
				cpu0 := cpuTime(b)
				b.ResetTimer()
				for range b.N {
					if mode == "fresh" {
						key = "fresh-" + strconv.FormatInt(keySeq.Add(1), 10)
					}
					if err := postOrder(c, srv.URL, key); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
				if row.rt != nil {
					b.ReportMetric(float64(row.rt.n.Load()-rt0)/float64(b.N), "redis-rt/op")
				}
			})
		}
	}
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clients is the number of concurrent clients of the parallel benchmark.
const clients = 32

func BenchmarkIdempotencyParallel(b *testing.B) {
	for _, row := range idemRows(b) {
		for _, mode := range []string{"fresh", "replay"} {
			if row.name == "none" && mode == "replay" {
				continue
			}
			b.Run(row.name+"-"+mode, func(b *testing.B) {
				srv := rowServer(row, mode)
				c := newIdemClient(b, clients)
				key := "replay-" + strconv.FormatInt(keySeq.Add(1), 10)
				if err := postOrder(c, srv.URL, key); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				// RunParallel starts parallelism × GOMAXPROCS goroutines.
				b.SetParallelism((clients + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
				runtime.GC()
				cpu0 := cpuTime(b)
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						k := key
						if mode == "fresh" {
							k = "fresh-" + strconv.FormatInt(keySeq.Add(1), 10)
						}
						if err := postOrder(c, srv.URL, k); err != nil {
							b.Error(err)
							return
						}
					}
				})
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
				b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
			})
		}
	}
}

// TestRedisRoundTripsPerRequest checks the cost the Redis store promises:
// a fresh key takes exactly two round trips (claim, complete) and a replay
// one (claim), once the scripts are loaded. It is a test, not a benchmark,
// so it follows the CI rule: skipped without redis-server, failed in CI.
func TestRedisRoundTripsPerRequest(t *testing.T) {
	store, rt := redisStore(t, redisserver.Start(t).Addr)
	srv := idemServer(t, store, false)
	c := newIdemClient(t, 1)
	require.NoError(t, postOrder(c, srv.URL, "warm-up"))
	require.NoError(t, postOrder(c, srv.URL, "warm-up")) // both scripts loaded now

	for i := range 10 {
		key := "fresh-" + strconv.Itoa(i)
		before := rt.n.Load()
		require.NoError(t, postOrder(c, srv.URL, key))
		require.Equal(t, int64(2), rt.n.Load()-before, "round trips for a fresh key")

		before = rt.n.Load()
		require.NoError(t, postOrder(c, srv.URL, key))
		require.Equal(t, int64(1), rt.n.Load()-before, "round trips for a replay")
	}
}

// BenchmarkIdempotencyHandler is the middleware's own CPU cost, without the
// network: ServeHTTP of the same POST on an httptest recorder, bare and
// behind the middleware with its in-memory store. On loopback the
// difference drowns in the machine's noise; here it stands alone.
func BenchmarkIdempotencyHandler(b *testing.B) {
	bare := orderHandler()
	wrap := func() http.Handler { // each row its own store, as BenchmarkIdempotency's
		m, err := idempotency.New(idempotency.Options{Store: memoryStore(b), TTL: 2 * time.Second, Lease: time.Second})
		require.NoError(b, err)
		return m.Handler(orderHandler())
	}
	fresh, replay := wrap(), wrap()
	serve := func(b *testing.B, h http.Handler, key func() string) {
		b.ReportAllocs()
		runtime.GC()
		b.ResetTimer()
		cpu0 := cpuTime(b)
		for range b.N {
			r := httptest.NewRequest(http.MethodPost, "/orders", strings.NewReader(orderBody))
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Idempotency-Key", key())
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusCreated {
				b.Fatalf("status %d", w.Code)
			}
		}
		b.ReportMetric(float64(cpuTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
	}
	b.Run("none", func(b *testing.B) { serve(b, bare, func() string { return "k" }) })
	b.Run("memory-fresh", func(b *testing.B) {
		serve(b, fresh, func() string { return "fresh-" + strconv.FormatInt(keySeq.Add(1), 10) })
	})
	b.Run("memory-replay", func(b *testing.B) { serve(b, replay, func() string { return "replay" }) })
}
