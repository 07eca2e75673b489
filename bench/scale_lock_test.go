package bench_test

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoLockHeldAcrossAWait is the proof behind the contention scenario:
// while calls wait (in backoff on a shared Budget; in backoff after a
// 503 with a Retry-After, which holds its origin; and in that
// hold, through one Transport with Budgets and a Hedger), other calls on
// the same shared state go through at once, without fake time moving. A
// lock held across any of those waits would block them: time would have
// to pass (the assertion fails), or, for a mutex, which synctest does not
// count as a durable block, the test would never finish.
func TestNoLockHeldAcrossAWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bud, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1})
		require.NoError(t, err)
		bs, err := guard.NewBudgets(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1}, 64)
		require.NoError(t, err)
		var heldSent atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Host == "held.example" {
				heldSent.Add(1)
				w.Header().Set("Retry-After", "30") // under MaxRetryAfter: it is waited for
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.WriteHeader(http.StatusOK)
		})
		hedger := &retry.Hedger{}
		tr := &retryhttp.Transport{
			Base:   retrytest.HandlerTransport(h),
			Guards: guard.Keyed{Budgets: bs},
			Hold:   retryhttp.HoldWait,
			Hedger: hedger,
			Policy: retry.Policy{MaxAttempts: 3, BaseBackoff: time.Hour, MaxBackoff: time.Hour, Jitter: retry.EqualJitter},
		}
		c := &http.Client{Transport: tr}
		get := func(ctx context.Context, url string) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			resp, err := c.Do(req)
			if err == nil {
				drain(resp)
			}
			return err
		}

		ctx, cancel := context.WithCancel(context.Background())
		var waiting sync.WaitGroup
		var returned atomic.Int32
		wait := func(f func()) {
			waiting.Go(func() { f(); returned.Add(1) })
			synctest.Wait()
		}
		var attempts atomic.Int32
		failing := func(context.Context) error { attempts.Add(1); return errors.New("unavailable") }
		wait(func() { // in backoff, drawing on the shared Budget
			_, _ = retry.Do(ctx, failing, retry.Policy{Budget: bud, BaseBackoff: time.Hour, MaxBackoff: time.Hour, Jitter: retry.EqualJitter})
		})
		wait(func() { _ = get(ctx, "http://held.example/a") }) // in backoff after the 503, holding the origin
		wait(func() { _ = get(ctx, "http://held.example/b") }) // in the hold
		require.Equal(t, int32(0), returned.Load(), "the three calls wait")
		require.Equal(t, int32(1), attempts.Load(), "the Do made its first attempt and waits for its second")
		require.Equal(t, int32(1), heldSent.Load(), "the second call to the held origin waits in the hold, unsent")

		start := time.Now()
		_, err = retry.Do(context.Background(), succeed, retry.Policy{Budget: bud})
		assert.NoError(t, err, "a call on the shared Budget")
		for _, url := range []string{"http://free.example/a", "http://other.example/b"} {
			assert.NoError(t, get(context.Background(), url), "a call through the same Transport, Budgets and Hedger to %s", url)
		}
		assert.Positive(t, bs.Get("http://held.example").Tokens(), "the held origin's Budget answers")
		assert.Positive(t, hedger.HedgeDelay(), "the Hedger answers")
		assert.Equal(t, start, time.Now(), "no call waited for another's wait")
		assert.Equal(t, int32(0), returned.Load(), "and the three still wait")

		cancel()
		waiting.Wait()
	})
}
