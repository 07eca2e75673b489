package retryconfig_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
)

// A policy's "quota" names retryhttp's quota mode: it is validated, falls
// back to "default" as every field does, round-trips through Marshal, and
// can be overridden like any string field.
func TestQuota(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, `{"policies": {"default": {"quota": "spread"}, "feed": {"quota": "off"}, "plain": {}}}`)
	assert.Equal(t, "spread", cfg.HTTPQuota("default"))
	assert.Equal(t, "off", cfg.HTTPQuota("feed"))
	assert.Equal(t, "", cfg.HTTPQuota("plain"), "not set: the Transport's own")
	assert.Equal(t, "spread", cfg.HTTPQuota("unnamed"), "an unknown name is default's")
	assert.Equal(t, "", (*retryconfig.Config)(nil).HTTPQuota("default"))
	assert.Equal(t, []string{"hold", "spread", "off"}, retryconfig.QuotaModes())

	out, err := retryconfig.Marshal(cfg)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"feed": {"quota": "off"}`)
	back, err := retryconfig.Parse(out)
	require.NoError(t, err)
	samePolicies(t, cfg, back)

	for _, bad := range []string{`"wait"`, `"HOLD"`, `""`, `1`, `true`} {
		_, err := retryconfig.Parse([]byte(`{"policies": {"p": {"quota": ` + bad + `}}}`))
		require.Error(t, err, bad)
		assert.ErrorIs(t, err, retry.ErrInvalidPolicy, bad)
		assert.ErrorContains(t, err, "policies.p.quota", bad)
	}

	var o retryconfig.Overrides
	require.NoError(t, o.Set("feed.quota=hold"))
	require.NoError(t, o.FromEnv("RETRY_", []string{"RETRY_PLAIN_QUOTA=off"}))
	assert.ErrorContains(t, o.Set("feed.quota=sometimes"), "not a quota mode")
	over, err := o.Apply(cfg)
	require.NoError(t, err)
	assert.Equal(t, "hold", over.HTTPQuota("feed"))
	assert.Equal(t, "off", over.HTTPQuota("plain"))
}
