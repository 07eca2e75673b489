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

	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retrytest"
)

// failingJournal is a Journal of another store (here a FileJournal inside)
// whose Updates fail once broken is set, as a full disk would make them.
type failingJournal struct {
	outbox.Journal
	broken atomic.Bool
}

var errDiskFull = errors.New("disk full")

func (f *failingJournal) Update(ctx context.Context, e outbox.Entry) error {
	if f.broken.Load() {
		return errDiskFull
	}
	return f.Journal.Update(ctx, e)
}

// When the journal cannot record an attempt, Run stops with its error
// rather than call a handler it could not count, and the op stays pending.
func TestRunStopsOnJournalError(t *testing.T) {
	t.Parallel()
	fj := openJournal(t, filepath.Join(t.TempDir(), "journal"))
	j := &failingJournal{Journal: fj}
	o, err := outbox.New(j, outbox.Options{Clock: retrytest.NewAutoClock()})
	require.NoError(t, err)
	var calls atomic.Int32
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error { calls.Add(1); return nil })
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	j.broken.Store(true)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = o.Run(ctx)
	require.ErrorIs(t, err, errDiskFull)
	assert.Zero(t, calls.Load(), "no call that the journal could not count")
	es := load(t, fj)
	require.Len(t, es, 1)
	assert.Equal(t, key, es[0].Op.Key)
	assert.Equal(t, outbox.Pending, es[0].State)
	assert.Equal(t, 0, es[0].Attempts)
}
