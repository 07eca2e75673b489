package outbox

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An op that succeeded keeps no payload in the Outbox's memory: 64 ops of
// 64 KiB held 4 MiB for the life of the process. Enqueueing it again is
// still recognized (its Kind is compared), and adds nothing.
func TestSucceededOpsDropTheirPayload(t *testing.T) {
	t.Parallel()
	j, err := OpenFile(filepath.Join(t.TempDir(), "journal"))
	require.NoError(t, err)
	t.Cleanup(func() { j.Close() })
	o, err := New(j, Options{})
	require.NoError(t, err)
	o.Handle("pay", func(context.Context, Op) error { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	defer func() { cancel(); <-done }()
	payload := bytes.Repeat([]byte("x"), 64<<10)
	var keys []string
	for range 64 {
		k, err := o.Enqueue(ctx, Op{Kind: "pay", Payload: payload})
		require.NoError(t, err)
		keys = append(keys, k)
	}
	for _, k := range keys {
		r, err := o.Wait(ctx, k)
		require.NoError(t, err)
		require.Equal(t, Succeeded, r.State)
	}
	held := 0
	o.mu.Lock()
	for _, p := range o.ops {
		held += len(p.e.Op.Payload)
	}
	o.mu.Unlock()
	assert.Zero(t, held, "payload bytes held after every op succeeded")
	again, err := o.Enqueue(ctx, Op{Key: keys[0], Kind: "pay", Payload: payload})
	require.NoError(t, err)
	assert.Equal(t, keys[0], again, "still recognized")
}
