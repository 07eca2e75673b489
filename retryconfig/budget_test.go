package retryconfig_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryconfig"
)

func TestParseRatioBudget(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, fields string
		floor        float64 // the retries it allows with no traffic: minPerSecond × ttl
	}{
		{"all three", `"ratio": 0.2, "minPerSecond": 10, "ttl": "10s"`, 100},
		{"ttl alone, the other defaults", `"ttl": "5s"`, 50},
		{"floor alone", `"minPerSecond": 0.5`, 5},
		{"ratio alone", `"ratio": 0.5`, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := retryconfig.Parse([]byte(`{"budgets": {"r": {` + tc.fields + `}}, "policies": {"p": {"budget": "r"}}}`))
			require.NoError(t, err)
			b := cfg.Policy("p").Budget
			require.NotNil(t, b)
			assert.Equal(t, tc.floor, b.Tokens(), "an empty ratio budget allows its floor")
			b.Failed()
			assert.Equal(t, tc.floor, b.Tokens(), "a ratio budget, not a token bucket: a failure takes nothing")
		})
	}
}

func TestParseRatioBudgetErrors(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, fields, want string }{
		{"mixed", `"maxTokens": 10, "ratio": 0.2`,
			`budgets.r: maxTokens 10 and tokenRatio 0 are a token bucket's, ratio, minPerSecond and ttl a ratio budget's: set one kind`},
		{"mixed, other order", `"ttl": "10s", "tokenRatio": 0.1`, `budgets.r: maxTokens 0 and tokenRatio 0.1 are a token bucket's`},
		{"zero ratio", `"ratio": 0`, `budgets.r.ratio: 0 would stand for the default: leave the field out for it`},
		{"zero ttl", `"ttl": "0s"`, `budgets.r.ttl: 0 would stand for the default`},
		{"zero maxTokens", `"maxTokens": 0`, `budgets.r.maxTokens: 0 is not a positive finite number`},
		{"negative ratio", `"ratio": -0.2`, `budgets.r.ratio: -0.2 is not in (0, 1000]`},
		{"huge floor", `"minPerSecond": 1e300`, `budgets.r.minPerSecond: 1e+300 is not in (0, 1e+06]`},
		{"long ttl", `"ttl": "48h"`, `budgets.r.ttl: 48h0m0s is not in [1ms, 24h0m0s]`},
		{"tiny ttl", `"ttl": "1ns"`, `budgets.r.ttl: 1ns is not in [1ms, 24h0m0s]`},
		{"ttl without unit", `"ttl": "10"`, `budgets.r.ttl: "10" has no unit`},
		{"ttl as a number", `"ttl": 10`, `budgets.r.ttl: 10 is a bare number`},
		{"string ratio", `"ratio": "0.2"`, `budgets.r.ratio: "0.2" is not a number`},
		{"unknown field", `"percentCanRetry": 0.2`, `budgets.r.percentCanRetry: unknown field (want maxTokens, tokenRatio, ratio, minPerSecond or ttl)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := retryconfig.Parse([]byte(`{"budgets": {"r": {` + tc.fields + `}}}`))
			require.Error(t, err)
			assert.ErrorContains(t, err, tc.want)
		})
	}
	// A bad value of a ratio budget's field is guard's error.
	_, err := retryconfig.Parse([]byte(`{"budgets": {"r": {"ratio": 2000}}}`))
	assert.ErrorIs(t, err, guard.ErrInvalidOptions)
	_, err = retryconfig.Parse([]byte(`{"budgets": {"r": {"maxTokens": 10, "ratio": 0.2}}}`))
	assert.ErrorIs(t, err, guard.ErrInvalidOptions, "mixed kinds")
}

func TestMarshalRatioBudgetRoundTrips(t *testing.T) {
	t.Parallel()
	const in = `{"budgets": {"r": {"ratio": 0.25, "minPerSecond": 3, "ttl": "1m30s"}, "t": {"maxTokens": 20}}, "policies": {"p": {"budget": "r"}, "q": {"budget": "t"}}}`
	cfg, err := retryconfig.Parse([]byte(in))
	require.NoError(t, err)
	out, err := retryconfig.Marshal(cfg)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"r": {"ratio": 0.25, "minPerSecond": 3, "ttl": "1m30s"}`)
	assert.Contains(t, string(out), `"t": {"maxTokens": 20}`, "a field left out stays out")
	back, err := retryconfig.Parse(out)
	require.NoError(t, err)
	assert.Equal(t, 3*90.0, back.Policy("p").Budget.Tokens())
	again, err := retryconfig.Marshal(back)
	require.NoError(t, err)
	assert.Equal(t, string(out), string(again))
}

func TestLiveKeepsARatioBudget(t *testing.T) {
	t.Parallel()
	l := retryconfig.NewLive(mustParse(t, `{"budgets": {"r": {"ratio": 0.2, "ttl": "10s"}}, "policies": {"p": {"budget": "r"}}}`))
	old := l.Policy("p").Budget
	old.Retrying()
	require.NoError(t, l.Update([]byte(`{"budgets": {"r": {"ttl": "10s", "ratio": 0.2}}, "policies": {"p": {"maxAttempts": 2, "budget": "r"}}}`)))
	assert.Same(t, old, l.Policy("p").Budget, "same fields: the same Budget, with its window")
	assert.Equal(t, 99.0, old.Tokens(), "the retry taken is still counted")
	require.NoError(t, l.Update([]byte(`{"budgets": {"r": {"ttl": "20s", "ratio": 0.2}}, "policies": {"p": {"budget": "r"}}}`)))
	assert.NotSame(t, old, l.Policy("p").Budget)
	assert.Equal(t, 200.0, l.Policy("p").Budget.Tokens(), "a new, empty window")
}
