package retryconfig_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/retryconfig"
)

// FuzzParse checks that Parse and ParseServiceConfig never panic, that
// they accept no invalid JSON and call no valid JSON invalid (json.Valid
// decides, but for nesting deeper than Parse takes), that whatever Parse
// accepts is a set of valid policies, and that Marshal writes it back into
// a document Parse accepts with the same bytes again.
func FuzzParse(f *testing.F) {
	f.Add([]byte(doc))
	f.Add([]byte(`{"policies": {"p": {"maxBackoff": "5"}}}`))
	f.Add([]byte(`{"policies": {"p": {"maxAttempts": -1, "maxElapsed": "1s", "jitter": "band:0.5"}}}`))
	f.Add([]byte(`{"policies": {"h": {"hedging": {"maxAttempts": 9, "nonFatalStatusCodes": [1, "ABORTED"]}}}}`))
	f.Add([]byte(`{"methodConfig": [{"name": [{}], "retryPolicy": {"maxAttempts": 2}}], "x": [1, "\u00e9", {"a": null}]}`))
	f.Add([]byte(`{"budgets": {"b": {"maxTokens": 1e308, "tokenRatio": 1e-300}}, "policies": {"p": {"budget": "b"}}}`))
	f.Add([]byte(`{"budgets": {"r": {"ratio": 0.2, "minPerSecond": 10, "ttl": "10s"}}, "policies": {"p": {"budget": "r"}}}`))
	f.Add([]byte(`{"budgets": {"r": {"ratio": 1e3, "minPerSecond": 1e-300, "ttl": "24h"}, "m": {"ttl": "1s", "maxTokens": 5}}}`))
	f.Add([]byte(`{},`))
	f.Add([]byte(guardsDoc))
	f.Add([]byte(`{"breakers": {"b": {"window": "20ms", "countAttempts": false}}, "throttles": {"t": {"k": 1e3}}, "policies": {"p": {"breaker": "b", "throttle": "t"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := retryconfig.Parse(data)
		if !json.Valid(data) {
			require.Error(t, err, "Parse accepted invalid JSON")
		} else if err != nil && !strings.Contains(err.Error(), "nested too deep") {
			require.NotContains(t, err.Error(), "not valid JSON", "Parse rejected valid JSON")
		}
		if _, serr := retryconfig.ParseServiceConfig(data); serr == nil {
			require.True(t, json.Valid(data), "ParseServiceConfig accepted invalid JSON")
		}
		if err != nil {
			return
		}
		for _, n := range cfg.Names() {
			require.NoError(t, cfg.Policy(n).Validate(), n)
		}
		out, err := retryconfig.Marshal(cfg)
		require.NoError(t, err)
		back, err := retryconfig.Parse(out)
		require.NoError(t, err, "%s", out)
		again, err := retryconfig.Marshal(back)
		require.NoError(t, err)
		require.Equal(t, string(out), string(again))
	})
}
