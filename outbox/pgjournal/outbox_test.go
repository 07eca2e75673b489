package pgjournal_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/outbox/pgjournal"
)

// effects records, per op, the keys its handler ran under: what a server
// behind an idempotency middleware would dedupe.
type effects struct {
	mu   sync.Mutex
	runs map[string]int
}

func (e *effects) handler(ctx context.Context, op outbox.Op) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.runs[string(op.Payload)+" "+op.Key]++
	return nil
}

func (e *effects) count() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.runs)
}

// waitAll waits, bounded, until the journal holds n finished ops.
func waitAll(t *testing.T, j *pgjournal.Journal, n int) []outbox.Entry {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		es, err := j.Load(context.Background())
		require.NoError(t, err)
		done := 0
		for _, e := range es {
			if e.State != outbox.Pending {
				done++
			}
		}
		if done == n {
			return es
		}
		require.True(t, time.Now().Before(deadline), "%d of %d ops finished", done, n)
		time.Sleep(5 * time.Millisecond)
	}
}

// Two processes (each its own pool, Journal and Outbox) share one table:
// ops enqueued in a business transaction or by Enqueue run once each,
// under their key, and Wait in either process sees the outcome wherever
// the op ran, the ops of EnqueueTx included.
func TestOutboxesShareOnePostgres(t *testing.T) {
	url := pg(t).NewDatabase(t)
	ctx := context.Background()
	fx := &effects{runs: map[string]int{}}
	var outs []*outbox.Outbox
	var journals []*pgjournal.Journal
	migrate(t, newPool(t, url))
	for range 2 {
		pool := newPool(t, url)
		j, err := pgjournal.New(pool, pgjournal.Options{})
		require.NoError(t, err)
		o, err := outbox.New(j, outbox.Options{Concurrency: 4, PollInterval: 5 * time.Millisecond, Lease: 5 * time.Second})
		require.NoError(t, err)
		o.Handle("send", fx.handler)
		outs, journals = append(outs, o), append(journals, j)
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- o.Run(runCtx) }()
		t.Cleanup(func() { cancel(); assert.ErrorIs(t, <-done, context.Canceled) })
	}
	pool := newPool(t, url)
	const n = 60
	var keys []string
	for i := range n {
		op := outbox.Op{Kind: "send", Payload: []byte(fmt.Sprint(i))}
		if i%2 == 0 {
			var k string
			require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) (err error) {
				k, err = journals[0].EnqueueTx(ctx, tx, op)
				return err
			}))
			keys = append(keys, k) // Wait knows it from the table
			continue
		}
		k, err := outs[i%4/2].Enqueue(ctx, op)
		require.NoError(t, err)
		keys = append(keys, k)
	}
	for i, k := range keys {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		r, err := outs[(2*i+1)%4/2].Wait(wctx, k)
		cancel()
		require.NoError(t, err)
		assert.Equal(t, outbox.Succeeded, r.State)
	}
	es := waitAll(t, journals[0], n)
	for _, e := range es {
		assert.Equal(t, outbox.Succeeded, e.State, e.Op.Key)
		assert.Equal(t, 1, e.Attempts, "attempts of %s", e.Op.Key)
		assert.Empty(t, e.Lease, "a finished op holds no lease")
	}
	fx.mu.Lock()
	defer fx.mu.Unlock()
	assert.Len(t, fx.runs, n, "ops run")
	for k, c := range fx.runs {
		assert.Equal(t, 1, c, "runs of %s", k)
	}
}

// A server crash (every connection cut) stops Run with the journal's
// error; a Run started again resumes, and every op runs under its one key.
func TestRunAfterPostgresRestart(t *testing.T) {
	s := pg(t)
	j, _ := newJournal(t)
	fx := &effects{runs: map[string]int{}}
	o, err := outbox.New(j, outbox.Options{Concurrency: 4, PollInterval: 5 * time.Millisecond, Lease: time.Second,
		Policy: retry.Policy{MaxAttempts: -1, BaseBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond}})
	require.NoError(t, err)
	o.Handle("send", fx.handler)
	ctx := context.Background()
	const n = 40
	for i := range n {
		_, err := o.Enqueue(ctx, outbox.Op{Kind: "send", Payload: []byte(fmt.Sprint(i))})
		require.NoError(t, err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { // a service's supervisor: Run again after a failure
		defer close(stopped)
		for runCtx.Err() == nil {
			if err := o.Run(runCtx); runCtx.Err() == nil {
				assert.Error(t, err)
				time.Sleep(10 * time.Millisecond)
			}
		}
	}()
	for fx.count() < n/4 {
		time.Sleep(time.Millisecond)
	}
	s.Restart(t)
	waitAll(t, j, n)
	cancel()
	<-stopped
	assert.Equal(t, n, fx.count(), "distinct (op, key) pairs run: each op under one key")
}
