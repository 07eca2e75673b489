package retryconfig_test

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryconfig"
)

// guardsDoc declares a guard of each kind, and policies that share them.
const guardsDoc = `{
  "budgets": {"payments": {"maxTokens": 20, "tokenRatio": 0.5}},
  "breakers": {
    "payments": {"failureRatio": 0.5, "minCalls": 2, "window": "1m", "openFor": "10m", "probes": 1, "countAttempts": true},
    "search": {}
  },
  "throttles": {
    "payments": {"k": 1.5, "window": "2m", "minRequests": 2, "maxReject": 0.5}
  },
  "policies": {
    "payments": {"maxAttempts": 2, "budget": "payments", "breaker": "payments", "throttle": "payments"},
    "refunds": {"breaker": "payments", "throttle": "payments"},
    "search": {"breaker": "search"}
  }
}`

func TestParseGuards(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, guardsDoc)
	pay, refunds, search := cfg.Policy("payments"), cfg.Policy("refunds"), cfg.Policy("search")
	require.NotNil(t, pay.Breaker)
	require.NotNil(t, pay.Throttle)
	assert.Same(t, pay.Breaker, refunds.Breaker, "policies that name one breaker share it")
	assert.Same(t, pay.Throttle, refunds.Throttle, "policies that name one throttle share it")
	require.NotNil(t, search.Breaker)
	assert.NotSame(t, pay.Breaker, search.Breaker)
	assert.Nil(t, search.Throttle)
	assert.Nil(t, search.Budget)

	// minCalls 2 at failureRatio 0.5: two failed calls open the breaker,
	// which stays open for openFor, ten minutes, longer than this test.
	drain(t, pay, 2)
	assert.Equal(t, guard.BreakerOpen, refunds.Breaker.State())
	assert.Equal(t, guard.BreakerClosed, search.Breaker.State(), "search's breaker has the defaults: minCalls 20")
	// minRequests 2 and no accepts: the throttle sheds, at most maxReject.
	assert.Greater(t, pay.Throttle.RejectProbability(), 0.0)
	assert.LessOrEqual(t, pay.Throttle.RejectProbability(), 0.5)
}

func TestParseGuardErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, doc, want string
		policy          bool // matches retry.ErrInvalidPolicy
	}{
		{"missing breaker", `{"policies": {"p": {"breaker": "payments"}}}`, `policies.p.breaker: "payments" is not a member of breakers`, true},
		{"missing throttle", `{"throttles": {"a": {}}, "policies": {"p": {"throttle": "b"}}}`, `policies.p.throttle: "b" is not a member of throttles`, true},
		{"empty breaker name", `{"policies": {"p": {"breaker": ""}}}`, `policies.p.breaker: the empty name is no breaker`, true},
		{"breaker name not a string", `{"policies": {"p": {"throttle": 3}}}`, `policies.p.throttle: 3 is not a string`, true},
		{"ratio out of range", `{"breakers": {"b": {"failureRatio": 1.5}}}`, `breakers.b.failureRatio: 1.5 is not in (0, 1]`, false},
		{"negative calls", `{"breakers": {"b": {"minCalls": -1}}}`, `breakers.b.minCalls: -1 is negative`, false},
		{"short window", `{"breakers": {"b": {"window": "1ms"}}}`, `breakers.b.window: 1ms is below`, false},
		{"bare openFor", `{"breakers": {"b": {"openFor": 5}}}`, `breakers.b.openFor: 5 is a bare number`, false},
		{"fractional probes", `{"breakers": {"b": {"probes": 1.5}}}`, `breakers.b.probes: 1.5 is not a whole number`, false},
		{"countAttempts not a bool", `{"breakers": {"b": {"countAttempts": "yes"}}}`, `breakers.b.countAttempts: "yes" is not true or false`, false},
		{"zero for the default", `{"breakers": {"b": {"minCalls": 0}}}`, `breakers.b.minCalls: 0 would stand for the default`, false},
		{"unknown breaker field", `{"breakers": {"b": {"ratio": 0.5}}}`, `breakers.b.ratio: unknown field (want failureRatio, minCalls, window, openFor, probes or countAttempts)`, false},
		{"breaker not an object", `{"breakers": {"b": 3}}`, `breakers.b: 3 is not an object`, false},
		{"breakers not an object", `{"breakers": []}`, `breakers: [] is not an object`, false},
		{"breaker without a name", `{"breakers": {"": {}}}`, `breakers: a breaker needs a name`, false},
		{"breaker twice", `{"breakers": {"b": {}, "b": {}}}`, `breakers: "b" appears twice`, false},
		{"breaker field twice", `{"breakers": {"b": {"probes": 1, "probes": 2}}}`, `breakers.b: "probes" appears twice`, false},
		{"small k", `{"throttles": {"t": {"k": 0.5}}}`, `throttles.t.k: 0.5 is not a finite number above 1`, false},
		{"reject above 1", `{"throttles": {"t": {"maxReject": 2}}}`, `throttles.t.maxReject: 2 is not in (0, 1]`, false},
		{"zero window", `{"throttles": {"t": {"window": "0s"}}}`, `throttles.t.window: 0 would stand for the default`, false},
		{"negative requests", `{"throttles": {"t": {"minRequests": -3}}}`, `throttles.t.minRequests: -3 is negative`, false},
		{"unknown throttle field", `{"throttles": {"t": {"K": 2}}}`, `throttles.t.K: unknown field (want k, window, minRequests or maxReject)`, false},
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

func TestLiveKeepsBreakersAndThrottles(t *testing.T) {
	t.Parallel()
	l := retryconfig.NewLive(mustParse(t, guardsDoc))
	drain(t, l.Policy("payments"), 3)
	br, th := l.Policy("payments").Breaker, l.Policy("payments").Throttle
	require.Equal(t, guard.BreakerOpen, br.State())
	reject := th.RejectProbability()
	require.Greater(t, reject, 0.0)
	search := l.Policy("search").Breaker

	// payments' guards keep their options (written in another order);
	// search's breaker changes.
	require.NoError(t, l.Update([]byte(`{
	  "breakers": {
	    "payments": {"countAttempts": true, "probes": 1, "openFor": "600s", "window": "60s", "minCalls": 2, "failureRatio": 0.50},
	    "search": {"minCalls": 5}
	  },
	  "throttles": {"payments": {"maxReject": 0.5, "minRequests": 2, "window": "2m", "k": 1.5}},
	  "policies": {"payments": {"maxAttempts": 3, "breaker": "payments", "throttle": "payments"},
	               "search": {"breaker": "search"}, "feed": {"breaker": "payments"}}
	}`)))
	assert.Same(t, br, l.Policy("payments").Breaker, "same options: same Breaker")
	assert.Equal(t, guard.BreakerOpen, l.Policy("payments").Breaker.State(), "an open breaker stays open through a reload")
	assert.Same(t, br, l.Policy("feed").Breaker, "a new policy shares the kept breaker")
	assert.Same(t, th, l.Policy("payments").Throttle, "same options: same Throttle")
	assert.InDelta(t, reject, l.Policy("payments").Throttle.RejectProbability(), 1e-9, "its counts survive the update")
	assert.NotSame(t, search, l.Policy("search").Breaker, "new options: a new Breaker")

	// A rejected update does not touch them.
	require.Error(t, l.Update([]byte(`{"breakers": {"payments": {"probes": -1}}, "policies": {}}`)))
	assert.Same(t, br, l.Policy("payments").Breaker)

	// Changed options make new guards, closed and with nothing counted.
	require.NoError(t, l.Update([]byte(`{"breakers": {"payments": {"minCalls": 3}}, "throttles": {"payments": {"k": 2}},
	  "policies": {"payments": {"breaker": "payments", "throttle": "payments"}}}`)))
	assert.NotSame(t, br, l.Policy("payments").Breaker)
	assert.Equal(t, guard.BreakerClosed, l.Policy("payments").Breaker.State())
	assert.NotSame(t, th, l.Policy("payments").Throttle)
	assert.Zero(t, l.Policy("payments").Throttle.RejectProbability())

	// A guard that goes away and comes back starts afresh.
	require.NoError(t, l.Update([]byte(`{"policies": {"payments": {}}}`)))
	assert.Nil(t, l.Policy("payments").Breaker)
	assert.Nil(t, l.Policy("payments").Throttle)
	require.NoError(t, l.Update([]byte(guardsDoc)))
	assert.NotSame(t, br, l.Policy("payments").Breaker)
	assert.Equal(t, guard.BreakerClosed, l.Policy("payments").Breaker.State())
}

func TestOverridesGuards(t *testing.T) {
	t.Parallel()
	l := retryconfig.NewLive(mustParse(t, guardsDoc))
	drain(t, l.Policy("payments"), 2)
	br := l.Policy("payments").Breaker
	require.Equal(t, guard.BreakerOpen, br.State())

	var o retryconfig.Overrides
	require.NoError(t, o.Set("search.breaker=payments"))
	require.NoError(t, o.FromEnv("RETRY_", []string{"RETRY_FEED_THROTTLE=payments"}))
	require.NoError(t, l.Override(&o))
	assert.Same(t, br, l.Policy("search").Breaker, "an override names a declared breaker")
	assert.Same(t, br, l.Policy("payments").Breaker, "an Override keeps the guards")
	assert.Equal(t, guard.BreakerOpen, br.State())
	assert.Same(t, l.Policy("payments").Throttle, l.Policy("feed").Throttle)

	// The override outlives a reload, and so does the open breaker.
	require.NoError(t, l.Update([]byte(guardsDoc)))
	assert.Same(t, br, l.Policy("search").Breaker)
	assert.Equal(t, guard.BreakerOpen, l.Policy("search").Breaker.State())

	var bad retryconfig.Overrides
	require.NoError(t, bad.Set("search.throttle=nope"))
	err := l.Override(&bad)
	assert.ErrorContains(t, err, `policies.search.throttle: "nope" is not a member of throttles`)
	assert.ErrorContains(t, bad.Set("search.breaker="), "the empty name is no breaker")
}

func TestMarshalGuards(t *testing.T) {
	t.Parallel()
	cfg := mustParse(t, guardsDoc)
	out, err := retryconfig.Marshal(cfg)
	require.NoError(t, err)
	want, err := os.ReadFile("testdata/marshal_guards.golden")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(out))

	back := mustParse(t, string(out))
	samePolicies(t, cfg, back)
	again, err := retryconfig.Marshal(back)
	require.NoError(t, err)
	assert.Equal(t, string(out), string(again), "Marshal(Parse(Marshal(cfg))) = Marshal(cfg)")
	assert.NotNil(t, back.Policy("refunds").Breaker)
	assert.NotNil(t, back.Policy("refunds").Throttle)
}

// An error about a guard's options matches guard.ErrInvalidOptions, as
// guard's own constructors' do, and a policy that names the invalid guard
// is not told again that it is missing.
func TestGuardErrorsMatchErrInvalidOptions(t *testing.T) {
	t.Parallel()
	_, err := retryconfig.Parse([]byte(`{"breakers": {"b": {"failureRatio": 1.5}}, "policies": {"p": {"breaker": "b"}}}`))
	require.ErrorIs(t, err, guard.ErrInvalidOptions)
	assert.ErrorContains(t, err, "breakers.b.failureRatio")
	assert.NotContains(t, err.Error(), "is not a member of breakers")
}
