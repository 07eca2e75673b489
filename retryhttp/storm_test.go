package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// getStatus makes one request and returns its status, or its error.
func getStatus(c *http.Client, ctx context.Context, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// The Transport's Policy.Breaker is shared by all its requests: once their
// 503s open it, requests fail at once without reaching the server, and an
// outer retry.Do around the client does not retry them.
func TestTransportBreakerSharedByRequests(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503))
	clk := retrytest.NewAutoClock()
	b, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 3, OpenFor: time.Minute, Clock: clk})
	require.NoError(t, err)
	c := srv.client(&retryhttp.Transport{Policy: retry.Policy{MaxAttempts: 2, Breaker: b, Clock: clk}})
	for range 3 {
		code, err := getStatus(c, context.Background(), srv.URL)
		require.NoError(t, err)
		require.Equal(t, 503, code)
	}
	require.Equal(t, guard.BreakerOpen, b.State())
	require.Equal(t, 6, srv.hits(), "3 requests of 2 attempts")

	_, err = getStatus(c, context.Background(), srv.URL)
	require.ErrorIs(t, err, retry.ErrBreakerOpen)
	assert.Equal(t, 6, srv.hits(), "an open breaker sends nothing")

	outer := 0
	tr, err := retry.Do(context.Background(), func(ctx context.Context) error {
		outer++
		_, err := getStatus(c, ctx, srv.URL)
		return err
	}, retry.Policy{Clock: retrytest.NewAutoClock()})
	require.ErrorIs(t, err, retry.ErrBreakerOpen)
	assert.Equal(t, 1, outer, "the outer Do retried a breaker's refusal")
	assert.Equal(t, retry.StopNotRetryable, tr.Stop())
	assert.Equal(t, 6, srv.hits())
}

// The Transport's Policy.Throttle sheds requests to a server that answers
// 503 to all of them, before they are sent.
func TestTransportThrottleSharedByRequests(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503))
	clk := retrytest.NewAutoClock()
	th, err := guard.NewThrottle(guard.ThrottleOptions{Clock: clk})
	require.NoError(t, err)
	c := srv.client(&retryhttp.Transport{Policy: retry.Policy{MaxAttempts: 1, Throttle: th, Clock: clk}})
	throttled := 0
	for range 200 {
		_, err := getStatus(c, context.Background(), srv.URL)
		if errors.Is(err, retry.ErrThrottled) {
			throttled++
		}
	}
	assert.Equal(t, 200, srv.hits()+throttled)
	assert.Less(t, srv.hits(), 100, "a server answering 503 to all got %d of 200 requests", srv.hits())
}

// A 404 is the server's answer, not an overload: the throttle never sheds.
func TestTransportThrottleCountsA4xxAsAccepted(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(404))
	clk := retrytest.NewAutoClock()
	th, err := guard.NewThrottle(guard.ThrottleOptions{Clock: clk})
	require.NoError(t, err)
	c := srv.client(&retryhttp.Transport{Policy: retry.Policy{Throttle: th, Clock: clk}})
	for range 100 {
		code, err := getStatus(c, context.Background(), srv.URL)
		require.NoError(t, err)
		require.Equal(t, 404, code)
	}
	assert.Equal(t, 100, srv.hits())
	assert.Zero(t, th.RejectProbability())
}
