package outbox_test

import (
	"context"
	"errors"
	"os"
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

// newOutbox opens the journal at path and an Outbox over it; both are
// closed when the test ends.
func newOutbox(t *testing.T, path string, opts outbox.Options) (*outbox.Outbox, *outbox.FileJournal) {
	t.Helper()
	j := openJournal(t, path)
	o, err := outbox.New(j, opts)
	require.NoError(t, err)
	return o, j
}

// run starts o.Run and returns a func that stops it and checks what it
// returned.
func run(t *testing.T, o *outbox.Outbox) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	stopped := false
	stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
	}
	t.Cleanup(stop)
	return stop
}

func wait(t *testing.T, o *outbox.Outbox, key string) outbox.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := o.Wait(ctx, key)
	checkWaitErr(t, r, err)
	return r
}

// checkWaitErr checks Wait's error against its Result: nil for a success,
// one that matches ErrFailed and the last attempt's error for a failure.
func checkWaitErr(t *testing.T, r outbox.Result, err error) {
	t.Helper()
	if r.State != outbox.Failed {
		require.NoError(t, err)
		return
	}
	require.ErrorIs(t, err, outbox.ErrFailed)
	require.ErrorIs(t, err, r.Err, "it wraps the last attempt's error")
	assert.Equal(t, "outbox: op failed: "+r.Reason, err.Error(), "the Reason, not the error's text")
}

// Enqueue is durable on its own: with no Run, the op is in the journal
// when Enqueue returns, under the key it made, and it runs after a restart.
func TestEnqueueDurableWithoutRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	o, j := newOutbox(t, path, outbox.Options{Clock: retrytest.NewAutoClock()})
	key, err := o.Enqueue(ctx, outbox.Op{Kind: "pay", Payload: []byte("order 7")})
	require.NoError(t, err)
	assert.Len(t, key, 26, "128 random bits in base32")
	key2, err := o.Enqueue(ctx, outbox.Op{Kind: "pay", Payload: []byte("order 8")})
	require.NoError(t, err)
	assert.NotEqual(t, key, key2)
	require.NoError(t, j.Close())

	o, _ = newOutbox(t, path, outbox.Options{Clock: retrytest.NewAutoClock()})
	var got []string
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		got = append(got, op.Key+" "+string(op.Payload))
		return nil
	})
	run(t, o)
	assert.Equal(t, outbox.Succeeded, wait(t, o, key).State)
	assert.Equal(t, outbox.Succeeded, wait(t, o, key2).State)
	assert.Equal(t, []string{key + " order 7", key2 + " order 8"}, got)
}

// Failed attempts are retried under the same key, with the Policy's
// backoff, until one succeeds.
func TestRunRetriesWithTheSameKey(t *testing.T) {
	t.Parallel()
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Clock: retrytest.NewAutoClock()})
	var keys []string
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		keys = append(keys, op.Key)
		if len(keys) < 3 {
			return errors.New("503")
		}
		return nil
	})
	run(t, o)
	key, err := o.Enqueue(context.Background(), outbox.Op{Key: "order-7", Kind: "pay"})
	require.NoError(t, err)
	assert.Equal(t, "order-7", key)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Result{Key: key, State: outbox.Succeeded, Attempts: 3}, r)
	assert.Equal(t, []string{key, key, key}, keys)
}

// retry.Permanent ends an op at once: it fails with its error.
func TestPermanentFailsAtOnce(t *testing.T) {
	t.Parallel()
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Clock: retrytest.NewAutoClock()})
	declined := errors.New("card declined")
	var calls atomic.Int32
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		calls.Add(1)
		return retry.Permanent(declined)
	})
	run(t, o)
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Failed, r.State)
	assert.Equal(t, 1, r.Attempts)
	assert.Equal(t, "permanent", r.Reason)
	assert.ErrorIs(t, r.Err, declined)
	assert.EqualValues(t, 1, calls.Load())
}

// The Policy's Classifier decides: one that refuses an error fails the op.
func TestClassifierDecides(t *testing.T) {
	t.Parallel()
	p := retry.Policy{Classifier: func(ctx context.Context, a retry.Attempt) retry.Decision {
		return retry.Decision{Retry: a.Number < 2, Reason: "custom"}
	}}
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Policy: p, Clock: retrytest.NewAutoClock()})
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error { return errors.New("no") })
	run(t, o)
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Failed, r.State)
	assert.Equal(t, 2, r.Attempts)
	assert.Equal(t, "custom", r.Reason)
}

// MaxAttempts counts calls across processes: a restart does not reset it,
// and a dead letter keeps its last error through the restart.
func TestMaxAttemptsAcrossRestarts(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal")
	opts := outbox.Options{Policy: retry.Policy{MaxAttempts: 3}, Clock: retrytest.NewClock()}
	o, j := newOutbox(t, path, opts)
	var calls atomic.Int32
	called := make(chan struct{}, 10)
	fail := func(ctx context.Context, op outbox.Op) error {
		calls.Add(1)
		called <- struct{}{}
		return errors.New("still down")
	}
	o.Handle("pay", fail)
	stop := run(t, o)
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	<-called
	stop() // the clock never moves: the second attempt never comes here
	require.NoError(t, j.Close())

	o, _ = newOutbox(t, path, outbox.Options{Policy: retry.Policy{MaxAttempts: 3}, Clock: retrytest.NewAutoClock()})
	o.Handle("pay", fail)
	run(t, o)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Failed, r.State)
	assert.Equal(t, 3, r.Attempts)
	assert.Equal(t, "attempts used up", r.Reason)
	assert.EqualValues(t, 3, calls.Load(), "three calls in all, across two processes")
	assert.EqualError(t, r.Err, "still down")
}

// The next attempt's time is drawn once and written: after a restart the op
// waits out the rest of its backoff instead of running at once.
func TestNextAttemptTimeSurvivesRestart(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal")
	policy := retry.Policy{BaseBackoff: time.Minute, MaxBackoff: time.Minute, Jitter: retry.NoJitter}
	clk := retrytest.NewClock()
	o, j := newOutbox(t, path, outbox.Options{Policy: policy, Clock: clk})
	called := make(chan struct{}, 10)
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		called <- struct{}{}
		return errors.New("down")
	})
	stop := run(t, o)
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	<-called
	require.Equal(t, time.Minute, <-clk.Waits(), "Run waits for the drawn backoff")
	stop()
	require.NoError(t, j.Close())

	j = openJournal(t, path)
	es := load(t, j)
	require.Len(t, es, 1)
	assert.Equal(t, 1, es[0].Attempts)
	assert.Equal(t, time.Minute, es[0].LastWait)
	assert.True(t, es[0].Next.Equal(clk.Now().Add(time.Minute)), "Next = %v, want %v", es[0].Next, clk.Now().Add(time.Minute))

	clk2 := retrytest.NewClock()
	o, err = outbox.New(j, outbox.Options{Policy: policy, Clock: clk2})
	require.NoError(t, err)
	ok := make(chan struct{}, 1)
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error { ok <- struct{}{}; return nil })
	run(t, o)
	w := <-clk2.Waits()
	assert.True(t, w > 0 && w <= time.Minute, "the restarted Run waits %v: the rest of the minute", w)
	select {
	case <-ok:
		t.Fatal("the op ran before its next time")
	default:
	}
	clk2.Add(w)
	<-ok
	r := wait(t, o, key)
	assert.Equal(t, 2, r.Attempts)
}

// Stopping Run mid-attempt leaves the op pending, never failed, and does
// not count the cut attempt; the next Run runs it.
func TestStopMidAttemptLeavesPending(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal")
	o, j := newOutbox(t, path, outbox.Options{Policy: retry.Policy{MaxAttempts: 1}, Clock: retrytest.NewAutoClock()})
	started := make(chan struct{})
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	})
	stop := run(t, o)
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	<-started
	stop()
	es := load(t, j)
	require.Len(t, es, 1)
	assert.Equal(t, outbox.Pending, es[0].State)
	assert.Equal(t, 0, es[0].Attempts)
	require.NoError(t, j.Close())

	o, _ = newOutbox(t, path, outbox.Options{Policy: retry.Policy{MaxAttempts: 1}, Clock: retrytest.NewAutoClock()})
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error { return nil })
	run(t, o)
	assert.Equal(t, outbox.Result{Key: key, State: outbox.Succeeded, Attempts: 1}, wait(t, o, key))
}

// An op whose next attempt would fall past NotAfter is given up then, with
// its last error.
func TestNotAfterGivesUp(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewAutoClock()
	policy := retry.Policy{MaxAttempts: -1, BaseBackoff: time.Minute, MaxBackoff: time.Minute, Jitter: retry.NoJitter}
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Policy: policy, Clock: clk})
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error { return errors.New("down") })
	run(t, o)
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay", NotAfter: clk.Now().Add(150 * time.Second)})
	require.NoError(t, err)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Failed, r.State)
	assert.Equal(t, "not after", r.Reason)
	assert.Equal(t, 3, r.Attempts, "attempts at 0, 1m and 2m; 3m is past NotAfter")
	assert.EqualError(t, r.Err, "down")
}

// The default horizon is 24h from Enqueue.
func TestDefaultHorizon(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	o, j := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Clock: clk})
	_, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	es := load(t, j)
	require.Len(t, es, 1)
	assert.True(t, es[0].Op.NotAfter.Equal(clk.Now().Add(24*time.Hour)), "NotAfter = %v", es[0].Op.NotAfter)
}

// The same op enqueued twice runs once; a key reused for another op is an
// error.
func TestEnqueueSameKey(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	o, j := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Clock: retrytest.NewAutoClock()})
	op := outbox.Op{Key: "k1", Kind: "pay", Payload: []byte("a")}
	for range 2 {
		key, err := o.Enqueue(ctx, op)
		require.NoError(t, err)
		assert.Equal(t, "k1", key)
	}
	_, err := o.Enqueue(ctx, outbox.Op{Key: "k1", Kind: "pay", Payload: []byte("b")})
	assert.ErrorIs(t, err, outbox.ErrKeyConflict)
	assert.NotContains(t, err.Error(), "k1", "errors never quote a key")
	_, err = o.Enqueue(ctx, outbox.Op{Key: "k1", Kind: "refund", Payload: []byte("a")})
	assert.ErrorIs(t, err, outbox.ErrKeyConflict)
	assert.Len(t, load(t, j), 1)
}

func TestEnqueueInvalid(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	o, j := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Clock: clk})
	for _, tc := range []struct {
		name string
		op   outbox.Op
	}{
		{"no kind", outbox.Op{}},
		{"space in key", outbox.Op{Key: "a b", Kind: "pay"}},
		{"quote in key", outbox.Op{Key: `a"b`, Kind: "pay"}},
		{"long key", outbox.Op{Key: string(make([]byte, 256)), Kind: "pay"}},
		{"huge payload", outbox.Op{Kind: "pay", Payload: make([]byte, outbox.MaxPayload+1)}},
		{"past NotAfter", outbox.Op{Kind: "pay", NotAfter: clk.Now().Add(-time.Second)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := o.Enqueue(context.Background(), tc.op)
			assert.ErrorIs(t, err, outbox.ErrInvalidOp)
		})
	}
	assert.Empty(t, load(t, j))
}

func TestNewInvalid(t *testing.T) {
	t.Parallel()
	j := openJournal(t, filepath.Join(t.TempDir(), "journal"))
	_, err := outbox.New(nil, outbox.Options{})
	assert.Error(t, err)
	_, err = outbox.New(j, outbox.Options{Policy: retry.Policy{BaseBackoff: -1}})
	assert.ErrorIs(t, err, retry.ErrInvalidPolicy)
	_, err = outbox.New(j, outbox.Options{Horizon: -1})
	assert.Error(t, err)
	_, err = outbox.New(j, outbox.Options{Concurrency: -1})
	assert.Error(t, err)
	o, err := outbox.New(j, outbox.Options{})
	require.NoError(t, err)
	o.Handle("", nil)
	assert.ErrorContains(t, o.Run(context.Background()), "empty kind or a nil handler")
}

// A finished op never runs again, in this process or the next.
func TestFinishedNeverRunsAgain(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal")
	var calls atomic.Int32
	h := func(ctx context.Context, op outbox.Op) error { calls.Add(1); return nil }
	o, j := newOutbox(t, path, outbox.Options{Clock: retrytest.NewAutoClock()})
	o.Handle("pay", h)
	stop := run(t, o)
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	wait(t, o, key)
	_, err = o.Enqueue(context.Background(), outbox.Op{Key: key, Kind: "pay"})
	require.NoError(t, err, "enqueueing a finished op again is no error")
	stop()
	require.NoError(t, j.Close())

	o, _ = newOutbox(t, path, outbox.Options{Clock: retrytest.NewAutoClock()})
	o.Handle("pay", h)
	run(t, o)
	assert.Equal(t, outbox.Succeeded, wait(t, o, key).State, "known after a restart")
	other, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	wait(t, o, other)
	assert.EqualValues(t, 2, calls.Load(), "the finished op did not run again")
}

// A handler that panics fails its attempt; the process and the other ops
// go on.
func TestHandlerPanic(t *testing.T) {
	t.Parallel()
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Policy: retry.Policy{MaxAttempts: 1}, Clock: retrytest.NewAutoClock()})
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error { panic("bug") })
	run(t, o)
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	r := wait(t, o, key)
	var pe *outbox.PanicError
	require.ErrorAs(t, r.Err, &pe)
	assert.Equal(t, "bug", pe.Value)
}

func TestWait(t *testing.T) {
	t.Parallel()
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Clock: retrytest.NewAutoClock()})
	_, err := o.Wait(context.Background(), "secret-key")
	assert.ErrorIs(t, err, outbox.ErrUnknownKey)
	assert.NotContains(t, err.Error(), "secret-key", "errors never quote a key")
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = o.Wait(ctx, key) // no Run: the op stays pending
	assert.ErrorIs(t, err, context.Canceled)
}

// Only one Run at a time.
func TestRunTwice(t *testing.T) {
	t.Parallel()
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Clock: retrytest.NewAutoClock()})
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error { return nil })
	run(t, o)
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	wait(t, o, key) // the first Run is running
	assert.ErrorIs(t, o.Run(context.Background()), outbox.ErrRunning)
}

// The attempt count is durable before the handler is called: a process
// that dies mid-call (seen here as a copy of the journal taken from inside
// the call) leaves the attempt counted, so that MaxAttempts bounds calls.
func TestAttemptCountedBeforeTheCall(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "journal")
	o, _ := newOutbox(t, path, outbox.Options{Policy: retry.Policy{MaxAttempts: 1}, Clock: retrytest.NewAutoClock()})
	var snapshot []byte
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		var err error
		snapshot, err = os.ReadFile(path)
		return err
	})
	run(t, o)
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	require.Equal(t, outbox.Succeeded, wait(t, o, key).State)

	crashed := filepath.Join(dir, "crashed")
	require.NoError(t, os.WriteFile(crashed, snapshot, 0o600))
	j := openJournal(t, crashed)
	es := load(t, j)
	require.NoError(t, j.Close())
	require.Len(t, es, 1)
	assert.Equal(t, outbox.Pending, es[0].State)
	assert.Equal(t, 1, es[0].Attempts, "counted before the call")

	// Restarted from there, with MaxAttempts 1, the op is not called again:
	// it is a dead letter whose one attempt's outcome is unknown.
	o2, _ := newOutbox(t, crashed, outbox.Options{Policy: retry.Policy{MaxAttempts: 1}, Clock: retrytest.NewAutoClock()})
	o2.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		t.Error("called a second time")
		return nil
	})
	run(t, o2)
	r := wait(t, o2, key)
	assert.Equal(t, outbox.Failed, r.State)
	assert.Equal(t, "attempts used up", r.Reason)
}

// An attempt that fails on its own while Run is being stopped is counted
// and judged like any other: only an attempt cut by the stop is given back.
func TestAttemptEndingDuringStopIsCounted(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "journal")
	o, j := newOutbox(t, path, outbox.Options{Clock: retrytest.NewClock()})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Handle("pay", func(context.Context, outbox.Op) error {
		cancel() // Run is stopped while this attempt ends with an error of its own
		return errors.New("503")
	})
	_, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	assert.ErrorIs(t, o.Run(ctx), context.Canceled)
	es := load(t, j)
	require.Len(t, es, 1)
	assert.Equal(t, outbox.Pending, es[0].State)
	assert.Equal(t, 1, es[0].Attempts)
	assert.Equal(t, "error", es[0].Reason)
	assert.Positive(t, es[0].LastWait, "its backoff was drawn")
}
