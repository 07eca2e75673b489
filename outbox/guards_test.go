package outbox_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/outbox"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
)

// A Breaker on the Outbox's own Policy applies: once a failure opens it,
// the op's next attempt waits, uncounted, until the breaker half-opens,
// and then goes as its probe. (It was ignored: the retry went after its
// backoff, whatever the breaker said.)
func TestBreakerOnThePolicyApplies(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewAutoClock()
	br, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, FailureRatio: 1, OpenFor: 10 * time.Second, Probes: 1, Clock: clk})
	require.NoError(t, err)
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{
		Clock:  clk,
		Policy: retry.Policy{MaxAttempts: 2, Breaker: br},
	})
	var mu sync.Mutex
	var calls []time.Time
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, clk.Now())
		if len(calls) == 1 {
			return errors.New("503")
		}
		return nil
	})
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	run(t, o)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Succeeded, r.State)
	assert.Equal(t, 2, r.Attempts, "the refusals used no attempt")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, calls, 2)
	assert.GreaterOrEqual(t, calls[1].Sub(calls[0]), 10*time.Second, "the retry waited for the breaker to half-open")
	assert.Equal(t, guard.BreakerClosed, br.State(), "the probe's success closed it")
}

// A Throttle or a Budget on the Policy that refuses an op makes it wait,
// uncounted: a shed op is not a failed one, and is never dead-lettered for
// it.
func TestGuardRefusalsAreUncountedWaits(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewAutoClock()
	budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 2, TokenRatio: 1})
	require.NoError(t, err)
	budget.Failed() // one token of two left: no retry until a success gives one back
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{
		Clock:  clk,
		Policy: retry.Policy{MaxAttempts: 2, Budget: budget},
	})
	var calls atomic.Int32
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		if calls.Add(1) == 1 {
			return errors.New("503")
		}
		return nil
	})
	o.Handle("other", func(context.Context, outbox.Op) error { return nil })
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	run(t, o)
	// The budget refuses the retry until other ops' successes fill it.
	for range 4 {
		k, err := o.Enqueue(context.Background(), outbox.Op{Kind: "other"})
		require.NoError(t, err)
		assert.Equal(t, outbox.Succeeded, wait(t, o, k).State)
	}
	r := wait(t, o, key)
	assert.Equal(t, outbox.Succeeded, r.State)
	assert.Equal(t, 2, r.Attempts, "the refusals used no attempt")
	assert.Equal(t, int32(2), calls.Load())
}

// A Breaker on the retryhttp.Transport below HTTPHandler: while it is
// open, each attempt is refused before it reaches the wire, and the op
// waits, uncounted, instead of being dead-lettered with a Permanent error
// after one attempt that was never sent.
func TestTransportBreakerUnderHTTPHandlerDoesNotDeadLetter(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hits.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	clk := retrytest.NewAutoClock()
	bs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 1, FailureRatio: 1, OpenFor: 100 * time.Millisecond, Probes: 1, Clock: clk}, 16)
	require.NoError(t, err)
	client := &http.Client{Transport: &retryhttp.Transport{
		Base:   srv.Client().Transport,
		Policy: retry.Policy{Clock: clk},
		Guards: guard.Keyed{Breakers: bs},
	}}
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{
		Clock:  clk,
		Policy: retry.Policy{MaxAttempts: 2, BaseBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond},
	})
	o.Handle("http", outbox.HTTPHandler(client, nil))
	var keys []string
	for range 10 {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/pay", nil)
		require.NoError(t, err)
		op, err := outbox.HTTPOp(req, "http")
		require.NoError(t, err)
		key, err := o.Enqueue(context.Background(), op)
		require.NoError(t, err)
		keys = append(keys, key)
	}
	run(t, o)
	sent := 0
	for _, key := range keys {
		r := wait(t, o, key)
		assert.Equal(t, outbox.Succeeded, r.State, "%s: %s", key, r.Reason)
		sent += r.Attempts
	}
	assert.Equal(t, int(hits.Load()), sent, "every attempt counted reached the server; the refused ones were not counted")
}

// Snooze is "not now, not an attempt": the op comes back after the wait,
// with its attempts untouched, even with MaxAttempts 1.
func TestSnoozeIsNotAnAttempt(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewAutoClock()
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Clock: clk, Policy: retry.Policy{MaxAttempts: 1}})
	var calls []time.Time
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		calls = append(calls, clk.Now())
		if len(calls) <= 2 {
			err := outbox.Snooze(time.Minute)
			require.ErrorIs(t, err, outbox.ErrSnoozed)
			return err
		}
		return nil
	})
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	run(t, o)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Succeeded, r.State)
	assert.Equal(t, 1, r.Attempts)
	require.Len(t, calls, 3)
	assert.Equal(t, time.Minute, calls[1].Sub(calls[0]))
	assert.Equal(t, time.Minute, calls[2].Sub(calls[1]))
}

// A Budget that refuses every retry holds the op back, uncounted, until
// its NotAfter ends it: it is never sent again, nor dead-lettered as
// "attempts used up".
func TestBudgetRefusalHoldsTheOpUntilNotAfter(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewAutoClock()
	budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 2, TokenRatio: 1})
	require.NoError(t, err)
	budget.Failed()
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{
		Clock:  clk,
		Policy: retry.Policy{MaxAttempts: 3, Budget: budget},
	})
	var calls atomic.Int32
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		calls.Add(1)
		return errors.New("503")
	})
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay", NotAfter: clk.Now().Add(time.Minute)})
	require.NoError(t, err)
	run(t, o)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Failed, r.State)
	assert.Equal(t, "not after", r.Reason)
	assert.Equal(t, 1, r.Attempts)
	assert.Equal(t, int32(1), calls.Load(), "the budget refused every retry")
}

// A Throttle on the Outbox's Policy sheds attempts while the service
// rejects most of them: a shed op waits, uncounted, and the service sees
// fewer attempts than the Outbox would otherwise send.
func TestThrottleOnThePolicyApplies(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewAutoClock()
	th, err := guard.NewThrottle(guard.ThrottleOptions{MinRequests: 1, K: 1.01, MaxReject: 1, Clock: clk, Rand: func() float64 { return 0 }})
	require.NoError(t, err)
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{
		Clock:  clk,
		Policy: retry.Policy{MaxAttempts: 3, Throttle: th},
	})
	var calls atomic.Int32
	o.Handle("pay", func(context.Context, outbox.Op) error {
		calls.Add(1)
		return errors.New("503")
	})
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay", NotAfter: clk.Now().Add(time.Minute)})
	require.NoError(t, err)
	run(t, o)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Failed, r.State)
	assert.Equal(t, "not after", r.Reason, "shed until NotAfter, not dead-lettered for the throttle")
	assert.Equal(t, int32(r.Attempts), calls.Load(), "every counted attempt was sent")
	assert.Less(t, r.Attempts, 3, "the throttle shed the retries")
}

// With Guards.Holds, an answer that asks for a wait holds back every op
// of its kind, not only the one that got it: the second op is not sent
// before the wait is over, and it counts no attempt for it.
func TestHoldsHoldBackTheKind(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewAutoClock()
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{
		Clock:  clk,
		Policy: retry.Policy{BaseBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond},
		Guards: guard.Keyed{Holds: new(guard.Holds)},
	})
	var mu sync.Mutex
	var calls []time.Time
	o.Handle("api", func(context.Context, outbox.Op) error {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, clk.Now())
		if len(calls) == 1 {
			return retry.RetryAfter(errors.New("429"), 30*time.Second)
		}
		return nil
	})
	k1, err := o.Enqueue(context.Background(), outbox.Op{Kind: "api"})
	require.NoError(t, err)
	k2, err := o.Enqueue(context.Background(), outbox.Op{Kind: "api"})
	require.NoError(t, err)
	run(t, o)
	r1, r2 := wait(t, o, k1), wait(t, o, k2)
	assert.Equal(t, outbox.Succeeded, r1.State)
	assert.Equal(t, outbox.Succeeded, r2.State)
	assert.Equal(t, 3, r1.Attempts+r2.Attempts, "the failed attempt, its retry, and one for the held op: the hold counted none")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, calls, 3)
	for _, c := range calls[1:] {
		assert.GreaterOrEqual(t, c.Sub(calls[0]), 30*time.Second, "nothing of the kind was sent during the hold")
	}
}

// A Budget shared by the Outbox's Policy and a retry.Do inside the handler
// is charged once per failure: the Outbox owns the handler's ctx, so the
// Do inside makes one attempt and leaves the Budget to the Outbox.
func TestSharedBudgetIsChargedOnce(t *testing.T) {
	t.Parallel()
	clk := retrytest.NewAutoClock()
	budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
	require.NoError(t, err)
	p := retry.Policy{MaxAttempts: 3, Budget: budget, BaseBackoff: 10 * time.Millisecond}
	o, _ := newOutbox(t, filepath.Join(t.TempDir(), "journal"), outbox.Options{Clock: clk, Policy: p})
	var sent atomic.Int32
	o.Handle("pay", func(ctx context.Context, op outbox.Op) error {
		_, err := retry.Do(ctx, func(context.Context) error { sent.Add(1); return errors.New("503") }, p)
		return err
	})
	key, err := o.Enqueue(context.Background(), outbox.Op{Kind: "pay"})
	require.NoError(t, err)
	run(t, o)
	r := wait(t, o, key)
	assert.Equal(t, outbox.Failed, r.State)
	assert.Equal(t, 3, r.Attempts)
	assert.Equal(t, int32(3), sent.Load(), "the Do inside made one attempt per Outbox attempt")
	assert.Equal(t, 7.0, budget.Tokens(), "three failures, three tokens")
}
