package outbox_test

import (
	"context"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/outbox"
)

// nullJournal keeps nothing and never fails: with it, what an Outbox holds
// is its own.
type nullJournal struct{}

func (nullJournal) Add(context.Context, outbox.Entry) error      { return nil }
func (nullJournal) Update(context.Context, outbox.Entry) error   { return nil }
func (nullJournal) Load(context.Context) ([]outbox.Entry, error) { return nil, nil }
func (nullJournal) Close() error                                 { return nil }

// liveHeap is the live heap once a collection has run.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// Once the retention has passed and the Outbox has forgotten its finished
// ops, they hold nothing: not the buckets of the map that held them (a Go
// map keeps those after a delete), nor the capacity of the heaps they
// passed through, nor, with a FileJournal, the journal's entries for
// them, which it kept until its next compaction (one an idle journal
// never reaches). A burst of 20,000 ops held about 60 bytes each in the
// Outbox this way, and a burst of 4,000 about 490 bytes each in the
// FileJournal. Not parallel: the heap is measured, and parallel tests wait
// for the sequential ones to end.
func TestForgottenOpsHoldNoMemory(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		// per is the bytes per op allowed to stay: for the FileJournal, its
		// write buffers, sized by the writers and not by the ops, come to
		// about 4 per op of 4,000.
		per  int64
		open func(t *testing.T) outbox.Journal
	}{
		{"outbox", 20_000, 4, func(*testing.T) outbox.Journal { return nullJournal{} }},
		{"file journal", 4_000, 8, func(t *testing.T) outbox.Journal {
			return openJournal(t, filepath.Join(t.TempDir(), "outbox.journal"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { testForgottenOpsHoldNoMemory(t, tc.n, tc.per, tc.open(t)) })
		})
	}
}

func testForgottenOpsHoldNoMemory(t *testing.T, n int, per int64, j outbox.Journal) {
	o, err := outbox.New(j, outbox.Options{})
	require.NoError(t, err)
	o.Handle("pay", func(context.Context, outbox.Op) error { return nil })
	run(t, o)
	ctx := context.Background()
	// runOps enqueues k ops from up to 32 goroutines (a FileJournal's
	// writers share their syncs) and waits for each to succeed.
	runOps := func(k int) string {
		keys := make([]string, k)
		var wg sync.WaitGroup
		for w := range min(k, 32) {
			wg.Go(func() {
				for i := w; i < k; i += 32 {
					key, err := o.Enqueue(ctx, outbox.Op{Kind: "pay"})
					assert.NoError(t, err)
					keys[i] = key
				}
			})
		}
		wg.Wait()
		for _, key := range keys {
			require.Equal(t, outbox.Succeeded, wait(t, o, key).State)
		}
		return keys[k-1]
	}
	first := runOps(1)
	floor := liveHeap()
	last := runOps(n)
	held := liveHeap() - floor
	assert.Greater(t, held, int64(n*100), "the finished ops are remembered for the retention")

	time.Sleep(25 * time.Hour)
	runOps(1) // a write and a finish: the journal and the Outbox sweep
	_, err = o.Wait(ctx, last)
	require.ErrorIs(t, err, outbox.ErrUnknownKey, "forgotten after the retention")
	_, err = o.Wait(ctx, first)
	require.ErrorIs(t, err, outbox.ErrUnknownKey)
	kept := liveHeap() - floor
	assert.Less(t, kept, int64(n)*per, "bytes held for %d forgotten ops: under %d per op", n, per)
	runtime.KeepAlive(o)
	runtime.KeepAlive(j)
}
