package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// One Transport, two kinds of request: a request's own Policy, from
// WithPolicy, takes the Transport's place.
func TestWithPolicyOverridesPerRequest(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503))
	clk := retrytest.NewClock()
	c := srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)})

	r := do(t, c, clk, get(t, srv.URL))
	require.NoError(t, r.err)
	assert.Equal(t, 4, r.trace.Attempts(), "feeds: the Transport's 4")

	req := get(t, srv.URL)
	req = req.WithContext(retryhttp.WithPolicy(req.Context(), retry.Policy{MaxAttempts: 1, Clock: clk}))
	r = do(t, c, clk, req)
	require.NoError(t, r.err)
	assert.Equal(t, 1, r.trace.Attempts(), "payments: their own 1")
}

// With AttemptHeader set, each attempt says which it is.
func TestAttemptHeaderNumbersEachAttempt(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(503), status(200))
	clk := retrytest.NewClock()
	req := get(t, srv.URL)
	req.Header.Set("X-Request-Id", "r-1")
	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), AttemptHeader: "Retry-Attempt"}), clk, req)
	require.NoError(t, r.err)
	var got []string
	for _, s := range srv.requests() {
		got = append(got, s.header.Get("Retry-Attempt"))
		assert.Equal(t, "r-1", s.header.Get("X-Request-Id"))
	}
	assert.Equal(t, []string{"1", "2", "3"}, got)
	assert.Empty(t, req.Header.Get("Retry-Attempt"), "the caller's request is not modified")

	srv = newServer(t, status(200))
	r = do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, get(t, srv.URL))
	require.NoError(t, r.err)
	assert.Empty(t, srv.requests()[0].header.Get("Retry-Attempt"), "off by default")
}

// OnDone gets one Summary per request: what an observer needs, no more.
func TestOnDoneSummarizesEachRequest(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503), status(200))
	clk := retrytest.NewClock()
	var mu sync.Mutex
	var got []retryhttp.Summary
	tr := &retryhttp.Transport{Policy: fakePolicy(clk), OnDone: func(_ context.Context, s retryhttp.Summary) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, s)
	}}
	req := get(t, srv.URL+"/users/8412/orders?token=x")
	req = req.WithContext(retryhttp.WithRoute(req.Context(), "GET /users/{id}/orders"))
	r := do(t, srv.client(tr), clk, req)
	require.NoError(t, r.err)
	r = do(t, srv.client(tr), clk, get(t, srv.URL+"/health?x=1"))
	require.NoError(t, r.err)

	require.Len(t, got, 2)
	assert.Equal(t, "GET", got[0].Method)
	assert.Equal(t, srv.URL, got[0].Origin)
	assert.Equal(t, "GET /users/{id}/orders", got[0].Name())
	assert.Equal(t, 200, got[0].Status)
	assert.Equal(t, 2, got[0].Trace.Attempts())
	assert.NoError(t, got[0].Err)
	assert.Equal(t, "GET "+srv.URL, got[1].Name(), "without a route: method and origin, never the path")
}

// A keyed request answered 409 with Retry-After (its key's first request
// still runs on the server) is retried after that wait, with the same key;
// a 409 without Retry-After is a real conflict and is not.
func TestKeyed409WithRetryAfterIsRetried(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(409, "Retry-After", "1"), status(201))
	clk := retrytest.NewClock()
	req := newRequest(t, http.MethodPost, srv.URL, strings.NewReader("order"))
	r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), AutoIdempotencyKey: true}), clk, req)
	require.NoError(t, r.err)
	assert.Equal(t, 201, r.resp.StatusCode)
	assert.Equal(t, []time.Duration{time.Second + 200*time.Millisecond}, r.waits)
	require.Equal(t, 2, srv.hits())
	assert.Equal(t, srv.requests()[0].header.Get("Idempotency-Key"), srv.requests()[1].header.Get("Idempotency-Key"))

	srv = newServer(t, status(409), status(201))
	req = newRequest(t, http.MethodPost, srv.URL, strings.NewReader("order"))
	r = do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk), AutoIdempotencyKey: true}), clk, req)
	require.NoError(t, r.err)
	assert.Equal(t, 409, r.resp.StatusCode)
	assert.Equal(t, 1, srv.hits())
}

// A request whose dial failed never reached a server: it is retried
// whatever its method, key or no key, since nothing can run twice.
func TestDialFailureIsRetriedEvenForAKeylessPOST(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(201))
	var dials atomic.Int32
	base := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		if dials.Add(1) == 1 {
			return nil, &net.OpError{Op: "dial", Net: network, Err: syscall.ECONNREFUSED}
		}
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	t.Cleanup(base.CloseIdleConnections)
	clk := retrytest.NewClock()
	req := newRequest(t, http.MethodPost, srv.URL, strings.NewReader("charge"))
	r := do(t, &http.Client{Transport: &retryhttp.Transport{Base: base, Policy: fakePolicy(clk)}}, clk, req)
	require.NoError(t, r.err)
	assert.Equal(t, 201, r.resp.StatusCode)
	assert.Equal(t, 1, srv.hits(), "the POST reached the server once")
	assert.Equal(t, []string{"connection refused", ""}, reasons(r.trace))

	// A failure after the dial is another matter: the server may have acted.
	srv = newServer(t, hangUp(true), status(201))
	req = newRequest(t, http.MethodPost, srv.URL, strings.NewReader("charge"))
	r = do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, req)
	require.Error(t, r.err)
	assert.Equal(t, 1, srv.hits())
}

// Policy.Classifier on a Transport is used, not ignored: a Classifier that
// retries every error makes every attempt on a 500.
func TestPolicyClassifierApplies(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(500))
	clk := retrytest.NewClock()
	p := fakePolicy(clk)
	p.Classifier = func(context.Context, retry.Attempt) retry.Decision {
		return retry.Decision{Retry: true, Reason: "anything"}
	}
	r := do(t, srv.client(&retryhttp.Transport{Policy: p}), clk, get(t, srv.URL))
	require.NoError(t, r.err)
	assert.Equal(t, 4, srv.hits())
	assert.Equal(t, 500, r.resp.StatusCode)
	var se *retryhttp.StatusError
	require.True(t, errors.As(r.trace.Last().Err, &se))
	assert.Equal(t, 500, se.StatusCode)
	_, _ = io.Copy(io.Discard, r.resp.Body)
}

// An observed request's Trace spans it whole, first attempt included,
// even when it succeeds at once.
func TestOnDoneTraceTimesTheFirstAttempt(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(200))
	var got retry.Trace
	tr := &retryhttp.Transport{OnDone: func(_ context.Context, s retryhttp.Summary) { got = s.Trace }}
	resp, err := srv.client(tr).Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.False(t, got.Last().Start.IsZero())
	assert.Positive(t, got.Elapsed())
}
