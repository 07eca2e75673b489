package retryotel_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
)

// ObserveGuards observes the sets of a guard.Keyed in one call: the tokens
// of each key's budget, and each key's breaker and throttle, as a
// Transport or an outbox fills them; Unregister stops all of them.
func TestObserveGuards(t *testing.T) {
	t.Parallel()
	s := newSink(t)
	clk := retrytest.NewClock()
	budgets, err := guard.NewBudgets(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1}, 10)
	require.NoError(t, err)
	breakers, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 1, Clock: clk}, 10)
	require.NoError(t, err)
	throttles, err := guard.NewThrottles(guard.ThrottleOptions{Clock: clk}, 10)
	require.NoError(t, err)
	k := guard.Keyed{Budgets: budgets, Breakers: breakers, Throttles: throttles}
	reg, err := s.obs.ObserveGuards("origins", k)
	require.NoError(t, err)

	p := retry.Policy{MaxAttempts: 2, Clock: clk}.WithGuards(&k, "https://a.example")
	_, err = retrytest.Do(context.Background(), func(context.Context) error { return errDown }, p)
	require.Error(t, err)

	tokens := map[string]float64{}
	if g, ok := s.metrics(t)["retry.budget.tokens"].(metricdata.Gauge[float64]); ok {
		for _, pt := range g.DataPoints {
			tokens[attrString(pt.Attributes)] = pt.Value
		}
	}
	assert.Equal(t, map[string]float64{"retry.guard.key=https://a.example,retry.guard.name=origins": 8}, tokens,
		"two failures took two tokens")
	state := int64Points(t, s, "retry.breaker.state")
	assert.Equal(t, int64(1), state["retry.breaker.state=open,retry.guard.key=https://a.example,retry.guard.name=origins"])
	assert.Contains(t, s.metrics(t), "retry.throttle.reject_ratio")

	require.NoError(t, reg.Unregister())
	assert.NotContains(t, s.metrics(t), "retry.budget.tokens", "unregistered: no more points")

	_, err = s.obs.ObserveGuards("none", guard.Keyed{})
	assert.Error(t, err)
}
