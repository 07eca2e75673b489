package retryhttp_test

import (
	"errors"
	"io"
	"net/http"
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

// retry-after-ms and x-ms-retry-after-ms say a 429's or 503's wait to the
// millisecond, and go before Retry-After; they mean nothing on another
// status, and a malformed one gives way to the next.
func TestRetryAfterMillis(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		code int
		kv   []string
		want time.Duration // the wait asked for, before the 200ms backoff
	}{
		{"retry-after-ms", 429, []string{"Retry-After-Ms", "1500"}, 1500 * time.Millisecond},
		{"x-ms-retry-after-ms", 503, []string{"X-Ms-Retry-After-Ms", "250"}, 250 * time.Millisecond},
		{"before Retry-After", 429, []string{"Retry-After-Ms", "500", "Retry-After", "10"}, 500 * time.Millisecond},
		{"retry-after-ms before x-ms-", 429, []string{"Retry-After-Ms", "500", "X-Ms-Retry-After-Ms", "900"}, 500 * time.Millisecond},
		{"malformed gives way", 429, []string{"Retry-After-Ms", "-5", "Retry-After", "3"}, 3 * time.Second},
		{"twice, unlike, gives way", 429, []string{"Retry-After-Ms", "5, 9000", "X-Ms-Retry-After-Ms", "700"}, 700 * time.Millisecond},
		{"not on a 502", 502, []string{"Retry-After-Ms", "1500"}, 0},
		{"quota's reset on a 429 without one", 429, []string{"RateLimit", `"a";r=0;t=4`}, 4 * time.Second},
		{"Retry-After before the quota", 429, []string{"RateLimit", `"a";r=0;t=4`, "Retry-After", "1"}, time.Second},
		{"the quota means no wait on a 502", 502, []string{"RateLimit", `"a";r=0;t=4`}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := retrytest.NewClock()
			srv := newServer(t, status(tt.code, tt.kv...), status(200))
			tr := &retryhttp.Transport{Policy: fakePolicy(clk), Hold: retryhttp.HoldOff}
			r := do(t, srv.client(tr), clk, get(t, srv.URL))
			require.NoError(t, r.err)
			assert.Equal(t, 200, r.resp.StatusCode)
			assert.Equal(t, []time.Duration{tt.want + 200*time.Millisecond}, r.waits)
		})
	}
}

// A 429's retry-after-ms holds the origin, as its Retry-After would.
func TestRetryAfterMillisHolds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.Header().Set("Retry-After-Ms", "1500")
				w.WriteHeader(http.StatusTooManyRequests)
				return
			}
			_, _ = io.WriteString(w, "ok")
		})
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h), Hold: retryhttp.HoldFailFast, Policy: retry.Policy{MaxAttempts: 1}}
		resp, err := tr.RoundTrip(get(t, "http://api.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		_, err = tr.RoundTrip(get(t, "http://api.test/"))
		var held *guard.HeldError
		require.True(t, errors.As(err, &held), "held: %v", err)
		assert.Equal(t, 1500*time.Millisecond, held.Left)
	})
}
