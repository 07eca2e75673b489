package retrygrpc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
)

// A panic in a hook of the retry loop reaches the caller of Recv and
// leaves nothing running; the stream then says it was abandoned.
func TestServerStreamPanicInHook(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(fail(codes.Unavailable), reply{messages: 1})
		p := fast()
		p.AttemptTimeout = time.Minute
		p.OnRetry = func(_ context.Context, _ retry.Attempt, _ time.Duration) { panic("hook") }
		c := dial(t, srv, withStreamRetry(p, retrygrpc.WithAllIdempotent()))
		st := watch(t.Context(), t, c, "req")
		assert.PanicsWithValue(t, "hook", func() { _, _ = st.Recv() })
		_, err := st.Recv()
		assert.ErrorContains(t, err, "abandoned")
	})
}
