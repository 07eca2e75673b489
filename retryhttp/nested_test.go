package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A Transport used inside an outer retry.Do makes one attempt per outer
// attempt: 3 outer attempts over a Transport of 4 make 3 requests, not 12.
func TestInsideAnOuterRetryLoopOneAttemptPerOuterAttempt(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503))
	c := srv.client(&retryhttp.Transport{Policy: retry.Policy{MaxAttempts: 4}})
	var inner []retry.Trace
	_, err := retrytest.Do(context.Background(), func(ctx context.Context) error {
		var tr retry.Trace
		req, err := http.NewRequestWithContext(retryhttp.WithTrace(ctx, &tr), http.MethodGet, srv.URL, nil)
		if err != nil {
			return err
		}
		resp, err := c.Do(req)
		inner = append(inner, tr)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode >= 500 {
			return errors.New(resp.Status)
		}
		return nil
	}, retry.Policy{MaxAttempts: 3})

	require.ErrorIs(t, err, retry.ErrExhausted)
	assert.Equal(t, 3, srv.hits())
	require.Len(t, inner, 3)
	for _, tr := range inner {
		assert.Equal(t, 1, tr.Attempts())
		assert.Equal(t, retry.StopDeferred, tr.Stop())
	}
}

// A Transport whose Base is another retrying Transport: the inner one sees
// the outer one's mark on the attempt's ctx and leaves retrying to it.
func TestStackedTransportsDoNotMultiplyAttempts(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503))
	clk := retrytest.NewClock()
	inner := &retryhttp.Transport{Base: srv.Client().Transport, Policy: retry.Policy{MaxAttempts: 3}}
	outer := &retryhttp.Transport{Base: inner, Policy: fakePolicy(clk)}
	r := do(t, &http.Client{Transport: outer}, clk, get(t, srv.URL))

	require.NoError(t, r.err)
	assert.Equal(t, 503, r.resp.StatusCode)
	assert.Equal(t, 4, srv.hits(), "the outer Transport's 4 attempts, not 4×3")
	assert.Equal(t, retry.StopExhausted, r.trace.Stop())
}

// Without an outer loop nothing is deferred: the attempt's ctx is marked
// only by the Transport's own loop.
func TestAttemptsCarryTheCallersValues(t *testing.T) {
	t.Parallel()
	type key struct{}
	var seen []any
	srv := newServer(t, status(503), status(200))
	clk := retrytest.NewClock()
	base := srv.Client().Transport
	spy := roundTripFunc(func(req *http.Request) (*http.Response, error) {
		seen = append(seen, req.Context().Value(key{}))
		return base.RoundTrip(req)
	})
	req := get(t, srv.URL)
	req = req.WithContext(context.WithValue(req.Context(), key{}, "v"))
	r := do(t, &http.Client{Transport: &retryhttp.Transport{Base: spy, Policy: fakePolicy(clk)}}, clk, req)
	require.NoError(t, r.err)
	assert.Equal(t, []any{"v", "v"}, seen)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// A Transport whose Policy shares the outer loop's Budget leaves the
// accounting to the outer loop: a failure costs one token, not two.
func TestNestedTransportSharingTheBudgetChargesOnce(t *testing.T) {
	t.Parallel()
	for _, share := range []bool{false, true} {
		srv := newServer(t, status(503), status(503), status(200))
		budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 100, TokenRatio: 0.1})
		require.NoError(t, err)
		inner := retry.Policy{}
		if share {
			inner.Budget = budget
		}
		c := srv.client(&retryhttp.Transport{Policy: inner})
		_, err = retrytest.Do(context.Background(), func(ctx context.Context) error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
			if err != nil {
				return err
			}
			resp, err := c.Do(req)
			if err != nil {
				return err
			}
			return resp.Body.Close()
		}, retry.Policy{Budget: budget})
		require.NoError(t, err)
		assert.InDelta(t, 98.1, budget.Tokens(), 1e-9, "share=%v: two failures and a success, counted once", share)
	}
}
