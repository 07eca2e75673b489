package retryconfig_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
)

const doc = `{
  "budgets": {"payments": {"maxTokens": 20, "tokenRatio": 0.5}},
  "policies": {
    "default":  {"maxAttempts": 3},
    "feed":     {"maxAttempts": 6, "baseBackoff": "100ms", "factor": 1.5, "maxBackoff": "1m30s",
                 "maxElapsed": "2m", "attemptTimeout": "0.2s", "jitter": "decorrelated"},
    "payments": {"maxAttempts": 2, "jitter": "band:0.3", "retryableStatusCodes": [503, 429, "UNAVAILABLE"],
                 "budget": "payments"}
  }
}`

func TestParsePolicies(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.Parse([]byte(doc))
	require.NoError(t, err)

	feed := cfg.Policy("feed")
	assert.Equal(t, 6, feed.MaxAttempts)
	assert.Equal(t, 100*time.Millisecond, feed.BaseBackoff)
	assert.Equal(t, 1.5, feed.Factor)
	assert.Equal(t, 90*time.Second, feed.MaxBackoff)
	assert.Equal(t, 2*time.Minute, feed.MaxElapsed)
	assert.Equal(t, 200*time.Millisecond, feed.AttemptTimeout)
	assert.Equal(t, retry.Jitter(retry.DecorrelatedJitter), feed.Jitter)
	assert.Nil(t, feed.Budget)

	pay := cfg.Policy("payments")
	assert.Equal(t, 2, pay.MaxAttempts)
	assert.Equal(t, retry.BandJitter(0.3), pay.Jitter)
	require.NotNil(t, pay.Budget)
	assert.Equal(t, 20.0, pay.Budget.Tokens())
	assert.Equal(t, []int{503, 429}, cfg.HTTPStatusCodes("payments"))
	assert.Equal(t, []uint32{14}, cfg.GRPCCodes("payments"))
	assert.Nil(t, cfg.HTTPStatusCodes("feed"), "no list means the integration's default")

	assert.Equal(t, retry.Policy{MaxAttempts: 3}, cfg.Policy("unknown"), "falls back to default")
	_, ok := cfg.Lookup("unknown")
	assert.False(t, ok)
	assert.Equal(t, []string{"default", "feed", "payments"}, cfg.Names())
}

func TestParseJitterNames(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]retry.Jitter{
		"full": retry.FullJitter, "equal": retry.EqualJitter, "decorrelated": retry.DecorrelatedJitter,
		"none": retry.NoJitter, "band:0.3": retry.BandJitter(0.3), "band:0": retry.BandJitter(0), "band:1": retry.BandJitter(1),
	} {
		cfg, err := retryconfig.Parse([]byte(`{"policies": {"p": {"jitter": "` + name + `"}}}`))
		require.NoError(t, err, name)
		assert.Equal(t, want, cfg.Policy("p").Jitter, name)
	}
}

func TestParseNoDefault(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.Parse([]byte(`{"policies": {"feed": {"maxAttempts": 6}}}`))
	require.NoError(t, err)
	assert.Equal(t, retry.Policy{}, cfg.Policy("payments"), "no default: the zero Policy")
	var nilCfg *retryconfig.Config
	assert.Equal(t, retry.Policy{}, nilCfg.Policy("payments"))
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc, want string
		policy          bool // matches retry.ErrInvalidPolicy
	}{
		{"string without unit", `{"policies": {"payments": {"maxBackoff": "5"}}}`,
			`policies.payments.maxBackoff: "5" has no unit`, true},
		{"bare number", `{"policies": {"payments": {"maxBackoff": 5}}}`,
			`policies.payments.maxBackoff: 5 is a bare number: write a duration with a unit`, true},
		{"negative duration", `{"policies": {"p": {"baseBackoff": "-1s"}}}`, `policies.p.baseBackoff: "-1s" is negative`, true},
		{"not a duration", `{"policies": {"p": {"maxElapsed": "soon"}}}`, `policies.p.maxElapsed: "soon" is not a duration`, true},
		{"unknown policy field", `{"policies": {"p": {"maxAttempt": 3}}}`, `policies.p.maxAttempt: unknown field`, true},
		{"unknown top field", `{"policys": {}}`, `policys: unknown field`, false},
		{"zero attempts", `{"policies": {"p": {"maxAttempts": 0}}}`, `policies.p.maxAttempts: 0 is not allowed`, true},
		{"fractional attempts", `{"policies": {"p": {"maxAttempts": 1.5}}}`, `policies.p.maxAttempts: 1.5 is not a whole number`, true},
		{"string attempts", `{"policies": {"p": {"maxAttempts": "3"}}}`, `policies.p.maxAttempts: "3" is not a number`, true},
		{"unbounded without elapsed", `{"policies": {"p": {"maxAttempts": -1}}}`, `policies.p.maxAttempts: -1 (no limit) needs maxElapsed`, true},
		{"factor below 1", `{"policies": {"p": {"factor": 0.5}}}`, `policies.p.factor: 0.5 is below 1`, true},
		{"max below base", `{"policies": {"p": {"baseBackoff": "2s", "maxBackoff": "1s"}}}`, `policies.p.maxBackoff: 1s is below baseBackoff 2s`, true},
		{"unknown jitter", `{"policies": {"p": {"jitter": "random"}}}`, `policies.p.jitter: "random" is not a jitter`, true},
		{"band out of range", `{"policies": {"p": {"jitter": "band:1.5"}}}`, `policies.p.jitter: "band:1.5": the spread`, true},
		{"bad status", `{"policies": {"p": {"retryableStatusCodes": [503, 42]}}}`, `policies.p.retryableStatusCodes: [1]: 42 is not an HTTP status`, true},
		{"bad code name", `{"policies": {"p": {"retryableStatusCodes": ["unavailable"]}}}`, `policies.p.retryableStatusCodes: [0]: "unavailable" is not a gRPC code name`, true},
		{"empty codes", `{"policies": {"p": {"retryableStatusCodes": []}}}`, `policies.p.retryableStatusCodes: the list is empty`, true},
		{"missing budget", `{"policies": {"p": {"budget": "payments"}}}`, `policies.p.budget: "payments" is not a member of budgets`, true},
		{"bad budget", `{"budgets": {"b": {"maxTokens": -1}}, "policies": {}}`, `budgets.b: maxTokens -1 is not a positive finite number`, false},
		{"unknown budget field", `{"budgets": {"b": {"tokens": 1}}}`, `budgets.b.tokens: unknown field`, false},
		{"bad hedging", `{"policies": {"p": {"hedging": {"maxAttempts": 1}}}}`, `policies.p.hedging: maxAttempts: 1 must be above 1`, true},
		{"empty name", `{"policies": {"": {}}}`, `policies: a policy needs a name`, false},
		{"duplicate key", `{"policies": {"p": {}, "p": {}}}`, `policies: "p" appears twice`, false},
		{"duplicate key, escaped", `{"policies": {"caf\u00e9": {}, "café": {}}}`, `policies: "café" appears twice`, false},
		{"duplicate field, escaped", `{"policies": {"p": {"\u006daxAttempts": 2, "maxAttempts": 2}}}`, `policies.p: "maxAttempts" appears twice`, true},
		{"not an object", `[]`, `[] is not an object`, false},
		{"policy not an object", `{"policies": {"p": 3}}`, `policies.p: 3 is not an object`, true},
		{"syntax", `{"policies": {`, `not valid JSON`, false},
		{"trailing data", `{} {}`, `not valid JSON: data after the value at byte 3`, false},
		{"trailing comma", `{"policies": {}} ,`, `not valid JSON: data after the value at byte 17`, false},
		{"huge number", `{"policies": {"p": {"maxAttempts": 1e400}}}`, `policies.p.maxAttempts: 1e400 is not a number in range`, true},
		{"empty", ``, `not valid JSON`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := retryconfig.Parse([]byte(tt.doc))
			require.Error(t, err)
			assert.Nil(t, cfg)
			assert.ErrorContains(t, err, tt.want)
			assert.Equal(t, tt.policy, errorsIs(err, retry.ErrInvalidPolicy), "errors.Is(err, ErrInvalidPolicy)")
		})
	}
}

// TestParseRejectsWhole checks that one bad policy rejects the others, and
// that the error names every problem.
func TestParseRejectsWhole(t *testing.T) {
	t.Parallel()
	_, err := retryconfig.Parse([]byte(`{"policies": {
		"good": {"maxAttempts": 2},
		"a": {"maxBackoff": "5"},
		"b": {"jiter": "full"}}}`))
	require.Error(t, err)
	assert.ErrorContains(t, err, `policies.a.maxBackoff: "5" has no unit`)
	assert.ErrorContains(t, err, `policies.b.jiter: unknown field`)
}

func TestParseBoundsErrors(t *testing.T) {
	t.Parallel()
	doc := []byte(`{"policies": {`)
	for i := range 50 {
		doc = append(doc, []byte(`"p`+string(rune('a'+i%26))+string(rune('a'+i/26))+`": {"maxAttempts": 0},`)...)
	}
	doc = append(doc, []byte(`"z": {}}}`)...)
	_, err := retryconfig.Parse(doc)
	require.Error(t, err)
	assert.ErrorContains(t, err, "and 40 more")
}

// TestParseSyntaxErrorAlone checks that a document that is not valid JSON
// gets that error alone, wherever it lies, even after problems that Parse
// found in the part before it (Parse validates as it reads).
func TestParseSyntaxErrorAlone(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc, notWant string
	}{
		{"after a bad field", `{"policies": {"p": {"maxAttempts": 0}, "q": {"x": tru}}}`, "maxAttempts"},
		{"after an unknown field", `{"policys": {}, "policies": {"p": {}},}`, "unknown field"},
		{"after a duplicate policy field", `{"policies": {"p": {"factor": 2, "factor": 2}, "q": [1,]}}`, "twice"},
		{"after a duplicate top key", `{"policies": {}, "policies": {}} x`, "twice"},
		{"after a policy not an object", `{"policies": {"p": 3, "q": {"a" 1}}}`, "not an object"},
		{"after a non-object document", `[1, 2,]`, "not an object"},
		{"in policies not an object", `{"policies": [1, 2,]}`, "not an object"},
		{"in budgets", `{"policies": {"p": {"maxAttempts": 0}}, "budgets": {"b": {"maxTokens": 01}}}`, "maxAttempts"},
		{"unterminated", `{"policies": {"p": {"jitter": "full`, "jitter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.False(t, json.Valid([]byte(tt.doc)))
			cfg, err := retryconfig.Parse([]byte(tt.doc))
			require.Error(t, err)
			assert.Nil(t, cfg)
			assert.ErrorContains(t, err, "not valid JSON")
			assert.NotContains(t, err.Error(), tt.notWant)
		})
	}

	// Nesting beyond maxDepth is refused, as a syntax error, though
	// encoding/json (whose limit is far higher) would accept it.
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	_, err := retryconfig.Parse([]byte(`{"policies": {"p": {"maxAttempts": 0, "hedging": ` + deep + `}}}`))
	require.Error(t, err)
	assert.ErrorContains(t, err, "not valid JSON: nested too deep")
	assert.NotContains(t, err.Error(), "maxAttempts")
}

// A bad value is reported at the path of every policy that has it, not
// only at the first.
func TestParseRepeatedBadValueNamedEachTime(t *testing.T) {
	t.Parallel()
	_, err := retryconfig.Parse([]byte(`{"policies": {"a": {"jitter": "band:2"}, "b": {"jitter": "band:2"},
		"c": {"baseBackoff": "5"}, "d": {"baseBackoff": "5"}}}`))
	require.Error(t, err)
	for _, path := range []string{"policies.a.jitter", "policies.b.jitter", "policies.c.baseBackoff", "policies.d.baseBackoff"} {
		assert.Contains(t, err.Error(), path)
	}
}

// Keys with escapes or UTF-8 decode as encoding/json decodes them, and a
// duplicate is found whichever way each copy is written.
func TestParseKeysDecoded(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.Parse([]byte(`{"policies": {"é\u0041": {"maxAttempts": 2}, "\u0070ay": {"maxAttempts": 3}, "ascii": {"maxAttempts": 4}}}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"ascii", "pay", "éA"}, cfg.Names())
	assert.Equal(t, 2, cfg.Policy("éA").MaxAttempts)
	_, err = retryconfig.Parse([]byte(`{"policies": {"p": {}, "\u0070": {}}}`))
	assert.ErrorContains(t, err, `"p" appears twice`)
}

// policiesDoc is a document of n policies that all have the same fields
// and share one budget, as a large service's might.
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

func TestParseLargeDocument(t *testing.T) {
	t.Parallel()
	cfg, err := retryconfig.Parse(policiesDoc(1000))
	require.NoError(t, err)
	require.Len(t, cfg.Names(), 1000)
	shared := cfg.Policy("policy-0").Budget
	require.NotNil(t, shared)
	for _, name := range []string{"policy-0", "policy-500", "policy-999"} {
		p := cfg.Policy(name)
		assert.Equal(t, 3, p.MaxAttempts, name)
		assert.Equal(t, 2*time.Second, p.MaxBackoff, name)
		assert.Equal(t, retry.BandJitter(0.3), p.Jitter, name)
		assert.Equal(t, []int{503, 429}, cfg.HTTPStatusCodes(name), name)
		assert.Same(t, shared, p.Budget, name)
	}
}
