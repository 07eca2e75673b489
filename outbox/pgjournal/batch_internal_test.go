package pgjournal

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/outbox"
)

// flushes records the batches a batcher writes and when, on synctest's
// clock; the first batch's statement takes took.
type flushes struct {
	mu      sync.Mutex
	batches [][]string
	at      []time.Duration // since start
	start   time.Time
	took    time.Duration
}

func newFlushes(took time.Duration) *flushes {
	return &flushes{start: time.Now(), took: took}
}

func (f *flushes) flush(batch []*write) {
	f.mu.Lock()
	keys := make([]string, len(batch))
	for i, w := range batch {
		keys[i] = w.e.Op.Key
	}
	f.batches = append(f.batches, keys)
	f.at = append(f.at, time.Since(f.start))
	first := len(f.batches) == 1
	f.mu.Unlock()
	if first {
		time.Sleep(f.took)
	}
	for _, w := range batch {
		w.done <- nil
	}
}

// submitN submits the writes from to from+n-1 (keys "k<i>"), each from a
// goroutine of its own, and waits until they are queued.
func submitN(t *testing.T, b *batcher, f *flushes, wg *sync.WaitGroup, from, n int) {
	for i := from; i < from+n; i++ {
		wg.Go(func() {
			w := &write{e: outbox.Entry{Op: outbox.Op{Key: fmt.Sprint("k", i)}}}
			assert.NoError(t, b.submit(context.Background(), w, f.flush))
		})
	}
	synctest.Wait()
}

// A write that finds the writer idle is written at once; the writes that
// queued while a batch was written wait for more as long as that batch
// took (from minGather to maxGather), and go together with those that
// came meanwhile. Before, they went at once, in a batch of their own each
// time, and the busy journals of BENCHMARKS.md wrote about twice as many
// statements.
func TestABusyWriterGathersTheNextWrites(t *testing.T) {
	for _, c := range []struct {
		name       string
		took, wait time.Duration
	}{
		{"as long as the batch before", 4 * time.Millisecond, 4 * time.Millisecond},
		{"at least minGather", time.Nanosecond, minGather},
		{"at most maxGather", time.Second, maxGather},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var b batcher
				f := newFlushes(c.took)
				var wg sync.WaitGroup
				submitN(t, &b, f, &wg, 0, 1)  // the writer was idle: its statement starts now
				submitN(t, &b, f, &wg, 1, 10) // queued while it is written
				time.Sleep(c.took + c.wait/2)
				submitN(t, &b, f, &wg, 11, 1) // comes while the writer waits for more
				wg.Wait()

				require.Len(t, f.batches, 2)
				assert.Equal(t, []string{"k0"}, f.batches[0])
				assert.Len(t, f.batches[1], 11, "the queued writes and the one that came while they waited")
				assert.Equal(t, []time.Duration{0, c.took + c.wait}, f.at, "when each batch was written")

				// Idle again: the next write is written at once.
				time.Sleep(time.Second)
				f.start = time.Now()
				submitN(t, &b, f, &wg, 12, 1)
				wg.Wait()
				require.Len(t, f.batches, 3)
				assert.Equal(t, time.Duration(0), f.at[2], "a write that finds the writer idle")
			})
		})
	}
}

// Once gatherRows writes are queued, the writer stops waiting for more:
// the write that makes them gatherRows wakes it, and a queue already that
// long when the batch before ends goes at once.
func TestAFullQueueIsWrittenWithoutWaiting(t *testing.T) {
	const took = 4 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		var b batcher
		f := newFlushes(took)
		var wg sync.WaitGroup
		submitN(t, &b, f, &wg, 0, 1)
		submitN(t, &b, f, &wg, 1, gatherRows-1)
		time.Sleep(took + time.Millisecond)   // the writer waits from took to 2 × took
		submitN(t, &b, f, &wg, gatherRows, 1) // the gatherRows-th queued write
		wg.Wait()

		require.Len(t, f.batches, 2)
		assert.Len(t, f.batches[1], gatherRows)
		assert.Equal(t, []time.Duration{0, took + time.Millisecond}, f.at, "the full batch went when it was full")
	})
	synctest.Test(t, func(t *testing.T) {
		var b batcher
		f := newFlushes(took)
		var wg sync.WaitGroup
		submitN(t, &b, f, &wg, 0, 1)
		submitN(t, &b, f, &wg, 1, gatherRows+10)
		wg.Wait()
		require.Len(t, f.batches, 2)
		assert.Len(t, f.batches[1], gatherRows+10)
		assert.Equal(t, []time.Duration{0, took}, f.at)
	})
}
