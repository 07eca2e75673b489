package retryhttp_test

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
)

// A reload changes policies, not what the Transport has learnt: a host
// that asked to be held back stays held across an update, and a budget
// whose parameters did not change is the same Budget, with its tokens. (A
// Hedger's latencies live in the Hedger, on the Transport, which no reload
// touches.)
func TestReloadKeepsHoldsAndBudgets(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		const doc = `{"budgets": {"svc": {"maxTokens": 10, "tokenRatio": 0.1}},
			"policies": {"default": {"maxAttempts": 1, "budget": "svc"}}}`
		cfg, err := retryconfig.Parse([]byte(doc))
		require.NoError(t, err)
		live := retryconfig.NewLive(cfg)

		var throttle atomic.Bool
		throttle.Store(true)
		var sent atomic.Int32
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sent.Add(1)
			if throttle.Load() {
				w.Header().Set("Retry-After", "10")
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			_, _ = io.WriteString(w, "ok")
		})
		tr := &retryhttp.Transport{Base: retrytest.HandlerTransport(h), Policies: live, Hold: retryhttp.HoldFailFast}

		resp, err := tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "the host asks to be held back")
		budget := cfg.Policy("default").Budget
		require.NotNil(t, budget)
		tokens := budget.Tokens()

		// A reload that changes the policy, not the budget.
		require.NoError(t, live.Update([]byte(`{"budgets": {"svc": {"maxTokens": 10, "tokenRatio": 0.1}},
			"policies": {"default": {"maxAttempts": 2, "budget": "svc"}}}`)))
		require.Equal(t, uint64(2), live.Version())
		_, err = tr.RoundTrip(get(t, "http://svc.test/"))
		require.ErrorIs(t, err, retryhttp.ErrHostHeld, "the hold outlives the reload")
		assert.Equal(t, int32(1), sent.Load(), "nothing reached the held host")
		after := live.Policy("default").Budget
		assert.Same(t, budget, after, "the unchanged budget is the same one")
		assert.Equal(t, tokens, after.Tokens(), "with its tokens")
		assert.Equal(t, 2, live.Policy("default").MaxAttempts, "the policy itself changed")

		throttle.Store(false)
		time.Sleep(10 * time.Second)
		resp, err = tr.RoundTrip(get(t, "http://svc.test/"))
		require.NoError(t, err, "the hold ends by its own time")
		resp.Body.Close()
	})
}
