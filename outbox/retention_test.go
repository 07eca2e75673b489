package outbox_test

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/outbox"
)

// A succeeded op is remembered for the retention, a day, so that the same
// intent enqueued again is recognized; after that the Outbox and its
// journal forget it, so that a process that runs for months does not hold
// every op it ran. Its payload goes as soon as it succeeds.
func TestSucceededOpsAreForgottenAfterTheRetention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "outbox.journal")
		o, j := newOutbox(t, path, outbox.Options{})
		o.Handle("pay", func(context.Context, outbox.Op) error { return nil })
		run(t, o)
		big := bytes.Repeat([]byte("x"), 1<<20)
		a, err := o.Enqueue(context.Background(), outbox.Op{Key: "order-a", Kind: "pay", Payload: big})
		require.NoError(t, err)
		assert.Equal(t, outbox.Succeeded, wait(t, o, a).State)

		es, err := j.Load(context.Background())
		require.NoError(t, err)
		require.Len(t, es, 1)
		assert.Nil(t, es[0].Op.Payload, "a succeeded op's payload is not held")

		again, err := o.Enqueue(context.Background(), outbox.Op{Key: "order-a", Kind: "pay", Payload: big})
		require.NoError(t, err, "within the retention: the same intent is recognized")
		assert.Equal(t, a, again)

		time.Sleep(25 * time.Hour)
		b, err := o.Enqueue(context.Background(), outbox.Op{Key: "order-b", Kind: "pay", Payload: []byte("b")})
		require.NoError(t, err)
		assert.Equal(t, outbox.Succeeded, wait(t, o, b).State) // a finish: the Outbox looks
		_, err = o.Wait(context.Background(), a)
		require.ErrorIs(t, err, outbox.ErrUnknownKey, "forgotten after the retention")

		// The key is free again, in the Outbox and in its journal.
		c, err := o.Enqueue(context.Background(), outbox.Op{Key: "order-a", Kind: "pay", Payload: []byte("new")})
		require.NoError(t, err)
		assert.Equal(t, outbox.Succeeded, wait(t, o, c).State)
	})
}
