package retryhttp_test

import (
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryhttp"
)

// A request refused by the client's bulkhead (a guard.Limiter with no
// slot and no queue) failed for good without reaching the origin: it is
// answered stale, as one refused by a breaker or a budget is.
func TestStaleServedWhenTheLimiterRefuses(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		o := newOrigin("v1", "Cache-Control", "max-age=0, stale-if-error=60")
		slow := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/slow" {
				<-release
			}
			o.ServeHTTP(w, r)
		})
		lim, err := guard.NewLimiter(guard.LimiterOptions{Max: 1, MaxQueue: -1})
		require.NoError(t, err)
		tr := staleTransport(t, slow, retryhttp.StaleOptions{})
		tr.Policy = retry.Policy{Limiter: lim}
		_, body, err := fetch(t, t.Context(), tr, "http://api.test/item")
		require.NoError(t, err)
		require.Equal(t, "v1", body)

		done := make(chan struct{})
		go func() { // holds the only slot
			defer close(done)
			_, _, _ = fetch(t, t.Context(), tr, "http://api.test/slow")
		}()
		synctest.Wait()
		var trace retry.Trace
		resp, body, err := fetch(t, retryhttp.WithTrace(t.Context(), &trace), tr, "http://api.test/item")
		require.NoError(t, err)
		assert.True(t, retryhttp.IsStale(resp))
		assert.Equal(t, "v1", body)
		assert.Equal(t, retry.StopStale, trace.Stop())
		close(release)
		<-done
	})
}
