package budgets_test

import (
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/budgets"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The functions reach the Budget's own bucket: a failure takes a token, a
// success gives back tokenRatio, and Allow holds while more than half the
// tokens are left, as for retry.Do's retries.
func TestBudgetsUseTheBucket(t *testing.T) {
	t.Parallel()
	b, err := retry.NewBudget(4, 0.5)
	require.NoError(t, err)
	assert.True(t, budgets.Allow(b), "a full bucket")
	budgets.Failed(b)
	assert.Equal(t, 3.0, b.Tokens())
	assert.True(t, budgets.Allow(b), "3 tokens of 4")
	budgets.Failed(b)
	assert.Equal(t, 2.0, b.Tokens())
	assert.False(t, budgets.Allow(b), "2 tokens of 4: not above half")
	budgets.Succeeded(b)
	assert.Equal(t, 2.5, b.Tokens())
	assert.True(t, budgets.Allow(b))
}
