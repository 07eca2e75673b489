package retryhttp_test

import (
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stormguard/retry/retrytest"
)

// The seam of configuration and guards: a breaker declared in a
// retryconfig document, named by a policy, guards the Transport's requests
// of that policy; a reload that keeps its options keeps it open (the
// incident is not forgotten); one that changes them, as an operator tuning
// it during the incident would, brings a new, closed breaker without a
// redeploy.
func TestConfigDeclaredBreakerGuardsTheTransport(t *testing.T) {
	t.Parallel()
	var sent atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		sent.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	doc := func(minCalls string) []byte {
		return []byte(`{
			"breakers": {"api": {"minCalls": ` + minCalls + `, "failureRatio": 1, "openFor": "1h"}},
			"policies": {"default": {"maxAttempts": 1, "breaker": "api"}}
		}`)
	}
	cfg, err := retryconfig.Parse(doc("2"))
	require.NoError(t, err)
	live := retryconfig.NewLive(cfg)
	c := &http.Client{Transport: &retryhttp.Transport{Base: retrytest.HandlerTransport(h), Policies: live}}
	get := func() error {
		resp, err := c.Get("http://api.example/")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for range 2 {
		require.NoError(t, get(), "a 503 is returned as a response")
	}
	err = get()
	require.ErrorIs(t, err, retry.ErrBreakerOpen, "the configured breaker opened")
	assert.Equal(t, int32(2), sent.Load(), "the refused request was not sent")

	require.NoError(t, live.Update(doc("2")))
	assert.True(t, errors.Is(get(), retry.ErrBreakerOpen), "same options: the same breaker, still open")
	require.NoError(t, live.Update(doc("5")))
	assert.NoError(t, get(), "tuned: a new breaker, closed")
	assert.Equal(t, int32(3), sent.Load())
}
