package pgjournal_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/outbox/pgjournal"
)

// runOutbox runs an Outbox over j with a poll far beyond the test, so
// that only a notice or a known due time can start an op, and h as the
// handler of "charge".
func runOutbox(t *testing.T, j outbox.Journal, h outbox.Handler) {
	t.Helper()
	o, err := outbox.New(j, outbox.Options{PollInterval: time.Hour, Concurrency: 4,
		Policy: retry.Policy{MaxAttempts: 5, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond}})
	require.NoError(t, err)
	o.Handle("charge", h)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// An op from EnqueueTx starts at its commit, through the notice its
// statement sends, not at the next poll; and the listener comes back after
// its connection is cut. (Nothing woke Run: it waited for its poll.)
func TestEnqueueTxWakesRun(t *testing.T) {
	j, pool := newJournal(t)
	ctx := context.Background()
	ran := make(chan string, 4)
	runOutbox(t, j, func(_ context.Context, op outbox.Op) error { ran <- string(op.Payload); return nil })
	enqueue := func(p string) {
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := j.EnqueueTx(ctx, tx, outbox.Op{Kind: "charge", Payload: []byte(p)})
			return err
		}))
	}
	// Run's first claim may come before or after the commit: either it or
	// the notice finds the op.
	enqueue("first")
	require.Equal(t, "first", waitRan(t, ran))
	enqueue("second")
	require.Equal(t, "second", waitRan(t, ran))

	var cut int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN%'`).Scan(&cut))
	require.Equal(t, 1, cut, "listening connections")
	enqueue("after the cut") // perhaps before the listener is back: it wakes Run once it is
	require.Equal(t, "after the cut", waitRan(t, ran))
}

// An attempt that fails is tried again after its backoff (1 ms), not at
// the next poll. (Run dropped the op's next time and waited for the poll.)
func TestRetryWaitsItsBackoffNotThePoll(t *testing.T) {
	j, _ := newJournal(t)
	var calls atomic.Int32
	ran := make(chan string, 4)
	runOutbox(t, j, func(_ context.Context, op outbox.Op) error {
		if calls.Add(1) < 3 {
			return errors.New("503")
		}
		ran <- "done"
		return nil
	})
	require.NoError(t, j.Add(context.Background(), outbox.Entry{Op: outbox.Op{Key: "k", Kind: "charge", NotAfter: time.Now().Add(time.Hour)},
		Next: time.Now(), Enqueued: time.Now()}))
	require.Equal(t, "done", waitRan(t, ran))
	require.Equal(t, int32(3), calls.Load())
}

// waitRan waits for an op to run, long enough for a loaded machine and
// far below the poll.
func waitRan(t *testing.T, ran <-chan string) string {
	t.Helper()
	select {
	case p := <-ran:
		return p
	case <-time.After(30 * time.Second):
		require.FailNow(t, "the op did not run before the poll")
		return ""
	}
}

// Transactions that enqueue within a few milliseconds of one that sent a
// notice send none (PostgreSQL makes the commits that notify take turns),
// and Run still starts their ops at once, by the claim it makes shortly
// after each notice it hears: 40 ops from 8 goroutines, committed
// together, all run long before the hour-long poll, with fewer notices
// than commits.
func TestEnqueueTxBurstSendsFewNoticesAndRunsAll(t *testing.T) {
	j, pool := newJournal(t)
	ctx := context.Background()

	// A listener of its own counts the notices of the default table.
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close(context.Background()) })
	h := fnv.New64a()
	h.Write([]byte("stormguard/outbox/pgjournal outbox_ops"))
	_, err = conn.Exec(ctx, fmt.Sprintf("LISTEN pgjournal_%016x", h.Sum64()))
	require.NoError(t, err)

	ran := make(chan string, 64)
	runOutbox(t, j, func(_ context.Context, op outbox.Op) error { ran <- string(op.Payload); return nil })
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 5 {
				assert.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
					_, err := j.EnqueueTx(ctx, tx, outbox.Op{Kind: "charge", Payload: fmt.Appendf(nil, "%d-%d", g, i)})
					return err
				}))
			}
		})
	}
	wg.Wait()
	seen := map[string]bool{}
	for range 40 {
		seen[waitRan(t, ran)] = true
	}
	require.Len(t, seen, 40)

	notices := 0
	for {
		wctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		_, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			break
		}
		notices++
	}
	t.Logf("%d notices for 40 commits", notices)
	assert.GreaterOrEqual(t, notices, 1)
	assert.Less(t, notices, 40, "notices")
}

// An op whose statement sent no notice, committed after Run has gone
// idle, starts at the claim Run makes shortly after the notice it heard,
// not at the hour-long poll.
func TestAQuietEnqueueTxRunsAfterTheNotice(t *testing.T) {
	j, pool := newJournal(t)
	// One notice, the first statement's, and the claim after it 2 s
	// later: long enough for the quiet commit below on any machine.
	pgjournal.QuietFor(j, time.Hour, 2*time.Second)
	ctx := context.Background()
	ran := make(chan string, 4)
	runOutbox(t, j, func(_ context.Context, op outbox.Op) error { ran <- string(op.Payload); return nil })
	// The first notice must find the listener: a commit before its LISTEN
	// is found by the claim after it, and leaves no notice to trail.
	require.Eventually(t, func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN%'`).Scan(&n)
		return err == nil && n == 1
	}, 10*time.Second, time.Millisecond)
	time.Sleep(10 * time.Millisecond) // and the claim that follows the LISTEN
	enqueue := func(p string) {
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := j.EnqueueTx(ctx, tx, outbox.Op{Kind: "charge", Payload: []byte(p)})
			return err
		}))
	}
	enqueue("noticed")
	require.Equal(t, "noticed", waitRan(t, ran))
	enqueue("quiet") // Run is idle now, and this commit sends no notice
	select {
	case p := <-ran:
		require.Equal(t, "quiet", p)
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the quiet op waited for the poll")
	}
}
