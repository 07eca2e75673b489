package outbox_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retrytest"
)

// Ops given up for each reason are listed as dead letters with their last
// error and a Trace that says what was tried and why it stopped, without
// the error's text; pending and succeeded ops are not listed. The Traces
// survive a restart, and a re-drive adds to the same history.
func TestDeadLettersWithTrace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	clk := retrytest.NewAutoClock()
	opts := outbox.Options{Clock: clk, Policy: retry.Policy{MaxAttempts: 3, BaseBackoff: time.Second, MaxBackoff: time.Minute}}
	o, j := newOutbox(t, path, opts)
	healed := false
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		switch {
		case string(op.Payload) == "frozen":
			return retry.Permanent(errors.New("account frozen: card 4242"))
		case string(op.Payload) == "ok" || healed:
			return nil
		}
		return errors.New("down: token s3cret")
	})
	o.Handle("slow", func(ctx context.Context, op outbox.Op) error {
		return retry.RetryAfter(errors.New("still down"), time.Hour)
	})
	stop := run(t, o)
	down, err := o.Enqueue(ctx, outbox.Op{Kind: "pay", Payload: []byte("down")})
	require.NoError(t, err)
	frozen, err := o.Enqueue(ctx, outbox.Op{Kind: "pay", Payload: []byte("frozen")})
	require.NoError(t, err)
	late, err := o.Enqueue(ctx, outbox.Op{Kind: "slow", NotAfter: clk.Now().Add(time.Minute)})
	require.NoError(t, err)
	ok, err := o.Enqueue(ctx, outbox.Op{Kind: "pay", Payload: []byte("ok")})
	require.NoError(t, err)
	for _, k := range []string{down, frozen, late, ok} {
		wait(t, o, k)
	}
	_, err = o.Enqueue(ctx, outbox.Op{Kind: "none yet"}) // pending: no handler
	require.NoError(t, err)

	check := func(dead []outbox.Entry) {
		t.Helper()
		require.Len(t, dead, 3)
		byKey := map[string]outbox.Entry{}
		for _, e := range dead {
			assert.Equal(t, outbox.Failed, e.State)
			byKey[e.Op.Key] = e
		}
		d := byKey[down]
		assert.Equal(t, "attempts used up", d.Reason)
		assert.Equal(t, "down: token s3cret", d.LastError)
		assert.Equal(t, 3, d.Trace.Attempts())
		assert.Equal(t, retry.StopExhausted, d.Trace.Stop())
		require.Len(t, d.Trace.Waits(), 2)
		for _, w := range d.Trace.Waits() {
			assert.Positive(t, w, "the waits drawn between attempts")
		}
		for a := range d.Trace.All() {
			assert.Equal(t, "error", a.Reason, "attempt %d: the Classifier's reason", a.Number)
			assert.NoError(t, a.Err, "attempt %d: no error text in a Trace", a.Number)
			assert.False(t, a.Start.IsZero(), "attempt %d: Start", a.Number)
		}
		assert.NotContains(t, d.Trace.String(), "s3cret")

		f := byKey[frozen]
		assert.Equal(t, 1, f.Trace.Attempts())
		assert.Equal(t, retry.StopNotRetryable, f.Trace.Stop())
		assert.Equal(t, "permanent", f.Trace.Last().Reason)
		assert.Equal(t, "account frozen: card 4242", f.LastError)

		l := byKey[late]
		assert.Equal(t, "not after", l.Reason)
		assert.Equal(t, retry.StopDeadline, l.Trace.Stop())
		assert.Equal(t, 1, l.Trace.Attempts(), "its next wait would pass NotAfter")
		assert.Equal(t, "retry after", l.Trace.Last().Reason)
	}
	dead, err := o.DeadLetters(ctx)
	require.NoError(t, err)
	check(dead)
	before := dead

	// After a restart the journal still has them, Traces and all.
	stop()
	require.NoError(t, j.Close())
	o, j = newOutbox(t, path, opts)
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error { return nil })
	dead, err = o.DeadLetters(ctx)
	require.NoError(t, err)
	check(dead)
	for i := range dead {
		assert.Equal(t, slices.Collect(before[i].Trace.All()), slices.Collect(dead[i].Trace.All()), "%s: the Trace survives", dead[i].Reason)
	}

	// A re-drive goes on with the same history: three attempts that
	// failed, then the one that succeeded.
	healed = true
	run(t, o)
	require.NoError(t, o.Redrive(ctx, down))
	assert.Equal(t, outbox.Succeeded, wait(t, o, down).State)
	es := load(t, j)
	i := slices.IndexFunc(es, func(e outbox.Entry) bool { return e.Op.Key == down })
	tr := es[i].Trace
	assert.Equal(t, 4, tr.Attempts())
	assert.Equal(t, retry.StopSuccess, tr.Stop())
	assert.Equal(t, 1, es[i].Attempts, "the count starts again")
	assert.True(t, strings.HasPrefix(tr.String(), "4 attempts"), tr.String())
	dead, err = o.DeadLetters(ctx)
	require.NoError(t, err)
	assert.Len(t, dead, 2)
}

// An attempt whose outcome was never written (its process died mid-call)
// is marked in the Trace when the op goes on.
func TestTraceMarksAnAttemptCutByACrash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal")
	clk := retrytest.NewAutoClock()
	j := openJournal(t, path)
	e := entry("k", 1)
	e.Op.NotAfter = clk.Now().Add(time.Hour)
	e.Next = clk.Now()
	require.NoError(t, j.Add(ctx, e))
	// What a process writes just before its first call.
	e.Attempts = 1
	e.Trace = retry.NewTrace(retry.StopNone, []retry.Attempt{{Number: 1, Start: clk.Now()}})
	require.NoError(t, j.Update(ctx, e))
	require.NoError(t, j.Close())

	o, j := newOutbox(t, path, outbox.Options{Clock: clk})
	o.Handle("send", func(ctx context.Context, op outbox.Op) error { return nil })
	run(t, o)
	assert.Equal(t, outbox.Result{Key: "k", State: outbox.Succeeded, Attempts: 2}, wait(t, o, "k"))
	tr := load(t, j)[0].Trace
	require.Equal(t, 2, tr.Attempts())
	got := slices.Collect(tr.All())
	assert.Equal(t, "no outcome recorded", got[0].Reason)
	assert.Empty(t, got[1].Reason, "success")
	assert.Equal(t, retry.StopSuccess, tr.Stop())
}
