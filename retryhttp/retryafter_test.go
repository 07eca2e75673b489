package retryhttp_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The wait is the Retry-After plus the policy's backoff (200ms with
// NoJitter): never sooner than the server asked.
func TestRetryAfterIsAFloor(t *testing.T) {
	t.Parallel()
	fixed := func(v string) func(time.Time) string { return func(time.Time) string { return v } }
	date := func(d time.Duration, layout string) func(time.Time) string {
		// HTTP dates have whole seconds: the clock starts on one.
		return func(now time.Time) string { return now.Add(d).UTC().Format(layout) }
	}
	tests := []struct {
		name  string
		value func(now time.Time) string
		code  int
		want  time.Duration
	}{
		{"seconds on 429", fixed("7"), 429, 7*time.Second + 200*time.Millisecond},
		{"seconds on 503", fixed("120"), 503, 2*time.Minute + 200*time.Millisecond},
		{"IMF-fixdate", date(30*time.Second, http.TimeFormat), 503, 30*time.Second + 200*time.Millisecond},
		{"RFC 850", date(45*time.Second, "Monday, 02-Jan-06 15:04:05 GMT"), 429, 45*time.Second + 200*time.Millisecond},
		{"asctime", date(10*time.Second, time.ANSIC), 503, 10*time.Second + 200*time.Millisecond},
		{"date in the past", date(-time.Hour, http.TimeFormat), 503, 200 * time.Millisecond},
		{"zero", fixed("0"), 429, 200 * time.Millisecond},
		{"garbage", fixed("soon"), 503, 200 * time.Millisecond},
		{"negative", fixed("-5"), 503, 200 * time.Millisecond},
		{"fraction", fixed("1.5"), 503, 200 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := retrytest.NewClock()
			clk.Add(clk.Now().Truncate(time.Second).Add(time.Second).Sub(clk.Now()))
			value := tt.value(clk.Now())
			srv := newServer(t, status(tt.code, "Retry-After", value), status(200))
			tr := &retryhttp.Transport{Policy: fakePolicy(clk), MaxRetryAfter: 5 * time.Minute}
			r := do(t, srv.client(tr), clk, get(t, srv.URL))
			require.NoError(t, r.err)
			assert.Equal(t, 200, r.resp.StatusCode)
			assert.Equal(t, []time.Duration{tt.want}, r.waits, "Retry-After: %s", value)
		})
	}
}

// Retry-After beyond MaxRetryAfter: the response is returned at once rather
// than retried sooner than asked, and nobody sleeps for a century.
func TestRetryAfterAtOrBeyondTheCapReturnsAtOnce(t *testing.T) {
	t.Parallel()
	for _, value := range []string{"60", "3600", "99999999999999999999999999", "Fri, 31 Dec 9999 23:59:59 GMT"} {
		t.Run(value, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, status(429, "Retry-After", value), status(200))
			clk := retrytest.NewClock()
			r := do(t, srv.client(&retryhttp.Transport{Policy: fakePolicy(clk)}), clk, get(t, srv.URL))
			require.NoError(t, r.err)
			assert.Equal(t, 429, r.resp.StatusCode)
			assert.Equal(t, "429 Too Many Requests; Retry-After reaches MaxRetryAfter 1m0s", r.trace.Last().Reason)
			assert.Equal(t, 1, srv.hits())
			assert.Empty(t, r.waits)
		})
	}
}

func TestRetryAfterPastMaxElapsedReturnsAtOnce(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503, "Retry-After", "30"), status(200))
	clk := retrytest.NewClock()
	p := fakePolicy(clk)
	p.MaxElapsed = 10 * time.Second
	r := do(t, srv.client(&retryhttp.Transport{Policy: p}), clk, get(t, srv.URL))

	require.NoError(t, r.err)
	assert.Equal(t, 503, r.resp.StatusCode, "the response that asked for the wait is returned")
	assert.Equal(t, "status 503", readAll(t, r.resp.Body))
	assert.Equal(t, retry.StopDeadline, r.trace.Stop())
	assert.Equal(t, 1, srv.hits())
	assert.Empty(t, r.waits, "no wait was started")
}

// On the real clock: a ctx deadline that the Retry-After would pass ends
// the call at once. Had it slept, the ctx would have ended it with an error.
func TestRetryAfterPastTheCtxDeadlineReturnsAtOnce(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503, "Retry-After", "30"), status(200))
	c := srv.client(&retryhttp.Transport{MaxRetryAfter: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var tr retry.Trace
	req := get(t, srv.URL).WithContext(retryhttp.WithTrace(ctx, &tr))

	resp, err := c.Do(req)
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode)
	assert.Equal(t, "status 503", readAll(t, resp.Body))
	assert.Equal(t, retry.StopDeadline, tr.Stop())
	assert.Equal(t, 1, srv.hits())
}

// A Classifier that asks for a wait of its own gets at least that, and at
// least the Retry-After.
func TestClassifierRetryAfterAndHeaderTakeTheLonger(t *testing.T) {
	t.Parallel()
	srv := newServer(t, status(503, "Retry-After", "2"), status(200))
	clk := retrytest.NewClock()
	p := fakePolicy(clk)
	p.Classifier = func(ctx context.Context, a retry.Attempt) retry.Decision {
		d := retryhttp.DefaultClassifier(ctx, a)
		d.RetryAfter = 5 * time.Second
		return d
	}
	tr := &retryhttp.Transport{Policy: p}
	r := do(t, srv.client(tr), clk, get(t, srv.URL))
	require.NoError(t, r.err)
	assert.Equal(t, []time.Duration{5*time.Second + 200*time.Millisecond}, r.waits)
}
