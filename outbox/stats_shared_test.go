package outbox_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/outbox"
)

// Over a shared journal, each process counts what it holds: the process
// that enqueued counts its ops pending until it sees them finished
// elsewhere; the process running them counts them running, never pending.
func TestStatsShared(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		ctx := context.Background()
		opts := outbox.Options{PollInterval: 100 * time.Millisecond}
		a := newShared(t, m, opts) // enqueues; runs another kind only
		a.Handle("other", func(ctx context.Context, op outbox.Op) error { return nil })
		b := newShared(t, m, outbox.Options{PollInterval: 100 * time.Millisecond, Concurrency: 1})
		release := make(chan struct{})
		b.Handle("send", func(ctx context.Context, op outbox.Op) error {
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
		for range 2 {
			_, err := a.Enqueue(ctx, outbox.Op{Kind: "send"})
			require.NoError(t, err)
		}
		stopA, stopB := startRun(a), startRun(b)
		time.Sleep(150 * time.Millisecond)
		synctest.Wait()
		assert.Equal(t, outbox.Stats{Pending: 2, OldestPending: 150 * time.Millisecond}, a.Stats(), "the enqueuer")
		assert.Equal(t, outbox.Stats{Running: 1}, b.Stats(), "the runner: one call at a time")

		close(release)
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Equal(t, outbox.Stats{}, a.Stats(), "the enqueuer saw both finish elsewhere")
		assert.Equal(t, outbox.Stats{}, b.Stats())
		require.ErrorIs(t, stopB(), context.Canceled)
		require.ErrorIs(t, stopA(), context.Canceled)
	})
}
