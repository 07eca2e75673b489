package bench_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry/bench"
	"github.com/stormguard/retry/outbox"
)

// recoveryCounts are the journal sizes of BenchmarkScaleRecovery; the
// largest is left out under -short.
var recoveryCounts = []int{10_000, 100_000, 1_000_000}

// prepared are the journals BenchmarkScaleRecovery wrote, in
// bench.ScaleDir, once per process whatever -count is; TestMain removes
// them.
var prepared struct {
	mu   sync.Mutex
	made map[int]string
}

// pendingJournal returns the path of a file journal that holds n pending
// ops (64-byte payloads), written on the first call for n: by outbox
// Enqueue from 64 goroutines, so that they share their syncs.
func pendingJournal(b *testing.B, n int) string {
	prepared.mu.Lock()
	defer prepared.mu.Unlock()
	if p, ok := prepared.made[n]; ok {
		return p
	}
	dir := bench.ScaleDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("pending-%d", n))
	j, err := outbox.OpenFile(path)
	if err != nil {
		b.Fatal(err)
	}
	o, err := outbox.New(j, outbox.Options{})
	if err != nil {
		b.Fatal(err)
	}
	const writers = 64
	var next atomic.Int64
	var wg sync.WaitGroup
	payload := make([]byte, 64)
	for range writers {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				if _, err := o.Enqueue(context.Background(), outbox.Op{Kind: "send", Payload: payload}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
	if b.Failed() {
		b.FailNow()
	}
	if prepared.made == nil {
		prepared.made = map[int]string{}
	}
	prepared.made[n] = path
	return path
}

// BenchmarkScaleRecovery is the file journal's recovery from 10⁴ to 10⁶
// pending ops (64-byte payloads): what a restarted process pays before
// its Run can start, outbox.OpenFile (the replay) then outbox.New (the
// ops back in the Outbox). ns/op-kept is the time per op; heap-B/op-kept
// the live heap the journal and the Outbox hold per op once open (after a
// collection, less the heap before the open). The journals are written
// once per process, not per iteration; the 10⁶ row is left out under
// -short.
func BenchmarkScaleRecovery(b *testing.B) {
	for _, n := range recoveryCounts {
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			if n > 100_000 && testing.Short() {
				b.Skip("-short: 10⁶ ops take a while to prepare")
			}
			path := pendingJournal(b, n)
			var heap float64
			b.ResetTimer()
			for b.Loop() {
				b.StopTimer()
				before, _ := heapAfterGC()
				b.StartTimer()
				j, err := outbox.OpenFile(path)
				if err != nil {
					b.Fatal(err)
				}
				o, err := outbox.New(j, outbox.Options{})
				if err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				after, _ := heapAfterGC()
				heap = float64(int64(after)-int64(before)) / float64(n)
				if s := o.Stats(); s.Pending != n {
					b.Fatalf("%d pending after the reopen, want %d", s.Pending, n)
				}
				runtime.KeepAlive(o)
				if err := j.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/op-kept")
			b.ReportMetric(heap, "heap-B/op-kept")
		})
	}
}

// shiftedClock is the real clock moved by an offset that a benchmark
// sets: its waits are real, and a day can pass at once.
type shiftedClock struct{ off atomic.Int64 }

func (c *shiftedClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *shiftedClock) WithDeadline(ctx context.Context, d time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(ctx, d.Add(-time.Duration(c.off.Load())))
}
func (c *shiftedClock) WithTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

// discardJournal is an outbox.Journal that keeps nothing and never fails:
// with it, the heap an Outbox holds is the Outbox's own.
type discardJournal struct{}

func (discardJournal) Add(context.Context, outbox.Entry) error      { return nil }
func (discardJournal) Update(context.Context, outbox.Entry) error   { return nil }
func (discardJournal) Load(context.Context) ([]outbox.Entry, error) { return nil, nil }
func (discardJournal) Close() error                                 { return nil }

// BenchmarkScaleRetention is the Outbox's memory per finished op after
// the retention (a day) from 10³ to 10⁵ ops: an Outbox, on a journal that
// keeps nothing (so that the heap is the Outbox's), runs n ops to success
// (a handler that returns nil); its clock then moves a day and an hour on
// and one more op runs, whose finish lets the Outbox forget the ones that
// expired. heap-B/op-finished is the live heap then, less that of the
// same Outbox before the n ops, per op: the target is 0.
// heap-B/op-held is the same before the day passed, for scale.
func BenchmarkScaleRetention(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("ops=%d", n), func(b *testing.B) {
			var held, kept float64
			for b.Loop() {
				held, kept = retained(b, n)
			}
			b.ReportMetric(held, "heap-B/op-held")
			b.ReportMetric(kept, "heap-B/op-finished")
		})
	}
}

// retained runs n ops through an Outbox and returns the heap per op it
// holds once they finished, and once the retention passed.
func retained(b *testing.B, n int) (held, kept float64) {
	clk := &shiftedClock{}
	o, err := outbox.New(discardJournal{}, outbox.Options{Clock: clk, Concurrency: 4})
	if err != nil {
		b.Fatal(err)
	}
	var done atomic.Int64
	o.Handle("send", func(context.Context, outbox.Op) error { done.Add(1); return nil })
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- o.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-ran; !errors.Is(err, context.Canceled) {
			b.Error(err)
		}
	}()
	// One op first, so that the Outbox's own first-use state is in the
	// floor.
	runOps := func(k int) {
		want := done.Load() + int64(k)
		for range k {
			if _, err := o.Enqueue(ctx, outbox.Op{Kind: "send"}); err != nil {
				b.Fatal(err)
			}
		}
		for s := o.Stats(); done.Load() < want || s.Pending+s.Running > 0; s = o.Stats() {
			time.Sleep(100 * time.Microsecond)
		}
	}
	runOps(1)
	b.StopTimer()
	floor, _ := heapAfterGC()
	b.StartTimer()
	runOps(n)
	b.StopTimer()
	full, _ := heapAfterGC()
	clk.off.Add(int64(25 * time.Hour))
	b.StartTimer()
	runOps(1) // its finish sweeps
	b.StopTimer()
	after, _ := heapAfterGC()
	runtime.KeepAlive(o)
	b.StartTimer()
	return float64(int64(full)-int64(floor)) / float64(n), float64(int64(after)-int64(floor)) / float64(n)
}
