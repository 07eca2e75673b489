package retrygrpc_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// A ratio budget given per target through WithGuards bounds the retries
// of the interceptor's calls to Ratio of their first attempts plus its
// floor, and forgets them after its TTL, on the bubble's clock.
func TestRatioBudgetPerTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Ratio 0.5, and a floor of one retry per 10 s.
		bs, err := guard.NewBudgets(guard.BudgetOptions{Ratio: 0.5, MinPerSecond: 0.1, TTL: 10 * time.Second}, 10)
		require.NoError(t, err)
		srv := newServer(fail(codes.Unavailable))
		c := dialTarget(t, srv, "passthrough:///down",
			withRetry(fast(), retrygrpc.WithIdempotent(unaryMethod), retrygrpc.WithGuards(guard.Keyed{Budgets: bs})))
		b := bs.Get("passthrough:///down")

		attempts := func() int {
			t.Helper()
			tr, err := unary(t.Context(), c, "x")
			require.ErrorIs(t, err, retry.ErrBudgetExhausted)
			assert.Equal(t, codes.Unavailable, status.Code(err))
			return tr.Attempts()
		}
		assert.Equal(t, 2, attempts(), "one first attempt: 0.5 + the floor, one retry")
		assert.Equal(t, 2, attempts(), "two: 1 + the floor, one more")
		assert.Equal(t, 1, attempts(), "three: 1.5 + the floor, none")
		assert.Equal(t, 0.5, b.Tokens())
		assert.Len(t, srv.seen(), 5)

		time.Sleep(10 * time.Second)
		assert.Equal(t, 1.0, b.Tokens(), "after the TTL the window is empty: the floor")
		assert.Equal(t, 2, attempts())
	})
}

// A hedged call counts its first copy and each hedge in a ratio budget
// named in its policy: the copies after the first go while it allows a
// retry, as A6's throttling lets them go while the bucket is over half.
func TestHedgeWithARatioBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := retryconfig.Parse([]byte(`{"budgets": {"r": {"ratio": 1, "minPerSecond": 0.1, "ttl": "10s"}},
			"policies": {"/grpc.testing.TestService/UnaryCall": {"budget": "r",
				"hedging": {"maxAttempts": 4, "hedgingDelay": "0.1s", "nonFatalStatusCodes": ["UNAVAILABLE"]}}}}`))
		require.NoError(t, err)
		srv := newHedgeServer(copyReply{after: time.Second})
		c := dialHedged(t, srv, cfg)
		_, err = callHedged(t.Context(), c)
		require.NoError(t, err)
		// One first copy: ratio 1 and the floor allow two hedges, and the
		// third is refused.
		assert.Len(t, srv.copies(), 3)
		assert.Equal(t, 0.0, cfg.Policy("/grpc.testing.TestService/UnaryCall").Budget.Tokens())
	})
}
