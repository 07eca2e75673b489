package idempotency_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry/idempotency"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// deaf is a Store whose chosen calls block, ignoring their ctx, until
// unblock is closed, as a go-redis client without ContextTimeoutEnabled
// does on a server that accepts and never answers. It then does the call.
type deaf struct {
	idempotency.Store
	claim, complete atomic.Bool // which calls block
	unblock         chan struct{}
}

func (d *deaf) Claim(ctx context.Context, key, token string, fp []byte, lease time.Duration) (idempotency.Claim, error) {
	if d.claim.Load() {
		<-d.unblock
	}
	return d.Store.Claim(ctx, key, token, fp, lease)
}

func (d *deaf) Complete(ctx context.Context, key, token string, fp, result []byte, ttl time.Duration) error {
	if d.complete.Load() {
		<-d.unblock
	}
	return d.Store.Complete(ctx, key, token, fp, result, ttl)
}

func TestStoreTimeoutHoldsAStoreThatIgnoresCtx(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		mem, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{})
		require.NoError(t, err)
		store := &deaf{Store: mem, unblock: make(chan struct{})}
		store.claim.Store(true)
		var done []idempotency.Summary
		o := newOrders()
		h := newMiddleware(t, idempotency.Options{Store: store, StoreTimeout: timeout, OnDone: func(_ *http.Request, s idempotency.Summary) {
			done = append(done, s)
		}}).Handler(o)

		start := time.Now() // the bubble's clock: exact, and no real wait
		rec := serveDirect(h, req{key: "k", body: "{}"})
		assert.Equal(t, timeout, time.Since(start), "answered at StoreTimeout")
		requireProblem(t, reply{rec.Code, rec.Header(), rec.Body.String()}, http.StatusServiceUnavailable, true)
		assert.Zero(t, o.total(), "the handler did not run")
		require.Len(t, done, 1)
		assert.Equal(t, idempotency.OutcomeStoreFailed, done[0].Outcome)
		assert.ErrorIs(t, done[0].Err, context.DeadlineExceeded)
		assert.Equal(t, timeout, done[0].StoreTime)

		// The store answers at last: the claim it made for a request that
		// was answered 503 is released at once, not one lease later.
		store.claim.Store(false)
		close(store.unblock)
		synctest.Wait()
		n, _ := mem.Len()
		assert.Zero(t, n, "the late claim was released")
		rec = serveDirect(h, req{key: "k", body: "{}"})
		assert.Equal(t, http.StatusCreated, rec.Code, "the retry runs the handler, with no 409 for a lease")
		assert.Equal(t, 1, o.total())
	})
}

func TestStoreTimeoutOnCompleteStillAnswers(t *testing.T) {
	t.Parallel()
	const timeout = 200 * time.Millisecond
	synctest.Test(t, func(t *testing.T) {
		mem, err := idempotency.NewMemoryStore(idempotency.MemoryOptions{})
		require.NoError(t, err)
		store := &deaf{Store: mem, unblock: make(chan struct{})}
		store.complete.Store(true)
		var done []idempotency.Summary
		o := newOrders()
		h := newMiddleware(t, idempotency.Options{Store: store, StoreTimeout: timeout, OnDone: func(_ *http.Request, s idempotency.Summary) {
			done = append(done, s)
		}}).Handler(o)

		start := time.Now()
		rec := serveDirect(h, req{key: "k", body: "{}"})
		assert.Equal(t, timeout, time.Since(start), "answered once Complete has had StoreTimeout")
		assert.Equal(t, http.StatusCreated, rec.Code, "the work is done: the client gets its answer")
		require.Len(t, done, 1)
		assert.Equal(t, idempotency.OutcomeLeaseLost, done[0].Outcome, "its result could not be saved")
		assert.ErrorIs(t, done[0].Err, context.DeadlineExceeded)
		assert.Equal(t, 2, done[0].StoreCalls)

		store.complete.Store(false)
		close(store.unblock)
		synctest.Wait()
	})
}
