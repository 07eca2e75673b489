package outbox_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/outbox/journaltest"
	"github.com/stormguard/retry/retrytest"
)

// The fake keeps the contract that the runner tests below rely on.
func TestMemSharedContract(t *testing.T) {
	journaltest.Run(t, func(t *testing.T) journaltest.Open {
		m := newMemShared()
		return func() (outbox.Journal, error) { return m.handle(), nil }
	})
}

// startRun runs o until the returned stop is called; stop returns Run's
// error.
func startRun(o *outbox.Outbox) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	return func() error { cancel(); return <-done }
}

func newShared(t *testing.T, m *memShared, opts outbox.Options) *outbox.Outbox {
	t.Helper()
	o, err := outbox.New(m.handle(), opts)
	require.NoError(t, err)
	return o
}

// An Outbox over a SharedJournal claims ops as they fall due, including
// those another process enqueued, and never loads the journal.
func TestSharedClaimsInsteadOfLoading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		ctx := context.Background()
		other := m.handle() // another process's enqueue
		e, err := outbox.NewEntry(outbox.Op{Kind: "send", Payload: []byte("x")}, time.Now(), 0)
		require.NoError(t, err)
		require.NoError(t, other.Add(ctx, e))

		o := newShared(t, m, outbox.Options{})
		var calls atomic.Int32
		o.Handle("send", func(ctx context.Context, op outbox.Op) error { calls.Add(1); return nil })
		stop := startRun(o)
		synctest.Wait()
		assert.Equal(t, int32(1), calls.Load(), "handler calls")
		assert.Equal(t, outbox.Succeeded, m.get(e.Op.Key).State)
		assert.Empty(t, m.get(e.Op.Key).Lease, "a finished op holds no lease")
		assert.ErrorIs(t, stop(), context.Canceled)
		_, loads := m.counts()
		assert.Zero(t, loads, "Load calls")
	})
}

// Polling is bounded when idle (one Claim per PollInterval), and an
// Enqueue in this process is claimed at once, without waiting for a poll.
func TestSharedPollsBoundedAndEnqueueWakes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		o := newShared(t, m, outbox.Options{PollInterval: time.Second})
		ran := make(chan time.Time, 1)
		o.Handle("send", func(ctx context.Context, op outbox.Op) error { ran <- time.Now(); return nil })
		stop := startRun(o)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		claims, _ := m.counts()
		assert.InDelta(t, 601, claims, 1, "Claim calls in 10 idle minutes at a 1s poll")

		time.Sleep(time.Second / 2) // between two polls
		enqueued := time.Now()
		key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "send"})
		require.NoError(t, err)
		synctest.Wait()
		select {
		case at := <-ran:
			assert.Equal(t, enqueued, at, "the op ran at its Enqueue's instant")
		default:
			t.Fatal("the op enqueued here did not run before the next poll")
		}
		assert.Equal(t, outbox.Succeeded, wait(t, o, key).State)
		assert.ErrorIs(t, stop(), context.Canceled)
	})
}

// Stopping Run mid-attempt leaves the op pending, its attempt given back,
// and its lease released: another process claims it at once, not after
// the lease.
func TestSharedStopReleasesLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		a := newShared(t, m, outbox.Options{Lease: time.Hour})
		started := make(chan struct{})
		a.Handle("send", func(ctx context.Context, op outbox.Op) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		})
		stopA := startRun(a)
		key, err := a.Enqueue(context.Background(), outbox.Op{Kind: "send"})
		require.NoError(t, err)
		<-started
		assert.ErrorIs(t, stopA(), context.Canceled)
		e := m.get(key)
		assert.Equal(t, outbox.Pending, e.State)
		assert.Zero(t, e.Attempts, "the cut attempt is given back")
		assert.Empty(t, e.Lease, "the lease is released")

		b := newShared(t, m, outbox.Options{Lease: time.Hour})
		done := make(chan string, 1)
		b.Handle("send", func(ctx context.Context, op outbox.Op) error { done <- op.Key; return nil })
		start := time.Now()
		stopB := startRun(b)
		assert.Equal(t, key, <-done, "the other process runs the same op, under its key")
		assert.Less(t, time.Since(start), time.Hour, "claimed before the lease would have ended")
		synctest.Wait()
		assert.ErrorIs(t, stopB(), context.Canceled)
	})
}

// A process that dies holding a lease (no Release) leaves the op to
// another once the lease ends, with its attempt count as written.
func TestSharedTakeoverAfterLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		ctx := context.Background()
		dead := m.handle()
		e, err := outbox.NewEntry(outbox.Op{Kind: "send"}, time.Now(), 0)
		require.NoError(t, err)
		require.NoError(t, dead.Add(ctx, e))
		es, err := dead.Claim(ctx, outbox.ClaimRequest{Owner: "dead", Kinds: []string{"send"}, Now: time.Now(), Until: time.Now().Add(30 * time.Second), Limit: 1})
		require.NoError(t, err)
		require.Len(t, es, 1)
		es[0].Attempts = 1 // written before its call, then the process died
		require.NoError(t, dead.Update(ctx, es[0]))
		claimedAt := time.Now()

		o := newShared(t, m, outbox.Options{PollInterval: time.Second, Lease: 30 * time.Second})
		var got outbox.Op
		var at time.Time
		o.Handle("send", func(ctx context.Context, op outbox.Op) error { got, at = op, time.Now(); return nil })
		stop := startRun(o)
		time.Sleep(time.Minute)
		synctest.Wait()
		assert.Equal(t, e.Op.Key, got.Key, "resumed under its key")
		assert.GreaterOrEqual(t, at.Sub(claimedAt), 30*time.Second, "not before the dead lease ended")
		assert.Equal(t, 2, m.get(e.Op.Key).Attempts, "attempts counted across processes")
		assert.ErrorIs(t, stop(), context.Canceled)
	})
}

// A process whose lease another has taken learns it at its next renewal:
// its attempt is cut short, its write is fenced off (the new owner's state
// stands), and its Run goes on.
func TestSharedLostLeaseIsFenced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		o := newShared(t, m, outbox.Options{Lease: 30 * time.Second})
		started := make(chan struct{}, 1)
		cut := make(chan error, 1)
		o.Handle("send", func(ctx context.Context, op outbox.Op) error {
			started <- struct{}{}
			<-ctx.Done()
			cut <- ctx.Err()
			return ctx.Err()
		})
		stop := startRun(o)
		key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "send"})
		require.NoError(t, err)
		<-started
		m.steal(key)
		time.Sleep(10 * time.Second) // the renewal, at a third of the lease
		synctest.Wait()
		select {
		case err := <-cut:
			assert.ErrorIs(t, err, context.Canceled)
		default:
			t.Fatal("the attempt whose lease was taken was not cut short")
		}
		e := m.get(key)
		assert.Equal(t, "thief#1", e.Lease, "the new owner keeps the lease")
		assert.Equal(t, 1, e.Attempts, "the stale process did not write its given-back count")

		// Run goes on: a new op still runs.
		o.Handle("other", func(ctx context.Context, op outbox.Op) error { return nil })
		k2, err := o.Enqueue(context.Background(), outbox.Op{Kind: "other"})
		require.NoError(t, err)
		assert.Equal(t, outbox.Succeeded, wait(t, o, k2).State)
		assert.ErrorIs(t, stop(), context.Canceled)
	})
}

// MaxAttempts counts calls across processes, and the next attempt's time
// is the one written: a restart neither resets nor skips the backoff.
func TestSharedAttemptsAndBackoffAcrossProcesses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		policy := retry.Policy{MaxAttempts: 3, BaseBackoff: time.Minute, MaxBackoff: time.Minute, Jitter: retry.NoJitter}
		var calls atomic.Int32
		boom := func(ctx context.Context, op outbox.Op) error { calls.Add(1); return errors.New("503") }

		a := newShared(t, m, outbox.Options{Policy: policy, PollInterval: time.Second})
		a.Handle("send", boom)
		stopA := startRun(a)
		key, err := a.Enqueue(context.Background(), outbox.Op{Kind: "send"})
		require.NoError(t, err)
		synctest.Wait()
		require.Equal(t, int32(1), calls.Load())
		next := m.get(key).Next
		assert.ErrorIs(t, stopA(), context.Canceled)

		b := newShared(t, m, outbox.Options{Policy: policy, PollInterval: time.Second})
		var times []time.Time
		var mu sync.Mutex
		b.Handle("send", func(ctx context.Context, op outbox.Op) error {
			mu.Lock()
			times = append(times, time.Now())
			mu.Unlock()
			return boom(ctx, op)
		})
		stopB := startRun(b)
		time.Sleep(10 * time.Minute)
		synctest.Wait()
		assert.Equal(t, int32(3), calls.Load(), "handler calls by both processes")
		e := m.get(key)
		assert.Equal(t, outbox.Failed, e.State)
		assert.Equal(t, "attempts used up", e.Reason)
		require.NotEmpty(t, times)
		assert.False(t, times[0].Before(next), "the second attempt waited for the written Next %v (ran %v)", next, times[0])
		assert.ErrorIs(t, stopB(), context.Canceled)
	})
}

// Two processes share the ops: each runs once.
func TestSharedTwoProcessesRunEachOpOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		var mu sync.Mutex
		runs := map[string]int{}
		var stops []func() error
		var outs []*outbox.Outbox
		for range 2 {
			o := newShared(t, m, outbox.Options{Concurrency: 4, PollInterval: 10 * time.Millisecond})
			o.Handle("send", func(ctx context.Context, op outbox.Op) error {
				time.Sleep(time.Millisecond)
				mu.Lock()
				runs[op.Key]++
				mu.Unlock()
				return nil
			})
			outs = append(outs, o)
			stops = append(stops, startRun(o))
		}
		for i := range 100 {
			_, err := outs[i%2].Enqueue(context.Background(), outbox.Op{Kind: "send"})
			require.NoError(t, err)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		assert.Len(t, runs, 100)
		for k, n := range runs {
			assert.Equal(t, 1, n, "runs of %s", k)
		}
		for _, stop := range stops {
			assert.ErrorIs(t, stop(), context.Canceled)
		}
	})
}

func TestSharedBadOptions(t *testing.T) {
	m := newMemShared()
	for _, opts := range []outbox.Options{{PollInterval: -time.Second}, {PollInterval: time.Microsecond}, {Lease: -1}, {Lease: time.Millisecond}} {
		_, err := outbox.New(m.handle(), opts)
		assert.Error(t, err, "New(%+v)", opts)
	}
}

// Wait returns the outcome of an op enqueued here and run by another
// process.
func TestSharedWaitSeesAnotherProcessFinish(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		a := newShared(t, m, outbox.Options{PollInterval: time.Second})
		b := newShared(t, m, outbox.Options{PollInterval: time.Second})
		b.Handle("send", func(ctx context.Context, op outbox.Op) error { return retry.Permanent(errors.New("declined")) })
		stopB := startRun(b)
		a.Handle("mail", func(ctx context.Context, op outbox.Op) error { return nil }) // a runs no "send"
		stopA := startRun(a)
		key, err := a.Enqueue(context.Background(), outbox.Op{Kind: "send"})
		require.NoError(t, err)
		time.Sleep(3 * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		r, err := a.Wait(ctx, key)
		checkWaitErr(t, r, err)
		assert.Equal(t, outbox.Failed, r.State)
		assert.Equal(t, 1, r.Attempts)
		assert.ErrorContains(t, r.Err, "declined")
		assert.ErrorIs(t, stopA(), context.Canceled)
		assert.ErrorIs(t, stopB(), context.Canceled)
	})
}

// Over a SharedJournal, Wait also waits for an op this Outbox did not
// enqueue: one committed straight into the journal (as pgjournal's
// EnqueueTx commits it with a business row), whether it is still pending,
// already finished, or finished by another process; a key the journal does
// not hold either is ErrUnknownKey.
func TestSharedWaitForAnOpEnqueuedOutsideTheOutbox(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		ctx := context.Background()
		direct := m.handle() // the journal, written to without the Outbox
		add := func(kind string) string {
			e, err := outbox.NewEntry(outbox.Op{Kind: kind}, time.Now(), 0)
			require.NoError(t, err)
			require.NoError(t, direct.Add(ctx, e))
			return e.Op.Key
		}
		a := newShared(t, m, outbox.Options{PollInterval: time.Second})
		var calls atomic.Int32
		a.Handle("send", func(ctx context.Context, op outbox.Op) error { calls.Add(1); return nil })
		b := newShared(t, m, outbox.Options{PollInterval: time.Second})
		b.Handle("mail", func(ctx context.Context, op outbox.Op) error { return retry.Permanent(errors.New("bounced")) })

		_, err := a.Wait(ctx, "no-such-key")
		require.ErrorIs(t, err, outbox.ErrUnknownKey)

		// Pending when Wait starts, run here.
		pending := add("send")
		waited := make(chan outbox.Result, 1)
		go func() {
			r, err := a.Wait(ctx, pending)
			checkWaitErr(t, r, err)
			waited <- r
		}()
		synctest.Wait()
		require.Empty(t, waited, "Wait returned before anything ran the op")
		stopA := startRun(a)
		r := <-waited
		assert.Equal(t, outbox.Succeeded, r.State)
		assert.Equal(t, int32(1), calls.Load(), "handler calls")

		// Finished by another process, after a's Wait began.
		mail := add("mail")
		go func() {
			r, err := a.Wait(ctx, mail)
			checkWaitErr(t, r, err)
			waited <- r
		}()
		synctest.Wait()
		stopB := startRun(b)
		r = <-waited
		assert.Equal(t, outbox.Failed, r.State)
		assert.ErrorContains(t, r.Err, "bounced")
		assert.ErrorIs(t, stopB(), context.Canceled)
		assert.ErrorIs(t, stopA(), context.Canceled)

		// Already finished: answered from the journal, with no Run.
		c := newShared(t, m, outbox.Options{})
		r, err = c.Wait(ctx, mail)
		checkWaitErr(t, r, err)
		assert.Equal(t, outbox.Failed, r.State)
		assert.Equal(t, 1, r.Attempts)
		assert.Equal(t, int32(1), calls.Load(), "Wait ran nothing")
	})
}

// A client's retry that reaches another instance enqueues the same op
// again there: over a shared journal that returns the op's key, as
// enqueueing it twice in one process does, and another op under the key
// is ErrKeyConflict. (Both were ErrDuplicate, the journal's own word.)
func TestSharedEnqueueOfTheSameOpInAnotherInstance(t *testing.T) {
	t.Parallel()
	m := newMemShared()
	a := newShared(t, m, outbox.Options{Clock: retrytest.NewAutoClock()})
	b := newShared(t, m, outbox.Options{Clock: retrytest.NewAutoClock()})
	ctx := context.Background()
	op := outbox.Op{Key: "order-42", Kind: "pay", Payload: []byte("42 EUR")}
	key, err := a.Enqueue(ctx, op)
	require.NoError(t, err)
	again, err := b.Enqueue(ctx, op)
	require.NoError(t, err, "the same op, in another instance")
	assert.Equal(t, key, again)
	other := op
	other.Payload = []byte("43 EUR")
	_, err = b.Enqueue(ctx, other)
	assert.ErrorIs(t, err, outbox.ErrKeyConflict)
	assert.NotErrorIs(t, err, outbox.ErrDuplicate)
	m.mu.Lock()
	defer m.mu.Unlock()
	assert.Len(t, m.ops, 1, "one op in the journal")
}

// countingClock is the real clock (synctest's, in a bubble) that counts
// the waits set on it: each is a wake-up of Run's loop.
type countingClock struct{ waits atomic.Int64 }

func (c *countingClock) Now() time.Time { return time.Now() }
func (c *countingClock) WithDeadline(parent context.Context, d time.Time) (context.Context, context.CancelFunc) {
	return context.WithDeadline(parent, d)
}
func (c *countingClock) WithTimeout(parent context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	c.waits.Add(1)
	return context.WithTimeout(parent, d)
}

// While every slot is busy, and in a process with no handler, Run's loop
// sleeps until something can happen (an attempt ends, a wake, a lease to
// renew): it does not wake every millisecond to find nothing to claim.
func TestSharedRunSleepsWhileBusyOrIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, handlers := range []bool{true, false} {
			clk := &countingClock{}
			m := newMemShared()
			o := newShared(t, m, outbox.Options{Clock: clk, Concurrency: 1, PollInterval: 100 * time.Millisecond})
			release := make(chan struct{})
			if handlers {
				o.Handle("pay", func(ctx context.Context, _ outbox.Op) error {
					select {
					case <-release:
					case <-ctx.Done():
					}
					return nil
				})
			}
			_, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay", Payload: []byte("x")})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- o.Run(ctx) }()
			time.Sleep(time.Millisecond)
			synctest.Wait()
			before := clk.waits.Load()
			time.Sleep(5 * time.Second) // fake time: the bubble's
			synctest.Wait()
			woke := clk.waits.Load() - before
			assert.LessOrEqual(t, woke, int64(2), "handlers %v: woke %d times in 5s", handlers, woke)
			close(release)
			cancel()
			<-done
		}
	})
}

// Over a shared journal, Redrive re-drives a dead letter this Outbox never
// held: one another process enqueued (or EnqueueTx, or a restart), as
// DeadLetters lists them. (It answered ErrUnknownKey.)
func TestSharedRedriveOfAnotherProcessDeadLetter(t *testing.T) {
	t.Parallel()
	m := newMemShared()
	clk := retrytest.NewAutoClock()
	a := newShared(t, m, outbox.Options{Clock: clk, Policy: retry.Policy{MaxAttempts: 1}})
	var fail atomic.Bool
	fail.Store(true)
	a.Handle("pay", func(context.Context, outbox.Op) error {
		if fail.Load() {
			return retry.Permanent(errors.New("card declined"))
		}
		return nil
	})
	key, err := a.Enqueue(context.Background(), outbox.Op{Kind: "pay", Payload: []byte("42")})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	r, err := a.Wait(ctx, key)
	require.ErrorIs(t, err, outbox.ErrFailed)
	require.Equal(t, outbox.Failed, r.State)
	cancel()
	<-done

	b := newShared(t, m, outbox.Options{Clock: clk})
	b.Handle("pay", func(context.Context, outbox.Op) error { return nil })
	dead, err := b.DeadLetters(context.Background())
	require.NoError(t, err)
	require.Len(t, dead, 1)
	require.NoError(t, b.Redrive(context.Background(), key), "b never held the op")
	fail.Store(false)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	go func() { done <- b.Run(ctx) }()
	defer func() { cancel(); <-done }()
	r, err = b.Wait(ctx, key)
	require.NoError(t, err)
	assert.Equal(t, outbox.Succeeded, r.State)
	assert.Equal(t, 1, r.Attempts, "attempts start again")
	assert.ErrorIs(t, b.Redrive(context.Background(), "no-such-key"), outbox.ErrUnknownKey)
}

// A process that only enqueues (a web tier; the workers are elsewhere)
// sees its op finish: Wait follows it in the journal. (It waited forever,
// since only Run's polls looked.)
func TestSharedWaitInAProcessThatRunsNothing(t *testing.T) {
	t.Parallel()
	m := newMemShared()
	clk := retrytest.NewAutoClock()
	web := newShared(t, m, outbox.Options{Clock: clk, PollInterval: 10 * time.Millisecond})
	worker := newShared(t, m, outbox.Options{Clock: clk, PollInterval: 10 * time.Millisecond})
	worker.Handle("pay", func(context.Context, outbox.Op) error { return nil })
	key, err := web.Enqueue(context.Background(), outbox.Op{Kind: "pay", Payload: []byte("42")})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- worker.Run(ctx) }()
	defer func() { cancel(); <-done }()
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	r, err := web.Wait(wctx, key)
	require.NoError(t, err)
	assert.Equal(t, outbox.Succeeded, r.State)
}

// slowClaim is a shared journal whose Claim takes longer than the poll
// interval, as a loaded database's does.
type slowClaim struct {
	outbox.SharedJournal
	d time.Duration
}

func (s slowClaim) Claim(ctx context.Context, c outbox.ClaimRequest) ([]outbox.Entry, error) {
	time.Sleep(s.d) // the bubble's time
	return s.SharedJournal.Claim(ctx, c)
}

// A Run whose claim takes longer than its poll interval, with nothing in
// flight, still polls again: an op another process enqueues later is run,
// though nothing wakes this one. (A guard on the loop's timer: without a
// timer while it has a free slot, Run would wait for a wake that never
// comes.)
func TestSharedRunPollsAfterASlowClaim(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := newMemShared()
		o := newShared(t, m, outbox.Options{PollInterval: 10 * time.Millisecond})
		ran := make(chan string, 1)
		o.Handle("pay", func(_ context.Context, op outbox.Op) error { ran <- op.Key; return nil })
		o2, err := outbox.New(slowClaim{SharedJournal: m.handle(), d: 50 * time.Millisecond}, outbox.Options{PollInterval: 10 * time.Millisecond})
		require.NoError(t, err)
		o2.Handle("pay", func(_ context.Context, op outbox.Op) error { ran <- op.Key; return nil })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- o2.Run(ctx) }()
		time.Sleep(200 * time.Millisecond)
		synctest.Wait()
		key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay", Payload: []byte("later")}) // another process: no wake
		require.NoError(t, err)
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case got := <-ran:
			assert.Equal(t, key, got)
		default:
			t.Fatal("the op was never claimed")
		}
		cancel()
		<-done
	})
}
