package retryconfig_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
)

// samePolicies checks that a and b define the same policies, with budgets
// of the same size, and breakers and throttles where the other has them.
func samePolicies(t *testing.T, a, b *retryconfig.Config) {
	t.Helper()
	require.Equal(t, a.Names(), b.Names())
	for _, n := range a.Names() {
		pa, pb := a.Policy(n), b.Policy(n)
		require.Equal(t, pa.Budget == nil, pb.Budget == nil, n)
		if pa.Budget != nil {
			assert.Equal(t, pa.Budget.Tokens(), pb.Budget.Tokens(), n)
		}
		require.Equal(t, pa.Breaker == nil, pb.Breaker == nil, n)
		require.Equal(t, pa.Throttle == nil, pb.Throttle == nil, n)
		pa.Budget, pb.Budget = nil, nil
		pa.Breaker, pb.Breaker = nil, nil
		pa.Throttle, pb.Throttle = nil, nil
		assert.Equal(t, pa, pb, n)
		assert.Equal(t, a.HTTPStatusCodes(n), b.HTTPStatusCodes(n), n)
		assert.Equal(t, a.GRPCCodes(n), b.GRPCCodes(n), n)
		assert.Equal(t, a.HTTPQuota(n), b.HTTPQuota(n), n)
		ha, oka := a.Hedging(n)
		hb, okb := b.Hedging(n)
		assert.Equal(t, oka, okb, n)
		assert.Equal(t, ha, hb, n)
		assert.Equal(t, a.StaleIfError(n), b.StaleIfError(n), n)
		assert.Equal(t, a.Chaos(n, nil), b.Chaos(n, nil), n)
	}
}

func TestMarshalRoundTrip(t *testing.T) {
	t.Parallel()
	docs := map[string]string{
		"ours": doc,
		"hedging": `{"policies": {"h": {"maxAttempts": 1, "hedging": {"maxAttempts": 3, "hedgingDelay": "0.05s",
			"nonFatalStatusCodes": ["UNAVAILABLE", 4]}}}}`,
		"chaos": `{"policies": {"orders": {"chaos": [{"rate": 0.2, "status": 503, "header": {"retry-after": "1", "X-Why": ""}},
			{"name": "slow", "rate": 0.1, "latency": "0.2s"}, {"rate": 0, "drop": true}]}}}`,
		"escaped names": `{"policies": {"/pkg.Svc/<M>": {"jitter": "none"}, "\u00e9": {}}}`,
		"empty":         `{}`,
		"stale":         `{"policies": {"default": {"staleIfError": "90s"}, "feed": {"maxAttempts": 2, "staleIfError": "1h"}}}`,
	}
	for name, d := range docs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			cfg, err := retryconfig.Parse([]byte(d))
			require.NoError(t, err)
			out, err := retryconfig.Marshal(cfg)
			require.NoError(t, err)
			back, err := retryconfig.Parse(out)
			require.NoError(t, err, "%s", out)
			samePolicies(t, cfg, back)
			again, err := retryconfig.Marshal(back)
			require.NoError(t, err)
			assert.Equal(t, string(out), string(again), "Marshal(Parse(Marshal(cfg))) = Marshal(cfg)")
		})
	}
}

// TestMarshalGolden pins Marshal's bytes, durations included, so that a Go
// release that changes how encoding/json writes a time.Duration cannot
// change them: CI runs it under Go 1.26 and Go 1.27
// (GOTOOLCHAIN=go1.27.3 go test ./retryconfig).
func TestMarshalGolden(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.Parse([]byte(doc))
	require.NoError(t, err)
	out, err := retryconfig.Marshal(cfg)
	require.NoError(t, err)
	want, err := os.ReadFile("testdata/marshal.golden")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(out))
}

func TestMarshalNil(t *testing.T) {
	t.Parallel()
	out, err := retryconfig.Marshal(nil)
	require.NoError(t, err)
	cfg, err := retryconfig.Parse(out)
	require.NoError(t, err)
	assert.Equal(t, retry.Policy{}, cfg.Policy("x"))
}

// Marshal writes a band's spread in its shortest form, however the
// document wrote it, so that its output does not depend on the input's
// spelling; Parse keeps the text as written until then.
func TestMarshalCanonicalBand(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.Parse([]byte(`{"policies": {"p": {"jitter": "band:0.30"}, "q": {"jitter": "band:3e-1"}}}`))
	require.NoError(t, err)
	out, err := retryconfig.Marshal(cfg)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"band:0.3"`)
	assert.NotContains(t, string(out), `0.30`)
	assert.NotContains(t, string(out), `3e-1`)
	again, err := retryconfig.Parse(out)
	require.NoError(t, err)
	assert.Equal(t, cfg.Policy("p").Jitter, again.Policy("p").Jitter)
}
