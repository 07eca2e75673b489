package outbox_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"testing/synctest"
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

// gatedJournal holds each Add until release is closed, then fails it with
// addErr when set: an Add that a slow disk keeps in flight.
type gatedJournal struct {
	outbox.Journal
	entered chan struct{}
	release chan struct{}
	addErr  error
}

func (g *gatedJournal) Add(ctx context.Context, e outbox.Entry) error {
	g.entered <- struct{}{}
	<-g.release
	if g.addErr != nil {
		return g.addErr
	}
	return g.Journal.Add(ctx, e)
}

// A second Enqueue of a key whose first Enqueue is still writing waits for
// that write and reports its outcome: the key once it is durable, the
// first call's error when it failed, its own ctx's cause when it gives up
// first. It never writes the op a second time.
func TestEnqueueSameKeyWhileTheFirstWrites(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		addErr  error
		giveUp  bool
		wantErr error
	}{
		{name: "first succeeds"},
		{name: "first fails", addErr: errDiskFull, wantErr: errDiskFull},
		{name: "second gives up", giveUp: true, wantErr: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fj := openJournal(t, filepath.Join(t.TempDir(), "journal"))
				g := &gatedJournal{Journal: fj, entered: make(chan struct{}, 2), release: make(chan struct{}), addErr: tc.addErr}
				o, err := outbox.New(g, outbox.Options{Clock: retrytest.NewAutoClock()})
				require.NoError(t, err)
				op := outbox.Op{Key: "k1", Kind: "pay", Payload: []byte("a")}
				first := make(chan error, 1)
				go func() { _, err := o.Enqueue(context.Background(), op); first <- err }()
				<-g.entered // the first Add is in flight

				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				second := make(chan error, 1)
				go func() { _, err := o.Enqueue(ctx, op); second <- err }()
				synctest.Wait() // both are blocked now: the first in Add, the second on it
				select {
				case err := <-second:
					t.Fatalf("the second Enqueue returned %v before the first's write ended", err)
				default:
				}
				if tc.giveUp {
					cancel()
					require.ErrorIs(t, <-second, context.Canceled)
					close(g.release)
					require.NoError(t, <-first)
					return
				}
				close(g.release)
				err = <-second
				if tc.wantErr != nil {
					require.ErrorIs(t, err, tc.wantErr)
					require.ErrorIs(t, <-first, tc.wantErr)
					assert.Empty(t, load(t, fj))
					return
				}
				require.NoError(t, err)
				require.NoError(t, <-first)
				assert.Len(t, load(t, fj), 1)
				assert.Empty(t, g.entered, "the op was written once")
			})
		})
	}
}

// addFailingJournal fails its Adds while broken is set.
type addFailingJournal struct {
	outbox.Journal
	broken atomic.Bool
}

func (f *addFailingJournal) Add(ctx context.Context, e outbox.Entry) error {
	if f.broken.Load() {
		return errDiskFull
	}
	return f.Journal.Add(ctx, e)
}

// An Enqueue that the journal could not make durable returns the key it
// chose with the error, so that the caller retries the same intent under
// the same key: the op can never be enqueued under two. (It returned ""
// and the caller's retry made a second key.)
func TestFailedEnqueueReturnsItsKey(t *testing.T) {
	t.Parallel()
	fj := openJournal(t, filepath.Join(t.TempDir(), "journal"))
	j := &addFailingJournal{Journal: fj}
	o, err := outbox.New(j, outbox.Options{Clock: retrytest.NewAutoClock()})
	require.NoError(t, err)
	j.broken.Store(true)
	op := outbox.Op{Kind: "pay", Payload: []byte("order 7")}
	key, err := o.Enqueue(context.Background(), op)
	require.ErrorIs(t, err, errDiskFull)
	require.NotEmpty(t, key, "the key of the intent, to retry under")
	j.broken.Store(false)
	op.Key = key
	again, err := o.Enqueue(context.Background(), op)
	require.NoError(t, err)
	assert.Equal(t, key, again)
	entries, err := fj.Load(context.Background())
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, key, entries[0].Op.Key)
}
