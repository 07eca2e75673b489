package pgriver_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/pgserver"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/outbox/pgjournal"
)

// server is one PostgreSQL for the whole run, fsync on: a commit costs
// what it costs in production. It skips (fails under CI=true) without one.
var (
	serverOnce sync.Once
	server     *pgserver.Server
)

func pg(b *testing.B) *pgserver.Server {
	b.Helper()
	serverOnce.Do(func() { server = pgserver.Start(&keep{B: b}, "fsync=on") })
	if server == nil {
		b.Skip("no PostgreSQL")
	}
	return server
}

// keep is the first benchmark's B, but for Cleanup: the server outlives
// it, stopped by TestMain.
type keep struct{ *testing.B }

func (k *keep) Cleanup(f func()) { cleanups = append(cleanups, f) }

var cleanups []func()

// counter counts the statements a pool sends, and of them the claims
// (fetches) and the outcome writes (completions): the statements' profile.
type counter struct {
	claimSQL, writeSQL string // what a claim's and a write's text contains
	n, claims, writes  atomic.Int64
}

func (c *counter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	switch {
	case strings.Contains(d.SQL, c.claimSQL):
		c.claims.Add(1)
	case strings.Contains(d.SQL, c.writeSQL):
		c.writes.Add(1)
	}
	return ctx
}
func (*counter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func newPool(b *testing.B, url string, c *counter) *pgxpool.Pool {
	b.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 20
	if c != nil {
		cfg.ConnConfig.Tracer = c
	}
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

// Both sides: a fresh database with the side's schema, and what a worker
// fleet of the side needs.
type side struct {
	name string
	// setup migrates url's database.
	setup func(b *testing.B, url string)
	// claimSQL and writeSQL are in the text of the side's claims and of
	// its outcome writes, and in no other statement's.
	claimSQL, writeSQL string
	// start starts a worker instance on url whose handler calls done
	// (fail is how many times each job fails first), stops it at
	// cleanup, and returns its enqueue in a transaction.
	start func(b *testing.B, url string, c *counter, fail int, done func()) func(tx pgx.Tx) error
	// enqueueTx enqueues one job in tx.
	enqueueTx func(ctx context.Context, b *testing.B, url string) func(tx pgx.Tx) error
}

const concurrency = 100 // handler calls at once per instance, both sides

var sides = []side{
	{name: "pgjournal", claimSQL: "WITH free AS", writeSQL: "OR key = ANY($12)",
		setup: func(b *testing.B, url string) {
			if err := pgjournal.Migrate(context.Background(), newPool(b, url, nil), pgjournal.Options{}); err != nil {
				b.Fatal(err)
			}
		},
		start: func(b *testing.B, url string, c *counter, fail int, done func()) func(tx pgx.Tx) error {
			j, err := pgjournal.New(newPool(b, url, c), pgjournal.Options{})
			if err != nil {
				b.Fatal(err)
			}
			// A failed job is tried again after 1 ms, as River's (quickRetry).
			o, err := outbox.New(j, outbox.Options{Concurrency: concurrency,
				Policy: retry.Policy{BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Jitter: retry.NoJitter}})
			if err != nil {
				b.Fatal(err)
			}
			o.Handle("noop", func(_ context.Context, op outbox.Op) error {
				n, _ := tries.LoadOrStore(op.Key, new(atomic.Int32))
				if int(n.(*atomic.Int32).Add(1)) <= fail {
					return fmt.Errorf("fail")
				}
				done()
				return nil
			})
			ctx, cancel := context.WithCancel(context.Background())
			ended := make(chan struct{})
			go func() { defer close(ended); _ = o.Run(ctx) }()
			b.Cleanup(func() { cancel(); <-ended })
			return func(tx pgx.Tx) error {
				_, err := j.EnqueueTx(context.Background(), tx, outbox.Op{Kind: "noop"})
				return err
			}
		},
		enqueueTx: func(ctx context.Context, b *testing.B, url string) func(tx pgx.Tx) error {
			j, err := pgjournal.New(newPool(b, url, nil), pgjournal.Options{})
			if err != nil {
				b.Fatal(err)
			}
			return func(tx pgx.Tx) error {
				_, err := j.EnqueueTx(ctx, tx, outbox.Op{Kind: "noop"})
				return err
			}
		},
	},
	{name: "river", claimSQL: "name: JobGetAvailable", writeSQL: "name: JobSetStateIfRunningMany",
		setup: func(b *testing.B, url string) {
			m, err := rivermigrate.New(riverpgxv5.New(newPool(b, url, nil)), nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := m.Migrate(context.Background(), rivermigrate.DirectionUp, nil); err != nil {
				b.Fatal(err)
			}
		},
		start: func(b *testing.B, url string, c *counter, fail int, done func()) func(tx pgx.Tx) error {
			workers := river.NewWorkers()
			river.AddWorker(workers, &noopWorker{fail: fail, done: done})
			client, err := river.NewClient(riverpgxv5.New(newPool(b, url, c)), &river.Config{
				Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: concurrency}},
				Workers:       workers,
				FetchCooldown: time.Millisecond, // tuned for throughput, as the run
				RetryPolicy:   quickRetry{},
			})
			if err != nil {
				b.Fatal(err)
			}
			if err := client.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = client.Stop(ctx)
			})
			return func(tx pgx.Tx) error {
				_, err := client.InsertTx(context.Background(), tx, noopArgs{}, nil)
				return err
			}
		},
		enqueueTx: func(ctx context.Context, b *testing.B, url string) func(tx pgx.Tx) error {
			client, err := river.NewClient(riverpgxv5.New(newPool(b, url, nil)), &river.Config{})
			if err != nil {
				b.Fatal(err)
			}
			return func(tx pgx.Tx) error {
				_, err := client.InsertTx(ctx, tx, noopArgs{}, nil)
				return err
			}
		},
	},
}

// tries counts the calls of each op of pgjournal's side, across the
// instances of a run (the handler is not told the attempt's number).
var tries sync.Map

type noopArgs struct{}

func (noopArgs) Kind() string { return "noop" }

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	fail int
	done func()
}

func (w *noopWorker) Work(_ context.Context, job *river.Job[noopArgs]) error {
	if job.Attempt <= w.fail {
		return fmt.Errorf("fail")
	}
	w.done()
	return nil
}

// quickRetry retries River's jobs after 1 ms, as the outbox's policy here.
type quickRetry struct{}

func (quickRetry) NextRetry(*rivertype.JobRow) time.Time { return time.Now().Add(time.Millisecond) }

// insert puts n due jobs in the side's table, in one transaction.
func insert(b *testing.B, s side, url string, n int) {
	ctx := context.Background()
	pool := newPool(b, url, nil)
	add := s.enqueueTx(ctx, b, url)
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for range n {
			if err := add(tx); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWork runs b.N jobs enqueued before the start, on 1 and 4
// instances, with a no-op handler (fail=2: each fails twice first).
func BenchmarkWork(b *testing.B) {
	for _, fail := range []int{0, 2} {
		for _, instances := range []int{1, 4} {
			for _, s := range sides {
				b.Run(fmt.Sprintf("fail=%d/instances=%d/%s", fail, instances, s.name), func(b *testing.B) {
					url := pg(b).NewDatabase(b)
					s.setup(b, url)
					insert(b, s, url, b.N)
					var left atomic.Int64
					left.Store(int64(b.N))
					all := make(chan struct{})
					done := func() {
						if left.Add(-1) == 0 {
							close(all)
						}
					}
					c := &counter{claimSQL: s.claimSQL, writeSQL: s.writeSQL}
					b.ResetTimer()
					for range instances {
						s.start(b, url, c, fail, done)
					}
					<-all
					b.StopTimer()
					b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
					b.ReportMetric(float64(c.n.Load())/float64(b.N), "stmts/job")
					b.ReportMetric(float64(c.claims.Load())/float64(b.N), "claims/job")
					b.ReportMetric(float64(c.writes.Load())/float64(b.N), "writes/job")
					b.ReportMetric(0, "ns/op")
				})
			}
		}
	}
}

// BenchmarkPickup enqueues one job at a time, in a transaction, into an
// idle instance, and measures from the commit to the handler's call.
func BenchmarkPickup(b *testing.B) {
	for _, s := range sides {
		b.Run(s.name, func(b *testing.B) {
			url := pg(b).NewDatabase(b)
			s.setup(b, url)
			ran := make(chan time.Time, 1)
			add := s.start(b, url, nil, 0, func() { ran <- time.Now() })
			ctx := context.Background()
			pool := newPool(b, url, nil)
			time.Sleep(200 * time.Millisecond) // the instance idle, its listener up
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				tx, err := pool.Begin(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if err := add(tx); err != nil {
					b.Fatal(err)
				}
				if err := tx.Commit(ctx); err != nil {
					b.Fatal(err)
				}
				committed := time.Now()
				lat = append(lat, (<-ran).Sub(committed))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkEnqueueTx commits one job per transaction from 1, 8 and 64
// goroutines.
func BenchmarkEnqueueTx(b *testing.B) {
	for _, g := range []int{1, 8, 64} {
		for _, s := range sides {
			b.Run(fmt.Sprintf("goroutines=%d/%s", g, s.name), func(b *testing.B) {
				url := pg(b).NewDatabase(b)
				s.setup(b, url)
				ctx := context.Background()
				cfg, _ := pgxpool.ParseConfig(url)
				cfg.MaxConns = int32(g)
				pool, err := pgxpool.NewWithConfig(ctx, cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer pool.Close()
				add := s.enqueueTx(ctx, b, url)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				for range g {
					wg.Go(func() {
						for next.Add(1) <= int64(b.N) {
							if err := pgx.BeginFunc(ctx, pool, add); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, f := range slices.Backward(cleanups) {
		f()
	}
	os.Exit(code)
}
