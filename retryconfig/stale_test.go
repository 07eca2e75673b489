package retryconfig_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
)

// staleIfError is a policy's positive duration, with "default" as the
// fallback of every name, and 0 where no policy sets it.
func TestStaleIfError(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `{"policies": {"default": {"staleIfError": "90s"}, "feed": {"staleIfError": "1h"}, "payments": {}}}`)
	assert.Equal(t, time.Hour, cfg.StaleIfError("feed"))
	assert.Equal(t, 90*time.Second, cfg.StaleIfError("other"), "the default's")
	assert.Zero(t, cfg.StaleIfError("payments"), "defined without it")
	var none *retryconfig.Config
	assert.Zero(t, none.StaleIfError("feed"))

	out, err := retryconfig.Marshal(cfg)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"feed": {"staleIfError": "1h0m0s"}`)

	for doc, want := range map[string]string{
		`{"policies": {"p": {"staleIfError": "0s"}}}`:  `policies.p.staleIfError: 0s is not positive`,
		`{"policies": {"p": {"staleIfError": "-1s"}}}`: `policies.p.staleIfError: "-1s" is negative`,
		`{"policies": {"p": {"staleIfError": 60}}}`:    `policies.p.staleIfError`,
	} {
		_, err := retryconfig.Parse([]byte(doc))
		assert.ErrorContains(t, err, want, doc)
		assert.ErrorIs(t, err, retry.ErrInvalidPolicy, doc)
	}
}

// An operator can turn stale answers on for a policy during an incident,
// by environment or flag.
func TestStaleIfErrorOverride(t *testing.T) {
	t.Parallel()
	var o retryconfig.Overrides
	require.NoError(t, o.FromEnv("RETRY_", []string{"RETRY_FEED_STALE_IF_ERROR=10m"}))
	require.NoError(t, o.Set("search.staleIfError=30s"))
	cfg, err := o.Apply(mustParse(t, `{"policies": {"feed": {}}}`))
	require.NoError(t, err)
	assert.Equal(t, 10*time.Minute, cfg.StaleIfError("feed"))
	assert.Equal(t, 30*time.Second, cfg.StaleIfError("search"))
	assert.ErrorContains(t, o.Set("feed.staleIfError=5"), `"5" has no unit`)
}
