package outbox_test

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retrytest"
)

// holdSlot takes l's one slot, as another caller of the same downstream
// would, until the returned func gives it back.
func holdSlot(t *testing.T, l *guard.Limiter) (release func()) {
	t.Helper()
	var c guard.Call
	c.Start(nil, nil)
	c.Limit(l)
	require.Equal(t, guard.NotRefused, c.Admit(1))
	return func() { c.Succeeded(); c.End() }
}

// A Limiter of Options.Guards that has no slot for an op's attempt makes
// the op wait its backoff, uncounted: the attempt was never sent. Once a
// slot is free, the op runs, as its first attempt.
func TestLimiterRefusalIsAnUncountedWait(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewClock()
	ls, err := guard.NewLimiters(guard.LimiterOptions{Max: 1, MaxQueue: -1}, 8)
	require.NoError(t, err)
	policy := retry.Policy{BaseBackoff: time.Minute, MaxBackoff: time.Minute, Jitter: retry.NoJitter}
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{
		Policy: policy, Clock: clk, Guards: guard.Keyed{Limiters: ls},
	})
	called := make(chan struct{}, 10)
	o.Handle("pay", func(context.Context, outbox.Op) error { called <- struct{}{}; return nil })
	release := holdSlot(t, ls.Get("pay"))
	run(t, o)
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	select {
	case w := <-clk.Waits():
		require.Equal(t, time.Minute, w, "the refused op waits its backoff")
	case <-called:
		t.Fatal("the handler ran without a slot")
	case <-time.After(10 * time.Second): // a watchdog, never reached when it works
		t.Fatal("the op neither ran nor waited")
	}
	assert.Equal(t, uint64(1), ls.Get("pay").Stats().Refused)
	release()
	clk.Add(time.Minute)
	<-called
	r := wait(t, o, key)
	assert.Equal(t, outbox.Succeeded, r.State)
	assert.Equal(t, 1, r.Attempts, "the refusal used an attempt")
	assert.Equal(t, 0, ls.Get("pay").Stats().InFlight)
}

// A handler whose own retry.Do was refused by a Limiter below sent
// nothing: the attempt is given back, and the op waits uncounted.
func TestLimiterRefusalBelowTheHandlerIsUncounted(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewAutoClock()
	below, err := guard.NewLimiter(guard.LimiterOptions{Max: 1, MaxQueue: -1})
	require.NoError(t, err)
	release := holdSlot(t, below)
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Policy: retry.Policy{MaxAttempts: 2}, Clock: clk})
	var calls atomic.Int32
	o.Handle("pay", func(ctx context.Context, _ outbox.Op) error {
		if calls.Add(1) == 3 {
			release()
		}
		_, err := retry.Do(ctx, func(context.Context) error { return nil }, retry.Policy{Limiter: below})
		return err
	})
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	run(t, o)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Succeeded, r.State)
	assert.Equal(t, 1, r.Attempts, "refusals below used attempts")
	assert.Equal(t, int32(3), calls.Load())
}
