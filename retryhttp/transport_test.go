package retryhttp_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRetriesUntilSuccess(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(503), status(200))
	clk := retrytest.NewClock()
	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, get(t, srv.URL))

	require.NoError(t, r.err)
	assert.Equal(t, 200, r.resp.StatusCode)
	assert.Equal(t, "status 200", readAll(t, r.resp.Body))
	assert.Equal(t, 3, srv.hits())
	assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}, r.waits)
	assert.Equal(t, 3, r.trace.Attempts())
	assert.Equal(t, retry.StopSuccess, r.trace.Stop())
	assert.Equal(t, []string{"503 Service Unavailable", "503 Service Unavailable", ""}, reasons(r.trace))
	assert.Equal(t, int32(1), srv.conns.Load(), "the retried responses were drained, so their connection was reused")
}

func TestRetriesTransientStatuses(t *testing.T) {
	t.Parallel()
	for _, code := range []int{408, 429, 502, 503, 504} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, status(code), status(200))
			clk := retrytest.NewClock()
			r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, get(t, srv.URL))
			require.NoError(t, r.err)
			assert.Equal(t, 200, r.resp.StatusCode)
			assert.Equal(t, 2, srv.hits(), "status %d is retried", code)
		})
	}
}

func TestDoesNotRetryOtherStatuses(t *testing.T) {
	t.Parallel()
	for _, code := range []int{200, 204, 400, 401, 403, 404, 405, 409, 422, 500, 501} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, status(code), status(200))
			clk := retrytest.NewClock()
			r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, get(t, srv.URL))
			require.NoError(t, r.err, "a status is not an error")
			assert.Equal(t, code, r.resp.StatusCode)
			assert.Equal(t, 1, srv.hits(), "status %d is not retried", code)
			assert.Empty(t, r.waits)
			if code != http.StatusNoContent {
				assert.Equal(t, "status "+strconv.Itoa(code), readAll(t, r.resp.Body), "the final body is untouched")
			}
		})
	}
}

func TestReturnsLastResponseUnreadWhenAttemptsRunOut(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503))
	clk := retrytest.NewClock()
	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, get(t, srv.URL))

	require.NoError(t, r.err, "status codes are not errors in net/http")
	assert.Equal(t, 503, r.resp.StatusCode)
	assert.Equal(t, "status 503", readAll(t, r.resp.Body))
	assert.Equal(t, 4, srv.hits())
	assert.Equal(t, retry.StopExhausted, r.trace.Stop())
	assert.Equal(t, strings.Split(strings.Repeat("503 Service Unavailable,", 4), ",")[:4], reasons(r.trace))
}

func TestCallerHeadersAreSentUnchanged(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(502), status(200))
	clk := retrytest.NewClock()
	req := get(t, srv.URL)
	req.Header.Set("X-Request-Id", "req-42")
	req.Header.Add("Accept", "application/json")
	want := req.Header.Clone()

	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, req)
	require.NoError(t, r.err)
	for i, s := range srv.requests() {
		assert.Equal(t, "req-42", s.header.Get("X-Request-Id"), "attempt %d", i+1)
		assert.Equal(t, "application/json", s.header.Get("Accept"), "attempt %d", i+1)
	}
	assert.Equal(t, want, req.Header, "the caller's request is not modified")
}

func TestCancelDuringTheWaitStopsRetrying(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503))
	clk := retrytest.NewClock()
	c := srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)})
	ctx, cancel := context.WithCancel(context.Background())
	var tr retry.Trace
	req := get(t, srv.URL).WithContext(retryhttp.WithTrace(ctx, &tr))

	errc := make(chan error, 1)
	go func() {
		resp, err := c.Do(req)
		if resp != nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	recv(t, clk.Waits(), "the first wait")
	cancel()
	err := recv(t, errc, "the response")

	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 1, srv.hits(), "no attempt after the cancel")
	assert.Equal(t, 1, tr.Attempts())
	assert.Equal(t, retry.StopContextDone, tr.Stop())
}

func TestBudgetFlowsThrough(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503))
	clk := retrytest.NewClock()
	budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 2, TokenRatio: 0.1}) // refuses once one token is gone
	require.NoError(t, err)
	p := fakePolicy(clk)
	p.Budget = budget
	r := do(t, srv.client(&retryhttp.Transport{Policy: p}), clk, get(t, srv.URL))

	require.NoError(t, r.err)
	assert.Equal(t, 503, r.resp.StatusCode, "the last response is returned when the budget refuses")
	assert.Equal(t, 1, srv.hits())
	assert.Equal(t, retry.StopBudget, r.trace.Stop())
}

func TestOnRetryOfThePolicyStillRuns(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(200))
	clk := retrytest.NewClock()
	p := fakePolicy(clk)
	var seen []string
	p.OnRetry = func(_ context.Context, a retry.Attempt, wait time.Duration) {
		seen = append(seen, a.Reason+" "+wait.String())
	}
	r := do(t, srv.client(&retryhttp.Transport{Policy: p}), clk, get(t, srv.URL))
	require.NoError(t, r.err)
	assert.Equal(t, []string{"503 Service Unavailable 200ms"}, seen)
}

func TestClassifyCanOptInTo500(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(500), status(200))
	clk := retrytest.NewClock()
	p := fakePolicy(clk)
	p.Classifier = func(ctx context.Context, a retry.Attempt) retry.Decision {
		var se *retryhttp.StatusError
		if errors.As(a.Err, &se) && se.StatusCode == http.StatusInternalServerError {
			return retry.Decision{Retry: true, Reason: "500, retried by contract"}
		}
		return retryhttp.DefaultClassifier(ctx, a)
	}
	tr := &retryhttp.Transport{Policy: p}
	r := do(t, srv.client(tr), clk, get(t, srv.URL))
	require.NoError(t, r.err)
	assert.Equal(t, 200, r.resp.StatusCode)
	assert.Equal(t, []string{"500, retried by contract", ""}, reasons(r.trace))
}

func TestInvalidPolicyIsAnErrorAndClosesTheBody(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(200))
	body := &closeTracker{Reader: strings.NewReader("x")}
	req, err := http.NewRequest(http.MethodPut, srv.URL, body)
	require.NoError(t, err)
	c := srv.client(&retryhttp.Transport{Policy: retry.Policy{Factor: 0.5}})
	_, err = c.Do(req)
	require.ErrorIs(t, err, retry.ErrInvalidPolicy)
	assert.Equal(t, 0, srv.hits())
	assert.True(t, body.closed.Load(), "a RoundTripper closes the request body, even on error")
}

func TestNewClientRetries(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(200))
	c := retryhttp.NewClient(retry.Policy{BaseBackoff: time.Millisecond})
	defer c.CloseIdleConnections()
	resp, err := c.Get(srv.URL)
	require.NoError(t, err)
	assert.Equal(t, "status 200", readAll(t, resp.Body))
	assert.Equal(t, 2, srv.hits())
}
