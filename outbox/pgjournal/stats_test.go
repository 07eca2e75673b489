package pgjournal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
)

// Stats over pgjournal counts what the table holds, as of Run's latest
// poll: ops committed with EnqueueTx and by other processes, pending and
// failed, and the age of the oldest. (It counted only this Outbox's own:
// after failures of EnqueueTx's ops it reported 0 pending and 0 s.)
func TestStatsCountTheWholeJournal(t *testing.T) {
	j, pool := newJournal(t)
	ctx := context.Background()
	for _, payload := range []string{"a", "b", "c"} {
		require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := j.EnqueueTx(ctx, tx, outbox.Op{Kind: "charge", Payload: []byte(payload)})
			return err
		}))
	}
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := j.EnqueueTx(ctx, tx, outbox.Op{Kind: "refund", Payload: []byte("r")}) // no handler here
		return err
	}))
	o, err := outbox.New(j, outbox.Options{PollInterval: 5 * time.Millisecond, Concurrency: 4,
		Policy: retry.Policy{MaxAttempts: 1}})
	require.NoError(t, err)
	assert.Equal(t, outbox.Stats{}, o.Stats(), "before Run's first poll: nothing held here")
	o.Handle("charge", func(context.Context, outbox.Op) error { return retry.Permanent(errors.New("declined")) })
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- o.Run(rctx) }()
	defer func() { cancel(); <-done }()
	var s outbox.Stats
	for range 2000 { // polls of 5 ms: at most 10 s on loopback
		if s = o.Stats(); s.Failed == 3 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	assert.Equal(t, 3, s.Failed, "EnqueueTx's ops, failed here")
	assert.Equal(t, 1, s.Pending, "the refund, which no process here runs")
	assert.Positive(t, s.OldestPending, "its age")
}
