package outbox_test

import (
	"context"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/outbox"
)

// gatedUpdate is a journal whose Updates of a finished op wait for gate:
// outcomes that take long to commit (the count before a call is written
// at once).
type gatedUpdate struct {
	outbox.Journal
	gate chan struct{}
}

func (g *gatedUpdate) Update(ctx context.Context, e outbox.Entry) error {
	if e.State != outbox.Pending {
		<-g.gate
	}
	return g.Journal.Update(ctx, e)
}

// A slot is a handler call, in Run over a local journal too: the next op's
// call starts while the previous outcome is written, its Wait told only
// once it is, and at most MaxWriting times Concurrency attempts are in
// flight.
func TestSlotFreesWhenTheHandlerReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fj := openJournal(t, filepath.Join(t.TempDir(), "journal"))
		j := &gatedUpdate{Journal: fj, gate: make(chan struct{})}
		o, err := outbox.New(j, outbox.Options{Concurrency: 1})
		require.NoError(t, err)
		calls := handlePayCounted(o)
		keys := enqueuePays(t, o, outbox.MaxWriting+1)
		stop := startRun(o)
		synctest.Wait()
		assert.Equal(t, int32(outbox.MaxWriting), calls.Load(), "MaxWriting calls with one slot, their outcomes still being written; the last op waits")
		waited := make(chan error, 1)
		go func() {
			_, err := o.Wait(context.Background(), keys[0])
			waited <- err
		}()
		synctest.Wait()
		select {
		case err := <-waited:
			t.Fatalf("Wait returned %v before the outcome was written", err)
		default:
		}
		close(j.gate)
		require.NoError(t, <-waited)
		synctest.Wait()
		assert.Equal(t, int32(outbox.MaxWriting+1), calls.Load())
		for _, k := range keys {
			_, err := o.Wait(context.Background(), k)
			require.NoError(t, err, k)
		}
		assert.ErrorIs(t, stop(), context.Canceled)
	})
}

// slowUpdate is a shared journal whose Updates wait for gate, and whose
// Renews note the keys they renew: outcomes that take long to commit.
type slowUpdate struct {
	outbox.SharedJournal
	gate    chan struct{}
	mu      sync.Mutex
	renewed map[string]int
}

func (s *slowUpdate) Update(ctx context.Context, e outbox.Entry) error {
	<-s.gate
	return s.SharedJournal.Update(ctx, e)
}

func (s *slowUpdate) Renew(ctx context.Context, held []outbox.Entry, until time.Time) ([]string, error) {
	s.mu.Lock()
	for _, e := range held {
		s.renewed[e.Op.Key]++
	}
	s.mu.Unlock()
	return s.SharedJournal.Renew(ctx, held, until)
}

// A slot is a handler call: once a handler returns, the next op's call
// starts while the outcome is still being written, as a worker pool frees
// a worker before its completion commits. The op whose outcome waits
// stays held (its lease renewed, its Wait not yet told), and at most
// MaxWriting times Concurrency attempts are in flight.
func TestSharedSlotFreesWhenTheHandlerReturns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const lease = 30 * time.Second
		m := newMemShared()
		j := &slowUpdate{SharedJournal: m.handle(), gate: make(chan struct{}), renewed: map[string]int{}}
		o, err := outbox.New(j, outbox.Options{Lease: lease, Concurrency: 1, PollInterval: time.Second})
		require.NoError(t, err)
		calls := handlePayCounted(o)
		keys := enqueuePays(t, o, outbox.MaxWriting+1)
		stop := startRun(o)
		time.Sleep(2 * time.Second) // two polls: every op is due
		synctest.Wait()
		assert.Equal(t, int32(outbox.MaxWriting), calls.Load(), "MaxWriting calls with one slot, their outcomes still being written; the last op waits")

		waited := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), lease)
			defer cancel()
			_, err := o.Wait(ctx, keys[0])
			waited <- err
		}()
		time.Sleep(lease / 2) // renewals run meanwhile
		synctest.Wait()
		select {
		case err := <-waited:
			t.Fatalf("Wait returned %v before the outcome was written", err)
		default:
		}
		j.mu.Lock()
		renewed := 0
		for _, k := range keys {
			renewed += min(j.renewed[k], 1)
		}
		j.mu.Unlock()
		assert.Equal(t, outbox.MaxWriting, renewed, "the ops whose outcomes wait keep their leases")
		assert.Equal(t, outbox.Pending, m.get(keys[0]).State)

		close(j.gate)
		require.NoError(t, <-waited)
		time.Sleep(2 * time.Second)
		synctest.Wait()
		assert.Equal(t, int32(outbox.MaxWriting+1), calls.Load())
		for _, k := range keys {
			assert.Equal(t, outbox.Succeeded, m.get(k).State, k)
		}
		assert.ErrorIs(t, stop(), context.Canceled)
	})
}

// handlePayCounted makes the "pay" handler of o succeed; it returns the
// count of its calls.
func handlePayCounted(o *outbox.Outbox) *atomic.Int32 {
	calls := new(atomic.Int32)
	o.Handle("pay", func(context.Context, outbox.Op) error {
		calls.Add(1)
		return nil
	})
	return calls
}

// enqueuePays enqueues n ops of kind "pay" and returns their keys.
func enqueuePays(t *testing.T, o *outbox.Outbox, n int) []string {
	t.Helper()
	keys := make([]string, n)
	for i := range keys {
		var err error
		keys[i], err = o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
		require.NoError(t, err)
	}
	return keys
}
