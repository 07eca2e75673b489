package bench_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
)

// The scale scenarios: how the cost of the library grows with its work.
// They report their findings as metrics (heap-B/call, timers/call, …)
// rather than as time alone; BENCHMARKS.md has the table and the targets.

// scaleCalls is how many calls wait at once in BenchmarkScaleWaiting.
const scaleCalls = 10_000

// unavailable is the fake server of the scale scenarios: every request
// gets a 503, answered in process (no sockets), so that what is measured
// is the library's and not the kernel's.
func unavailable() http.RoundTripper {
	return retrytest.HandlerTransport(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
}

// heapAfterGC returns the live heap and the stacks in use, once a
// collection has run.
func heapAfterGC() (heap, stack uint64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc, ms.StackInuse
}

// BenchmarkScaleWaiting is scenario (a): 10,000 calls in backoff at once,
// against a service that always fails, each with a one-hour wait ahead of
// it. It reports the live heap each waiting call holds beyond its floor
// (floor-heap-B/call, measured the same way: for do, 10,000 goroutines
// parked on a channel; for http, 10,000 plain http.Client.Do calls of the
// same request parked in their transport), the stack each call's goroutine
// uses beyond the floor's, and, on the
// fake clock, the timers each call holds (retrytest.Clock counts them: a
// real clock's timers cannot be counted from outside the runtime).
//
// Rows: do runs retry.Do with an op that fails; http sends a GET through a
// retryhttp.Transport to an in-process server that answers 503. real-clock
// is the production path (one reused time.Timer per call), fake-clock
// the same calls on a retrytest.Clock that never moves.
func BenchmarkScaleWaiting(b *testing.B) {
	for _, row := range []string{"do", "http"} {
		for _, fake := range []bool{false, true} {
			name := row + "/real-clock"
			if fake {
				name = row + "/fake-clock"
			}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					benchWaiting(b, row, fake)
				}
			})
		}
	}
}

func benchWaiting(b *testing.B, row string, fake bool) {
	b.StopTimer()
	// The floor: as many goroutines, parked; for http, each in a plain
	// http.Client.Do of the same request, on a transport that parks it:
	// what the caller and net/http hold anyway.
	heap0, _ := heapAfterGC()
	park := make(chan struct{})
	var parked, arrived sync.WaitGroup
	arrived.Add(scaleCalls)
	plain := &http.Client{Transport: parkingTransport{park: park, arrived: &arrived}}
	for range scaleCalls {
		parked.Go(func() {
			if row == "do" {
				arrived.Done()
				<-park
				return
			}
			req, err := http.NewRequest(http.MethodGet, "http://svc.example/item", nil)
			if err == nil {
				_, err = plain.Do(req)
			}
			_ = err // the parking transport's own
		})
	}
	arrived.Wait()
	heapG, stackG := heapAfterGC()
	close(park)
	parked.Wait()

	var clk *retrytest.Clock
	p := retry.Policy{BaseBackoff: time.Hour, MaxBackoff: time.Hour, Jitter: retry.EqualJitter}
	if fake {
		clk = retrytest.NewClock()
		p.Clock = clk
	}
	var waiting atomic.Int64
	p.OnRetry = func(context.Context, retry.Attempt, time.Duration) { waiting.Add(1) }
	ctx, cancel := context.WithCancel(context.Background())
	drained := make(chan struct{})
	if fake { // its Waits channel must be read, or Do blocks on it
		go func() {
			defer close(drained)
			for {
				select {
				case <-clk.Waits():
				case <-ctx.Done():
					return
				}
			}
		}()
	} else {
		close(drained)
	}
	failed := errors.New("unavailable")
	var call func() error
	switch row {
	case "do":
		call = func() error {
			_, err := retry.Do(ctx, func(context.Context) error { return failed }, p)
			return err
		}
	case "http":
		c := &http.Client{Transport: &retryhttp.Transport{Base: unavailable(), Policy: p}}
		call = func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://svc.example/item", nil)
			if err != nil {
				return err
			}
			resp, err := c.Do(req)
			if err == nil {
				drain(resp)
			}
			return err
		}
	}
	b.StartTimer()
	var calls sync.WaitGroup
	for range scaleCalls {
		calls.Go(func() { _ = call() })
	}
	for waiting.Load() < scaleCalls {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // from OnRetry into the wait itself
	b.StopTimer()
	heapW, stackW := heapAfterGC()
	timers := -1.0
	if fake {
		timers = float64(clk.Pending()) / scaleCalls
	}
	cancel()
	calls.Wait()
	<-drained
	b.ReportMetric(float64(int64(heapW)-int64(heapG))/scaleCalls, "heap-B/call")
	b.ReportMetric(float64(int64(heapG)-int64(heap0))/scaleCalls, "floor-heap-B/call")
	b.ReportMetric(float64(int64(stackW)-int64(stackG))/scaleCalls, "stack-B/call")
	if timers >= 0 {
		b.ReportMetric(timers, "timers/call")
	}
	b.StartTimer()
}

// parkingTransport holds every request until park closes, then fails it.
type parkingTransport struct {
	park    chan struct{}
	arrived *sync.WaitGroup
}

func (t parkingTransport) RoundTrip(*http.Request) (*http.Response, error) {
	t.arrived.Done()
	<-t.park
	return nil, errors.New("parked")
}

// BenchmarkScaleContention is scenario (b): shared state under load from 1,
// 2, 8 and 64 goroutines (exactly that many, each taking its calls from a
// shared count in batches). ns/op is wall time per call over all of them,
// so on 2 cores it should halve from 1 goroutine to 2 and then stay flat;
// growth beyond that is contention.
//
// Rows: budget is retry.Do with one Budget shared by every call, one call
// in 10 failing once (so the Budget is drawn on and refilled); budgets is
// the same with guard.Budgets, a Budget per origin, 16 origins; transport
// is a retryhttp.Transport with holds on (HoldWait), a Budgets, and a
// shared adaptive Hedger, sending GETs to an in-process server that
// answers 200, and 503 to one request in 10.
func BenchmarkScaleContention(b *testing.B) {
	for _, row := range []string{"budget", "budgets", "transport"} {
		for _, g := range []int{1, 2, 8, 64} {
			b.Run(fmt.Sprintf("%s/goroutines=%d", row, g), func(b *testing.B) {
				sent.Store(0)
				call := contentionRow(b, row)
				b.ReportAllocs()
				contend(b, g, call)
				if row == "transport" { // hedges and retries show here
					b.ReportMetric(float64(sent.Load())/float64(b.N), "sent/op")
				}
			})
		}
	}
}

// sent counts the requests the transport row's server answered.
var sent atomic.Int64

// contend runs b.N calls of call from g goroutines, which take them in
// batches, so that the shared count is not what they contend on.
func contend(b *testing.B, g int, call func(i int) error) {
	const batch = 64
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range g {
		wg.Go(func() {
			for {
				end := next.Add(batch)
				start := end - batch
				if start >= int64(b.N) {
					return
				}
				for i := start; i < min(end, int64(b.N)); i++ {
					if err := call(int(i)); err != nil {
						b.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}

func contentionRow(b *testing.B, row string) func(i int) error {
	ctx := context.Background()
	failed := errors.New("unavailable")
	// op fails its first attempt in one call in 10.
	op := func(i int) func(context.Context) error {
		first := i%10 == 0
		return func(context.Context) error {
			if first {
				first = false
				return failed
			}
			return nil
		}
	}
	refused := func(err error) error {
		if errors.Is(err, retry.ErrBudgetExhausted) {
			return nil // the budget at work, not a failure
		}
		return err
	}
	switch row {
	case "budget":
		bud, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
		if err != nil {
			b.Fatal(err)
		}
		p := ourPolicy(tinyDelay, tinyDelay)
		p.Budget = bud
		return func(i int) error {
			_, err := retry.Do(ctx, op(i), p)
			return refused(err)
		}
	case "budgets":
		bs, err := guard.NewBudgets(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1}, 64)
		if err != nil {
			b.Fatal(err)
		}
		origins := make([]string, 16)
		for k := range origins {
			origins[k] = fmt.Sprintf("https://svc%d.example", k)
		}
		p := ourPolicy(tinyDelay, tinyDelay)
		return func(i int) error {
			q := p
			q.Budget = bs.Get(origins[i%len(origins)])
			_, err := retry.Do(ctx, op(i), q)
			return refused(err)
		}
	case "transport":
		h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if sent.Add(1)%10 == 0 {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		bs, err := guard.NewBudgets(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1}, 64)
		if err != nil {
			b.Fatal(err)
		}
		tr := &retryhttp.Transport{
			Base:   retrytest.HandlerTransport(h),
			Policy: ourPolicy(tinyDelay, tinyDelay),
			Guards: guard.Keyed{Budgets: bs},
			Hold:   retryhttp.HoldWait,
			Hedger: &retry.Hedger{MinDelay: 5 * time.Millisecond, MaxDelay: 50 * time.Millisecond},
		}
		c := &http.Client{Transport: tr}
		urls := make([]string, 16)
		for k := range urls {
			urls[k] = fmt.Sprintf("http://svc%d.example/item", k)
		}
		return func(i int) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, urls[i%len(urls)], nil)
			if err != nil {
				return err
			}
			resp, err := c.Do(req)
			if err != nil {
				return refused(err)
			}
			drain(resp)
			return nil
		}
	}
	b.Fatalf("no row %q", row)
	return nil
}

// jumpClock is a fake clock whose waits end as they start, by moving its
// time to their end, and which allocates nothing to do so: with it, a
// benchmark of a long call counts the library's own allocations, not a
// fake's timers. Its deadlines never fire by themselves; Do still gives up
// at MaxElapsed, since it checks each wait against the deadline first.
type jumpClock struct{ now atomic.Int64 }

var (
	endedCtx   context.Context
	neverEnded = context.Background()
)

func init() {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	endedCtx = ctx
}

func (c *jumpClock) Now() time.Time { return time.Unix(0, c.now.Load()) }
func (c *jumpClock) WithDeadline(context.Context, time.Time) (context.Context, context.CancelFunc) {
	return neverEnded, func() {}
}
func (c *jumpClock) WithTimeout(_ context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c.now.Add(int64(d))
	return endedCtx, func() {}
}

// BenchmarkScaleOutage is scenario (c): one call that retries through a
// whole outage, a minute or an hour of fake time (waits end at once on a
// jumpClock), with no count limit: MaxAttempts −1, MaxElapsed
// the outage, backoffs from 100ms to a 1s cap. It reports the attempts
// made, the attempts the Trace keeps, and the live heap the call holds at
// its end beyond what it held at its 100th attempt; B/op and ns/op are the
// whole call's. An hour must cost what a minute costs per attempt, and
// keep no more.
func BenchmarkScaleOutage(b *testing.B) {
	failed := errors.New("unavailable")
	for _, row := range []struct {
		name   string
		outage time.Duration
		http   bool
	}{
		{"do/minute", time.Minute, false},
		{"do/hour", time.Hour, false},
		{"http/minute", time.Minute, true},
		{"http/hour", time.Hour, true},
	} {
		b.Run(row.name, func(b *testing.B) {
			b.ReportAllocs()
			var attempts, kept, grown float64
			for b.Loop() {
				clk := &jumpClock{}
				clk.now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
				var heapAt100 uint64
				measure := !(grown > 0) && row.outage == time.Hour
				p := retry.Policy{MaxAttempts: -1, MaxElapsed: row.outage, BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Clock: clk}
				if measure {
					p.OnRetry = func(_ context.Context, a retry.Attempt, _ time.Duration) {
						if a.Number == 100 {
							b.StopTimer()
							heapAt100, _ = heapAfterGC()
							b.StartTimer()
						}
					}
				}
				var tr retry.Trace
				var err error
				if row.http {
					c := &http.Client{Transport: &retryhttp.Transport{Base: unavailable(), Policy: p}}
					req, _ := http.NewRequest(http.MethodGet, "http://svc.example/item", nil)
					req = req.WithContext(retryhttp.WithTrace(req.Context(), &tr))
					var resp *http.Response
					if resp, err = c.Do(req); err == nil {
						drain(resp)
					}
				} else {
					tr, err = retry.Do(context.Background(), func(context.Context) error { return failed }, p)
				}
				if tr.Attempts() < 100 || (err == nil && !row.http) {
					b.Fatalf("%d attempts, err %v", tr.Attempts(), err)
				}
				attempts, kept = float64(tr.Attempts()), float64(countKept(tr))
				if measure {
					b.StopTimer()
					heapEnd, _ := heapAfterGC()
					runtime.KeepAlive(&tr)
					grown = float64(int64(heapEnd) - int64(heapAt100))
					b.StartTimer()
				}
			}
			b.ReportMetric(attempts, "attempts/op")
			b.ReportMetric(kept, "kept/op")
			if row.outage == time.Hour {
				b.ReportMetric(grown, "heap-grown-B")
			}
		})
	}
}

func countKept(t retry.Trace) int {
	n := 0
	for range t.All() {
		n++
	}
	return n
}

// latencies collects per-call latencies from many goroutines, for p99.
type latencies struct {
	mu  sync.Mutex
	all []time.Duration
}

func (l *latencies) add(ds []time.Duration) {
	l.mu.Lock()
	l.all = append(l.all, ds...)
	l.mu.Unlock()
}

func (l *latencies) quantile(q float64) time.Duration {
	if len(l.all) == 0 {
		return 0
	}
	slices.Sort(l.all)
	return l.all[min(len(l.all)-1, int(q*float64(len(l.all))))]
}

// throughput runs b.N calls of call from g goroutines, timing each, and
// reports requests/s and the p99 latency.
func throughput(b *testing.B, g int, call func(i int) error) {
	var next atomic.Int64
	var lat latencies
	var wg sync.WaitGroup
	b.ResetTimer()
	for range g {
		wg.Go(func() {
			var mine []time.Duration
			defer func() { lat.add(mine) }()
			for {
				i := next.Add(1) - 1
				if i >= int64(b.N) {
					return
				}
				start := time.Now()
				if err := call(int(i)); err != nil {
					b.Error(err)
					return
				}
				mine = append(mine, time.Since(start))
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	b.ReportMetric(float64(lat.quantile(0.99).Nanoseconds())/1e3, "p99-µs")
}
