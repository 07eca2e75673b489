package retrygrpc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
)

// A grpc-previous-rpc-attempts the caller put in the outgoing metadata goes
// out on the first attempt as the caller made it, and is replaced on
// retries.
func TestPreviousAttemptsReplaced(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(fail(codes.Unavailable), fail(codes.Unavailable), reply{})
		c := dial(t, srv, withRetry(fast(), retrygrpc.WithAllIdempotent()))
		ctx := metadata.AppendToOutgoingContext(t.Context(), "grpc-previous-rpc-attempts", "7", "other", "kept")
		_, err := unary(ctx, c, "x")
		require.NoError(t, err)
		assert.Equal(t, []string{"7", "1", "2"}, srv.previous())
		for _, s := range srv.seen() {
			assert.Len(t, s.previous, 1)
		}
	})
}
