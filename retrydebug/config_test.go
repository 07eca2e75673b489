package retrydebug_test

import (
	"encoding/json"
	"testing"

	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The page and its JSON show the version of a live configuration as it is
// when they are served: an accepted update moves it, a rejected one does
// not, and without a registered version neither shows one.
func TestConfigVersionFollowsALiveConfig(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.Parse([]byte(`{"policies": {"default": {"maxAttempts": 3}}}`))
	require.NoError(t, err)
	live := retryconfig.NewLive(cfg)
	rec := retrydebug.NewRecorder(0, 0)

	_, body := get(t, rec, "/debug/retries")
	assert.NotContains(t, body, "retry config version")
	assert.Zero(t, rec.Snapshot().ConfigVersion)

	rec.ConfigVersion(live.Version)
	_, body = get(t, rec, "/debug/retries")
	assert.Contains(t, body, `<span class="config">retry config version 1</span>`)

	require.NoError(t, live.Update([]byte(`{"policies": {"default": {"maxAttempts": 2}}}`)))
	require.Error(t, live.Update([]byte(`{"policies": {"default": {"maxBackoff": "5"}}}`)))
	_, body = get(t, rec, "/debug/retries")
	assert.Contains(t, body, `retry config version 2</span>`, "the accepted update counts, the rejected one does not")

	_, js := get(t, rec, "/debug/retries?format=json")
	var snap struct {
		ConfigVersion uint64 `json:"config_version"`
	}
	require.NoError(t, json.Unmarshal([]byte(js), &snap))
	assert.Equal(t, uint64(2), snap.ConfigVersion)

	rec.ConfigVersion(nil)
	_, body = get(t, rec, "/debug/retries")
	assert.NotContains(t, body, "retry config version")
}
