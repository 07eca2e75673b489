package retrygrpc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A Budget shared by calls refuses retries once too many attempts have
// failed, and only failures the interceptor would retry are charged.
func TestBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		budget, err := guard.NewBudget(guard.BudgetOptions{MaxTokens: 4, TokenRatio: 1})
		require.NoError(t, err)
		p := fast()
		p.Budget = budget
		srv := newServer(fail(codes.Unavailable))
		c := dial(t, srv,
			withRetry(p, retrygrpc.WithIdempotent(unaryMethod)),
			withStreamRetry(p, retrygrpc.WithIdempotent(outMethod)))

		_, err = c.EmptyCall(t.Context(), nil) // unmarked: one attempt, nothing charged
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.InDelta(t, 4, budget.Tokens(), 1e-9)

		tr, err := unary(t.Context(), c, "x")
		assert.ErrorIs(t, err, retry.ErrBudgetExhausted)
		assert.ErrorIs(t, err, retry.ErrGaveUp)
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, 2, tr.Attempts(), "the second failure leaves half the tokens: no more retries")
		assert.Equal(t, retry.StopBudget, tr.Stop())

		var str retry.Trace
		_, err = drain(watch(retrygrpc.WithTrace(t.Context(), &str), t, c, "x"))
		assert.ErrorIs(t, err, retry.ErrBudgetExhausted, "the stream shares the budget")
		assert.Equal(t, 1, str.Attempts())
	})
}
