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

// A call that the Policy's Breaker refuses fails with UNAVAILABLE, not
// with the OK of an attempt that was never made, and reaches no server.
func TestBreakerRefusalIsUnavailable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b, err := guard.NewBreaker(guard.BreakerOptions{MinCalls: 1})
		require.NoError(t, err)
		p := fast()
		p.Breaker = b
		srv := newServer(fail(codes.Unavailable))
		c := dial(t, srv, withRetry(p, retrygrpc.WithIdempotent(unaryMethod)))

		_, err = unary(t.Context(), c, "x")
		assert.Equal(t, codes.Unavailable, status.Code(err))
		require.Equal(t, guard.BreakerOpen, b.State())
		sent := len(srv.seen())

		tr, err := unary(t.Context(), c, "x")
		assert.ErrorIs(t, err, retry.ErrBreakerOpen)
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, retry.StopBreakerOpen, tr.Stop())
		assert.Len(t, srv.seen(), sent, "a refused call reaches no server")
	})
}
