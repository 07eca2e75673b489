package retryconfig_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
)

// policiesDoc is a document of n policies that all have the same fields.
func policiesDoc(n int) []byte {
	doc := []byte(`{"budgets": {"b": {"maxTokens": 10}}, "policies": {`)
	for i := range n {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, `"policy-`+strconv.Itoa(i)+`": {"maxAttempts": 3, "baseBackoff": "100ms", "maxBackoff": "2s", "jitter": "band:0.3", "retryableStatusCodes": [503, 429], "budget": "b"}`...)
	}
	return append(doc, "}}"...)
}

// The values that repeat from policy to policy are parsed once per
// document: an update of a thousand policies allocates about once per
// policy (its name), not once per field, which keeps it fast and light on
// the garbage collector.
func TestParseAllocatesOncePerPolicy(t *testing.T) {
	doc := policiesDoc(1000)
	l := retryconfig.NewLive(nil)
	allocs := testing.AllocsPerRun(5, func() {
		if err := l.Update(doc); err != nil {
			t.Fatal(err)
		}
	})
	assert.LessOrEqual(t, allocs, 1100.0, "Update of 1,000 policies: %v allocations, want about one per policy", allocs)
	cfg := l.Config()
	for _, name := range []string{"policy-0", "policy-999"} {
		p := cfg.Policy(name)
		assert.Equal(t, retry.BandJitter(0.3), p.Jitter, name)
		assert.Equal(t, []int{503, 429}, cfg.HTTPStatusCodes(name), name)
		assert.NotNil(t, p.Budget, name)
	}
}

// A bad value is reported at the path of every policy that has it, not
// only at the first: only values that parsed are remembered.
func TestParseRepeatedBadValueNamedEachTime(t *testing.T) {
	t.Parallel()
	_, err := retryconfig.Parse([]byte(`{"policies": {"a": {"jitter": "band:2"}, "b": {"jitter": "band:2"},
		"c": {"baseBackoff": "5"}, "d": {"baseBackoff": "5"}}}`))
	require.Error(t, err)
	for _, path := range []string{"policies.a.jitter", "policies.b.jitter", "policies.c.baseBackoff", "policies.d.baseBackoff"} {
		assert.Contains(t, err.Error(), path)
	}
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

// Keys with escapes or UTF-8 decode as encoding/json decodes them, on the
// fast path for plain ASCII and off it for the rest.
func TestParseKeysDecoded(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.Parse([]byte(`{"policies": {"é\u0041": {"maxAttempts": 2}, "\u0070ay": {"maxAttempts": 3}, "ascii": {"maxAttempts": 4}}}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"ascii", "pay", "éA"}, cfg.Names())
	assert.Equal(t, 2, cfg.Policy("éA").MaxAttempts)
	_, err = retryconfig.Parse([]byte(`{"policies": {"p": {}, "\u0070": {}}}`))
	assert.ErrorContains(t, err, `"p" appears twice`)
}
