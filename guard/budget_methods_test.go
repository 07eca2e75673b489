package guard_test

import (
	"testing"

	"github.com/stormguard/retry/guard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The functions reach the Budget's own bucket: a failure takes a token, a
// success gives back tokenRatio, and Allow holds while more than half the
// tokens are left, as for retry.Do's retries.
func TestBudgetsUseTheBucket(t *testing.T) {
	t.Parallel()
	b, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 4, TokenRatio: 0.5})
	require.NoError(t, err)
	assert.True(t, b.AllowRetry(), "a full bucket")
	b.Failed()
	assert.Equal(t, 3.0, b.Tokens())
	assert.True(t, b.AllowRetry(), "3 tokens of 4")
	b.Failed()
	assert.Equal(t, 2.0, b.Tokens())
	assert.False(t, b.AllowRetry(), "2 tokens of 4: not above half")
	b.Succeeded()
	assert.Equal(t, 2.5, b.Tokens())
	assert.True(t, b.AllowRetry())
}
