package retrydebug_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A request that a Transport answered stale is counted per operation, as
// a stop of its own and in Stale, not among those that gave up; the page
// shows the count.
func TestRecorderCountsStaleAnswers(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		down := false
		h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			if down {
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			w.Header().Set("Cache-Control", "stale-if-error=60")
			_, _ = io.WriteString(w, "v1")
		})
		cache, err := retryhttp.NewStaleCache(retryhttp.StaleOptions{})
		require.NoError(t, err)
		rec := retrydebug.NewRecorder(0, 0)
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h), Stale: cache, OnDone: rec.RecordHTTP,
			Policy: retry.Policy{MaxAttempts: 2}}
		client := &http.Client{Transport: tr}
		getItem := func() {
			req, err := http.NewRequestWithContext(retryhttp.WithRoute(context.Background(), "GET /item"), http.MethodGet, "http://api.test/item", nil)
			require.NoError(t, err)
			resp, err := client.Do(req)
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		getItem()
		down = true
		getItem()
		getItem()

		snap := rec.Snapshot()
		require.Len(t, snap.Operations, 1)
		op := snap.Operations[0]
		assert.Equal(t, int64(3), op.Calls)
		assert.Equal(t, int64(2), op.Stale)
		assert.Equal(t, int64(2), op.Stops[retry.StopStale.String()])
		assert.Zero(t, op.GaveUp, "a stale answer is an answer")
		assert.Equal(t, "served stale", op.Recent[0].Stop)
		assert.False(t, op.Recent[0].GaveUp)

		_, body := get(t, rec, "/debug/retries")
		assert.Contains(t, body, `<td class="num stale">2</td>`)
	})
}
