package retry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrytest"
)

// AllowAnother is the admission of an attempt after the first, in Do's
// order: MaxAttempts, then the Budget, then the Breaker. It takes nothing.
func TestAllowAnother(t *testing.T) {
	t.Parallel()
	budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 2, TokenRatio: 1})
	require.NoError(t, err)
	clk := retrytest.NewClock()
	br, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1, FailureRatio: 1, Clock: clk})
	require.NoError(t, err)
	p := retry.Policy{MaxAttempts: 3, Budget: budget, Breaker: br, Clock: clk}
	assert.Equal(t, retry.StopNone, p.AllowAnother(1))
	assert.Equal(t, retry.StopExhausted, p.AllowAnother(3))
	assert.Equal(t, 2.0, budget.Tokens(), "asking takes no token")

	budget.Failed() // half the bucket: no retry
	assert.Equal(t, retry.StopBudget, p.AllowAnother(1))
	assert.Equal(t, retry.StopExhausted, p.AllowAnother(3), "MaxAttempts first")
	budget.Succeeded()

	_, _ = retry.Do(context.Background(), func(context.Context) error { return errors.New("503") },
		retry.Policy{MaxAttempts: 1, Breaker: br, Clock: clk})
	require.Equal(t, guard.BreakerOpen, br.State())
	assert.Equal(t, retry.StopBreakerOpen, p.AllowAnother(1))
	budget.Failed()
	assert.Equal(t, retry.StopBudget, p.AllowAnother(1), "the Budget before the Breaker")

	unbounded := retry.Policy{MaxAttempts: -1, MaxElapsed: time.Minute}
	assert.Equal(t, retry.StopNone, unbounded.AllowAnother(1000), "no count limit")
}
