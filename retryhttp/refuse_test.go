package retryhttp_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// refusingBreaker returns a Breaker that one failed call has opened.
func refusingBreaker(t *testing.T) *guard.Breaker {
	t.Helper()
	br, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1})
	require.NoError(t, err)
	_, err = retry.Do(context.Background(), func(context.Context) error { return errors.New("503") }, retry.Policy{MaxAttempts: 1, Breaker: br})
	require.Error(t, err)
	require.True(t, br.Refuses())
	return br
}

// unreachable is a Base that fails the test if a request reaches it.
func unreachable(t *testing.T) http.RoundTripper {
	return roundTripperFunc(func(*http.Request) (*http.Response, error) {
		t.Error("a request went through an open breaker")
		return nil, errors.New("sent")
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// closeCounter is a request body that counts its Close calls.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// A request that an open breaker refuses, its own or its origin's, costs
// no allocation: nothing is built for it before it is refused.
func TestTransportRefusalByAnOpenBreakerDoesNotAllocate(t *testing.T) {
	req, err := http.NewRequest(http.MethodGet, "http://example.test/x", nil)
	require.NoError(t, err)
	own := &retryhttp.Transport{Base: unreachable(t), Policy: retry.Policy{Breaker: refusingBreaker(t)}}
	brs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 1}, 8)
	require.NoError(t, err)
	_, err = retry.Do(context.Background(), func(context.Context) error { return errors.New("503") },
		retry.Policy{MaxAttempts: 1, Breaker: brs.Get("http://example.test")})
	require.Error(t, err)
	keyed := &retryhttp.Transport{Base: unreachable(t), Guards: guard.Keyed{Breakers: brs}}
	for name, tr := range map[string]*retryhttp.Transport{"own": own, "keyed": keyed} {
		assert.Zero(t, testing.AllocsPerRun(100, func() {
			if _, err := tr.RoundTrip(req); err == nil {
				t.Error("not refused")
			}
		}), name)
	}
}

// The quick refusal is the one the usual path gives (a Transport with a
// Logger, an OnDone or a Trace to fill takes that path): the same error,
// matching ErrBreakerOpen and ErrGaveUp, a StopError with no attempts,
// the body closed, and nothing sent.
func TestTransportQuickRefusalIsTheUsualOne(t *testing.T) {
	br := refusingBreaker(t)
	var log strings.Builder
	var summaries []retryhttp.Summary
	var tr retry.Trace
	for _, c := range []struct {
		name string
		t    *retryhttp.Transport
		ctx  context.Context
	}{
		{"quick", &retryhttp.Transport{}, context.Background()},
		{"logged", &retryhttp.Transport{Logger: slog.New(slog.NewTextHandler(&log, nil))}, context.Background()},
		{"observed", &retryhttp.Transport{OnDone: func(_ context.Context, s retryhttp.Summary) { summaries = append(summaries, s) }}, context.Background()},
		{"traced", &retryhttp.Transport{}, retryhttp.WithTrace(context.Background(), &tr)},
		{"own policy", &retryhttp.Transport{}, retryhttp.WithPolicy(context.Background(), retry.Policy{Breaker: br})},
	} {
		c.t.Base = unreachable(t)
		if c.name != "own policy" {
			c.t.Policy = retry.Policy{Breaker: br}
		}
		body := &closeCounter{Reader: strings.NewReader("x")}
		req, err := http.NewRequestWithContext(c.ctx, http.MethodPut, "http://example.test/x", body)
		require.NoError(t, err)
		resp, err := c.t.RoundTrip(req)
		assert.Nil(t, resp, c.name)
		assert.EqualError(t, err, "retry: circuit breaker open before the first attempt", c.name)
		assert.ErrorIs(t, err, retry.ErrBreakerOpen, c.name)
		assert.ErrorIs(t, err, retry.ErrGaveUp, c.name)
		assert.NotErrorIs(t, err, retry.ErrThrottled, c.name)
		var se *retry.StopError
		require.ErrorAs(t, err, &se, c.name)
		assert.Equal(t, retry.StopError{Stop: retry.StopBreakerOpen}, *se, c.name)
		assert.Equal(t, 1, body.closed, c.name)
		assert.False(t, retry.DefaultClassifier(context.Background(), retry.Attempt{Err: err}).Retry, c.name)
	}
	assert.Contains(t, log.String(), "giving up", "the logged Transport took the usual path")
	require.Len(t, summaries, 1)
	assert.Equal(t, retry.StopBreakerOpen, summaries[0].Trace.Stop())
	assert.Equal(t, retry.StopBreakerOpen, tr.Stop())
	assert.Zero(t, tr.Attempts())
}

// An invalid Policy is reported as such, even through an open breaker, as
// Do reports it; and an ended ctx as an ended ctx.
func TestTransportQuickRefusalLeavesOtherErrorsToDo(t *testing.T) {
	br := refusingBreaker(t)
	tr := &retryhttp.Transport{Base: unreachable(t), Policy: retry.Policy{Breaker: br, MaxAttempts: -1}}
	req, err := http.NewRequest(http.MethodGet, "http://example.test/x", nil)
	require.NoError(t, err)
	_, err = tr.RoundTrip(req)
	assert.ErrorIs(t, err, retry.ErrInvalidPolicy)
	assert.NotErrorIs(t, err, retry.ErrBreakerOpen)

	tr.Policy.MaxAttempts = 0
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = tr.RoundTrip(req.WithContext(ctx))
	assert.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, retry.ErrBreakerOpen)
}
