package retryhttp_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retryhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A policy's staleIfError, from a Transport's Policies, accepts stale
// answers for the requests of that policy as WithStaleIfError would; a
// request's own WithStaleIfError still wins.
func TestStaleIfErrorFromPolicies(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		cfg, err := retryconfig.Parse([]byte(`{"policies": {"default": {"maxAttempts": 1},
			"feed": {"maxAttempts": 2, "staleIfError": "1m"}}}`))
		require.NoError(t, err)
		o := newOrigin("v1") // no stale-if-error of its own
		tr := staleTransport(t, o, retryhttp.StaleOptions{})
		tr.Policies = retryconfig.NewLive(cfg)
		_, _, err = fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		o.setDown(true)
		time.Sleep(30 * time.Second)

		feed := retryhttp.WithPolicyName(t.Context(), "feed")
		resp, body, err := fetch(t, feed, tr, "http://api.test/")
		require.NoError(t, err)
		assert.True(t, retryhttp.IsStale(resp), "feed accepts a minute")
		assert.Equal(t, "v1", body)

		resp, _, err = fetch(t, t.Context(), tr, "http://api.test/")
		require.NoError(t, err)
		assert.False(t, retryhttp.IsStale(resp), "the default policy accepts none")

		resp, _, err = fetch(t, retryhttp.WithStaleIfError(feed, 10*time.Second), tr, "http://api.test/")
		require.NoError(t, err)
		assert.False(t, retryhttp.IsStale(resp), "the request's own limit wins")
	})
}
