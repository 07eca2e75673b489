package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
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

// stored returns a Transport over o whose cache holds o's answer to a GET
// of http://api.test/ (allowed stale for an hour), with o then down, and
// the Summaries of its requests from then on.
func stored(t *testing.T, o *origin, p retry.Policy) (*retryhttp.Transport, *[]retryhttp.Summary) {
	t.Helper()
	o.header.Set("Cache-Control", "stale-if-error=3600")
	tr := staleTransport(t, o, retryhttp.StaleOptions{})
	_, _, err := fetch(t, t.Context(), tr, "http://api.test/")
	require.NoError(t, err)
	o.setDown(true)
	var sums []retryhttp.Summary
	tr.Policy = p
	tr.OnDone = func(_ context.Context, s retryhttp.Summary) { sums = append(sums, s) }
	return tr, &sums
}

// Every way a request fails for good is answered stale, and the Summary
// says which it was: attempts exhausted, MaxElapsed or the ctx's deadline
// in the way of the next wait, the budget, the breaker open, the host held
// back.
func TestStaleServedForEveryWayOfFailingForGood(t *testing.T) {
	t.Parallel()
	breaker := func(t *testing.T) *guard.Breaker {
		b, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, OpenFor: time.Hour})
		require.NoError(t, err)
		return b
	}
	budget := func(t *testing.T) *guard.Budget {
		b, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 2, TokenRatio: 0.1})
		require.NoError(t, err)
		return b
	}
	for _, tc := range []struct {
		name   string
		policy func(t *testing.T) retry.Policy
		ctx    func(t *testing.T) context.Context
		warmup int // failed requests before the one checked
		hold   retryhttp.HoldMode
		down   http.HandlerFunc // the origin's answer when down, if not a 503
		want   retry.StopReason
	}{
		{name: "exhausted", want: retry.StopExhausted},
		{name: "MaxElapsed", want: retry.StopDeadline,
			policy: func(*testing.T) retry.Policy {
				return retry.Policy{MaxAttempts: 10, MaxElapsed: time.Second, Jitter: retry.NoJitter}
			}},
		{name: "ctx deadline", want: retry.StopDeadline,
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithTimeout(t.Context(), time.Second)
				t.Cleanup(cancel)
				return ctx
			},
			policy: func(*testing.T) retry.Policy { return retry.Policy{MaxAttempts: 10, Jitter: retry.NoJitter} }},
		{name: "budget", want: retry.StopBudget, warmup: 1,
			policy: func(t *testing.T) retry.Policy { return retry.Policy{MaxAttempts: 10, Budget: budget(t)} }},
		{name: "breaker open", want: retry.StopBreakerOpen, warmup: 1,
			policy: func(t *testing.T) retry.Policy { return retry.Policy{MaxAttempts: 2, Breaker: breaker(t)} }},
		{name: "held", want: retry.StopNotRetryable, warmup: 1, hold: retryhttp.HoldFailFast,
			down:   status(http.StatusTooManyRequests, "Retry-After", "60"),
			policy: func(*testing.T) retry.Policy { return retry.Policy{MaxAttempts: 1} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				o := newOrigin("v1")
				p := retry.Policy{}
				if tc.policy != nil {
					p = tc.policy(t)
				}
				tr, sums := stored(t, o, p)
				tr.Hold = tc.hold
				if tc.down != nil {
					tr.Base = retrytest.HandlerTransport(tc.down)
				}
				ctx := t.Context()
				if tc.ctx != nil {
					ctx = tc.ctx(t)
				}
				for range tc.warmup {
					_, _, _ = fetch(t, retryhttp.WithStaleIfError(ctx, -1), tr, "http://api.test/")
				}
				resp, body, err := fetch(t, ctx, tr, "http://api.test/")
				require.NoError(t, err)
				assert.True(t, retryhttp.IsStale(resp))
				assert.Equal(t, "v1", body)
				s := (*sums)[len(*sums)-1]
				assert.Equal(t, tc.want, s.Stale.Failed, "why it failed")
				assert.Equal(t, retry.StopStale, s.Trace.Stop())
			})
		})
	}
}

// A caller that cancels wanted no answer: it gets its ctx's error, never a
// stale response.
func TestStaleNeverServedToACallerWhoGaveUp(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("v1")
		tr, _ := stored(t, o, retry.Policy{MaxAttempts: 10})
		ctx, cancel := context.WithCancel(t.Context())
		tr.Base = retrytest.HandlerTransport(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			cancel() // the caller gives up while the origin fails
			w.WriteHeader(http.StatusServiceUnavailable)
		}))
		resp, _, err := fetch(t, ctx, tr, "http://api.test/")
		assert.ErrorIs(t, err, context.Canceled)
		assert.Nil(t, resp)
	})
	synctest.Test(t, func(t *testing.T) {
		// The caller cancels just as the last attempt is judged: the loop
		// has given up, but the caller no longer waits.
		o := newOrigin("v1")
		ctx, cancel := context.WithCancel(t.Context())
		tr, _ := stored(t, o, retry.Policy{MaxAttempts: 1, Classifier: func(ctx context.Context, a retry.Attempt) retry.Decision {
			cancel()
			return retryhttp.DefaultClassifier(ctx, a)
		}})
		resp, _, err := fetch(t, ctx, tr, "http://api.test/")
		if err == nil {
			assert.False(t, retryhttp.IsStale(resp))
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// The caller cancels while an attempt hangs: unlike its deadline
		// passing, which is served stale, that is its choice.
		tr, _ := stored(t, newOrigin("v1"), retry.Policy{MaxAttempts: 10})
		tr.Base = retrytest.HandlerTransport(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		resp, _, err := fetch(t, ctx, tr, "http://api.test/")
		assert.ErrorIs(t, err, context.Canceled)
		assert.Nil(t, resp)
	})
}

// A deadline is a failure of time, not a choice: a hanging origin whose
// attempts run past MaxElapsed, or past the caller's own deadline, is
// answered stale.
func TestStaleServedWhenTheTimeRunsOut(t *testing.T) {
	t.Parallel()
	hang := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	for _, tc := range []struct {
		name   string
		policy retry.Policy
		ctx    time.Duration
		want   retry.StopReason
	}{
		{name: "MaxElapsed", policy: retry.Policy{MaxAttempts: 10, MaxElapsed: time.Second}, want: retry.StopDeadline},
		{name: "AttemptTimeout", policy: retry.Policy{MaxAttempts: 3, AttemptTimeout: time.Second}, want: retry.StopExhausted},
		{name: "ctx deadline", policy: retry.Policy{MaxAttempts: 10}, ctx: time.Second, want: retry.StopContextDone},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				tr, sums := stored(t, newOrigin("v1"), tc.policy)
				tr.Base = retrytest.HandlerTransport(hang)
				ctx := t.Context()
				if tc.ctx > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tc.ctx)
					defer cancel()
				}
				resp, body, err := fetch(t, ctx, tr, "http://api.test/")
				require.NoError(t, err)
				assert.True(t, retryhttp.IsStale(resp))
				assert.Equal(t, "v1", body)
				assert.Equal(t, tc.want, (*sums)[0].Stale.Failed)
			})
		})
	}
}

// A failure the Transport would not retry, such as a 404 or a 500 that
// DefaultClassifier lets stand, is the origin's answer: it is not replaced.
func TestStaleNotServedForAnAnswer(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("v1")
		tr, _ := stored(t, o, retry.Policy{})
		tr.Base = retrytest.HandlerTransport(status(http.StatusNotFound))
		resp, _, err := fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		assert.False(t, retryhttp.IsStale(resp))
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	})
}

// Where the attempts are hedged, a request whose copies all fail is
// answered stale as well.
func TestStaleServedToAHedgedRequest(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("v1")
		tr, sums := stored(t, o, retry.Policy{MaxAttempts: 3})
		tr.Hedger = &retry.Hedger{Delay: 10 * time.Millisecond}
		resp, body, err := fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		assert.True(t, retryhttp.IsStale(resp))
		assert.Equal(t, "v1", body)
		assert.Equal(t, retry.StopStale, (*sums)[0].Trace.Stop())
	})
}

// The seam: an outer retry.Do around a client whose Transport has a Stale
// cache and a Breaker. Each of the outer loop's attempts is one attempt of
// the Transport, which leaves retrying to the loop and is not answered
// stale, since the loop will retry it; once the Transport's breaker opens,
// its refusal is final, and the loop gets the stale answer as a success.
func TestStaleUnderAnOuterRetryLoop(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		o := newOrigin("v1")
		br, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 3, FailureRatio: 0.5, OpenFor: time.Hour})
		require.NoError(t, err)
		tr, sums := stored(t, o, retry.Policy{Breaker: br})
		client := &http.Client{Transport: tr}
		hitsBefore := o.hitCount()

		var stale bool
		var got string
		tr2, err := retry.Do(t.Context(), func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://api.test/", nil)
			if err != nil {
				return err
			}
			resp, err := client.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			stale, got = retryhttp.IsStale(resp), string(b)
			if resp.StatusCode >= 500 {
				return errors.New(resp.Status)
			}
			return err
		}, retry.Policy{MaxAttempts: 10})
		require.NoError(t, err)
		assert.True(t, stale)
		assert.Equal(t, "v1", got)
		assert.Equal(t, retry.StopSuccess, tr2.Stop(), "the outer loop succeeded")
		assert.Equal(t, 3, o.hitCount()-hitsBefore, "the breaker opened after 3 failed calls; the 4th was not sent")
		require.Len(t, *sums, 4)
		for _, s := range (*sums)[:3] {
			assert.Equal(t, retry.StopDeferred, s.Trace.Stop(), "left to the outer loop, not served stale")
		}
		assert.Equal(t, retryhttp.StaleAnswer{Failed: retry.StopBreakerOpen, Age: (*sums)[3].Stale.Age}, (*sums)[3].Stale)
	})
}
