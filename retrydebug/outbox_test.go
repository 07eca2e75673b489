package retrydebug_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/retrytest"
)

// runningOutbox returns an Outbox over a file journal whose Run runs until
// the test ends, with one op in a handler call (until release is closed),
// one dead letter (its error holds the secret), one pending op of a kind
// with no handler, and the clock two minutes past the first enqueue.
func runningOutbox(t *testing.T) (o *outbox.Outbox, release chan struct{}) {
	t.Helper()
	ctx := context.Background()
	j, err := outbox.OpenFile(filepath.Join(t.TempDir(), "journal"))
	require.NoError(t, err)
	clk := retrytest.NewClock()
	o, err = outbox.New(j, outbox.Options{Clock: clk, Concurrency: 2})
	require.NoError(t, err)
	started, release := make(chan struct{}, 1), make(chan struct{})
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		if string(op.Payload) == "frozen" {
			return retry.Permanent(errors.New("declined: " + secret))
		}
		started <- struct{}{}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- o.Run(runCtx) }()
	t.Cleanup(func() {
		stop()
		<-done
		j.Close()
	})
	_, err = o.Enqueue(ctx, outbox.Op{Kind: "later", Payload: []byte(secret)})
	require.NoError(t, err)
	clk.Add(time.Minute)
	frozen, err := o.Enqueue(ctx, outbox.Op{Kind: "pay", Payload: []byte("frozen")})
	require.NoError(t, err)
	_, err = o.Enqueue(ctx, outbox.Op{Kind: "pay", Payload: []byte("slow")})
	require.NoError(t, err)
	clk.Add(time.Minute)
	r, err := o.Wait(ctx, frozen)
	require.NoError(t, err)
	require.Equal(t, outbox.Failed, r.State)
	<-started
	return o, release
}

// The seam: an Outbox running real ops, and the page and its JSON show the
// numbers Stats has, read when they are served, with no key, payload or
// error text of any op.
func TestOutboxPanel(t *testing.T) {
	t.Parallel()
	o, release := runningOutbox(t)
	rec := retrydebug.NewRecorder(0, 0)
	_, body := get(t, rec, "/debug/retries")
	assert.NotContains(t, body, "Outboxes", "no section before one is registered")

	rec.Outbox("payments", o)
	want := retrydebug.OutboxOps{Name: "payments", Pending: 1, Running: 1, Failed: 1, OldestPending: 2 * time.Minute}
	assert.Equal(t, []retrydebug.OutboxOps{want}, rec.Snapshot().Outboxes)
	_, body = get(t, rec, "/debug/retries")
	assert.Contains(t, body, `<tr class="outbox"><td class="name">payments</td><td class="num pending">1</td><td class="num running">1</td><td class="num failed bad">1</td><td class="num oldest">2m0s</td></tr>`)
	assert.NotContains(t, body, secret)

	_, js := get(t, rec, "/debug/retries?format=json")
	var snap struct {
		Outboxes []retrydebug.OutboxOps `json:"outboxes"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &snap))
	assert.Equal(t, []retrydebug.OutboxOps{want}, snap.Outboxes)
	assert.NotContains(t, js, secret)

	// The numbers move with the ops.
	close(release)
	require.Eventually(t, func() bool { return o.Stats().Running == 0 }, 10*time.Second, time.Millisecond)
	want.Running = 0
	assert.Equal(t, []retrydebug.OutboxOps{want}, rec.Snapshot().Outboxes)

	rec.Outbox("payments", nil)
	assert.Empty(t, rec.Snapshot().Outboxes)
	_, body = get(t, rec, "/debug/retries")
	assert.NotContains(t, body, "Outboxes")
}
