package outbox_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retrytest"
)

// Stats counts ops as they move, pending, running and failed, with the
// age of the oldest one not finished; a restart counts what the journal
// holds; a re-drive moves a dead letter back to pending.
func TestStats(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	clk := retrytest.NewClock()
	opts := outbox.Options{Clock: clk, Policy: retry.Policy{MaxAttempts: 1}}
	o, j := newOutbox(t, path, opts)
	assert.Equal(t, outbox.Stats{}, o.Stats())

	started, release := make(chan string), make(chan error)
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		started <- string(op.Payload)
		return <-release
	})
	first, err := o.Enqueue(ctx, outbox.Op{Kind: "pay", Payload: []byte("1")})
	require.NoError(t, err)
	clk.Add(time.Minute)
	second, err := o.Enqueue(ctx, outbox.Op{Kind: "pay", Payload: []byte("2")})
	require.NoError(t, err)
	clk.Add(time.Minute)
	_, err = o.Enqueue(ctx, outbox.Op{Kind: "later", Payload: []byte("3")}) // no handler: pending
	require.NoError(t, err)
	clk.Add(time.Minute)
	assert.Equal(t, outbox.Stats{Pending: 3, OldestPending: 3 * time.Minute}, o.Stats(), "before Run")

	stop := run(t, o)
	assert.Equal(t, "1", <-started)
	assert.Equal(t, outbox.Stats{Pending: 2, Running: 1, OldestPending: 3 * time.Minute}, o.Stats(), "one in a call")
	release <- nil
	wait(t, o, first)
	assert.Equal(t, "2", <-started)
	assert.Equal(t, outbox.Stats{Pending: 1, Running: 1, OldestPending: 2 * time.Minute}, o.Stats(), "the oldest finished")
	release <- errors.New("declined")
	assert.Equal(t, outbox.Failed, wait(t, o, second).State)
	assert.Equal(t, outbox.Stats{Pending: 1, Failed: 1, OldestPending: time.Minute}, o.Stats(), "one dead letter, counted by the time Wait returns")
	stop()
	require.NoError(t, j.Close())

	// A restart counts what the journal holds.
	o, _ = newOutbox(t, path, opts)
	clk.Add(time.Minute)
	assert.Equal(t, outbox.Stats{Pending: 1, Failed: 1, OldestPending: 2 * time.Minute}, o.Stats(), "after a restart")
	dead, err := o.DeadLetters(ctx)
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.NoError(t, o.Redrive(ctx, dead[0].Op.Key))
	assert.Equal(t, outbox.Stats{Pending: 2, OldestPending: 3 * time.Minute}, o.Stats(), "re-driven: pending again, as old as it was")
}
