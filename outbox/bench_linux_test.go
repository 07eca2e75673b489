package outbox_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/stormguard/retry/outbox"
)

// BenchmarkFdatasync is the floor under BenchmarkEnqueue: a write and an
// fdatasync, from 1 goroutine and from 4 whose syncs overlap, into a file
// whose blocks are reserved and zeroed ahead, as the journal's are. The
// write=10KiB rows are one group commit's worth (about 30 records) into
// blocks zeroed that way and into blocks only fallocated, whose first
// write each sync must also commit as metadata: why the journal writes
// its zeros. A durable enqueue cannot be cheaper than one of these; run
// both benchmarks together to compare them on the same disk under the
// same load.
func BenchmarkFdatasync(b *testing.B) {
	for _, bc := range []struct {
		name    string
		syncers int
		size    int
		zeroed  bool
	}{
		{"syncers=1", 1, 300, true},
		{"syncers=4", 4, 300, true},
		{"write=10KiB/zeroed", 1, 10 << 10, true},
		{"write=10KiB/fallocated", 1, 10 << 10, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f, err := os.OpenFile(filepath.Join(b.TempDir(), "f"), os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			// Enough for the run: b.N writes, and a chunk to spare.
			size := int64(b.N+1)*int64(bc.size) + 4<<20
			if bc.zeroed {
				ok, err := outbox.Preallocate(f, 0, size)
				if err == nil && !ok {
					err = fmt.Errorf("no fallocate here")
				}
				if err != nil {
					b.Skip(err)
				}
			} else if err := syscall.Fallocate(int(f.Fd()), 0, 0, size); err != nil {
				b.Skip("no fallocate:", err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, bc.size)
			var mu sync.Mutex
			var off int64
			var left atomic.Int64
			left.Store(int64(b.N))
			b.ResetTimer()
			var wg sync.WaitGroup
			for range bc.syncers {
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
