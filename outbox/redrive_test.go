package outbox_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retrytest"
)

// A dead letter is listed by the journal with its reason and last error,
// and Redrive runs it again under the same key, with a fresh count and
// horizon, which survive a restart.
func TestRedrive(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	clk := retrytest.NewAutoClock()
	o, j := newOutbox(t, path, outbox.Options{Clock: clk})
	var down atomic.Bool
	down.Store(true)
	var keys []string
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		keys = append(keys, op.Key)
		if down.Load() {
			return retry.Permanent(errors.New("account frozen"))
		}
		return nil
	})
	stop := run(t, o)
	key, err := o.Enqueue(ctx, outbox.Op{Kind: "pay", NotAfter: clk.Now().Add(time.Minute)})
	require.NoError(t, err)
	require.Equal(t, outbox.Failed, wait(t, o, key).State)

	es := load(t, j)
	require.Len(t, es, 1)
	assert.Equal(t, outbox.Failed, es[0].State)
	assert.Equal(t, "permanent", es[0].Reason)
	assert.Equal(t, "account frozen", es[0].LastError)

	assert.ErrorIs(t, o.Redrive(ctx, "nope"), outbox.ErrUnknownKey)
	clk.Add(2 * time.Minute) // past the op's NotAfter: Redrive gives it a new one
	down.Store(false)
	require.NoError(t, o.Redrive(ctx, key))
	r := wait(t, o, key)
	assert.Equal(t, outbox.Result{Key: key, State: outbox.Succeeded, Attempts: 1}, r)
	assert.Equal(t, []string{key, key}, keys)
	assert.Error(t, o.Redrive(ctx, key), "only a failed op can be re-driven")
	stop()
	require.NoError(t, j.Close())

	j = openJournal(t, path)
	es = load(t, j)
	require.Len(t, es, 1)
	assert.Equal(t, outbox.Succeeded, es[0].State)
	assert.Equal(t, 1, es[0].Attempts)
	assert.True(t, es[0].Op.NotAfter.After(clk.Now()), "the new NotAfter was written")
}
