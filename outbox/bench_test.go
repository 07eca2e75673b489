package outbox_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry/outbox"
)

// BenchmarkEnqueue measures durable enqueues (each fsync'd before it
// returns) from 1 and from 64 goroutines; the latter share syncs (group
// commit). It reports enqueues/s; it asserts nothing about time.
func BenchmarkEnqueue(b *testing.B) {
	for _, g := range []int{1, 64} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			j, err := outbox.OpenFile(filepath.Join(b.TempDir(), "journal"))
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			o, err := outbox.New(j, outbox.Options{})
			if err != nil {
				b.Fatal(err)
			}
			payload := make([]byte, 256)
			inParallel(b, g, func() error {
				_, err := o.Enqueue(context.Background(), outbox.Op{Kind: "send", Payload: payload})
				return err
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "enqueues/s")
		})
	}
}

// BenchmarkFileJournalAdd measures the file journal alone: the durable
// Adds that Enqueue makes, from 1 and from 64 goroutines, without the
// Outbox's own work (its key, its heaps, its outcome for Wait). Each Add
// returns once fsync'd, as in BenchmarkEnqueue.
func BenchmarkFileJournalAdd(b *testing.B) {
	for _, g := range []int{1, 64} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			j, err := outbox.OpenFile(filepath.Join(b.TempDir(), "journal"))
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			payload := make([]byte, 256)
			now := time.Now()
			inParallel(b, g, func() error {
				e, err := outbox.NewEntry(outbox.Op{Kind: "send", Payload: payload}, now, 0)
				if err == nil {
					err = j.Add(context.Background(), e)
				}
				return err
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "adds/s")
		})
	}
}

// inParallel resets b's timer and calls op b.N times in all, from g
// goroutines, each calling it again as soon as its last call returned.
func inParallel(b *testing.B, g int, op func() error) {
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ResetTimer()
	var wg sync.WaitGroup
	for range g {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := op(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkResume measures New over a journal of 10,000 pending ops: what
// a restarted process pays before its Run can start.
func BenchmarkResume(b *testing.B) {
	path := filepath.Join(b.TempDir(), "journal")
	j, err := outbox.OpenFile(path)
	if err != nil {
		b.Fatal(err)
	}
	o, err := outbox.New(j, outbox.Options{})
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range 10_000 / 64 {
				if _, err := o.Enqueue(context.Background(), outbox.Op{Kind: "send", Payload: make([]byte, 256)}); err != nil {
					b.Error(err)
				}
			}
		})
	}
	wg.Wait()
	j.Close()
	b.ResetTimer()
	for b.Loop() {
		j, err := outbox.OpenFile(path)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := outbox.New(j, outbox.Options{}); err != nil {
			b.Fatal(err)
		}
		j.Close()
	}
}
