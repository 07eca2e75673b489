package outbox_test

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// BenchmarkFdatasync is the floor under BenchmarkEnqueue: a 300-byte write
// and an fdatasync, in a file whose blocks are reserved (as the journal's
// are), from 1 goroutine and from 4 whose syncs overlap. A durable enqueue
// cannot be cheaper than one of these; run both benchmarks together to
// compare them on the same disk under the same load.
func BenchmarkFdatasync(b *testing.B) {
	for _, g := range []int{1, 4} {
		b.Run("syncers="+string(rune('0'+g)), func(b *testing.B) {
			f, err := os.OpenFile(filepath.Join(b.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			if err := syscall.Fallocate(int(f.Fd()), 0, 0, 1<<30); err != nil {
				b.Skip("no fallocate:", err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, 300)
			var mu sync.Mutex
			var off int64
			var left atomic.Int64
			left.Store(int64(b.N))
			b.ResetTimer()
			var wg sync.WaitGroup
			for range g {
				wg.Go(func() {
					for left.Add(-1) >= 0 {
						mu.Lock() // writes in order, as the journal's
						at := off
						off += int64(len(buf))
						_, err := f.WriteAt(buf, at)
						mu.Unlock()
						if err == nil {
							err = syscall.Fdatasync(int(f.Fd()))
						}
						if err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "syncs/s")
		})
	}
}
