package pgjournal_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/outbox/pgjournal"
)

// BenchmarkClaim3Workers measures how fast three Outboxes (three
// "processes", each with its own pool and Concurrency 8) drain b.N due
// ops from one table with a handler that does nothing: the cost of the
// claims and of the two writes of each op (its attempt count, its
// outcome). It reports ops/s.
func BenchmarkClaim3Workers(b *testing.B) {
	url := pg(b).NewDatabase(b)
	ctx := context.Background()
	setup := newPool(b, url)
	err := pgjournal.Migrate(ctx, setup, pgjournal.Options{})
	require.NoError(b, err)
	_, err = setup.Exec(ctx, `INSERT INTO outbox_ops (key, kind, payload, not_after, next_at, enqueued)
		SELECT 'op-' || g, 'send', ''::bytea, now() + interval '1 day', now() - interval '1 second', now()
		FROM generate_series(1, $1) AS g`, b.N)
	require.NoError(b, err)
	_, err = setup.Exec(ctx, `VACUUM ANALYZE outbox_ops`)
	require.NoError(b, err)

	var outs []*outbox.Outbox
	for range 3 {
		wj, err := pgjournal.New(newPool(b, url), pgjournal.Options{})
		require.NoError(b, err)
		o, err := outbox.New(wj, outbox.Options{Concurrency: 8, PollInterval: 10 * time.Millisecond})
		require.NoError(b, err)
		o.Handle("send", func(context.Context, outbox.Op) error { return nil })
		outs = append(outs, o)
	}
	b.ResetTimer()
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, len(outs))
	for _, o := range outs {
		go func() { done <- o.Run(runCtx) }()
	}
	for {
		var pending int
		require.NoError(b, setup.QueryRow(ctx, `SELECT count(*) FROM outbox_ops WHERE state = 0`).Scan(&pending))
		if pending == 0 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	b.StopTimer()
	cancel()
	for range outs {
		<-done
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "ops/s")
}
