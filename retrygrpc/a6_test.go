package retrygrpc_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
)

// Where the interceptor departs from gRFC A6, as its package doc says.
func TestWhereA6Differs(t *testing.T) {
	// A6 caps maxAttempts at 5; the Policy's MaxAttempts is the client's
	// own, and means what it says.
	t.Run("no cap of 5 attempts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := newServer(fail(codes.Unavailable))
			p := fast()
			p.MaxAttempts = 7
			c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))
			tr, err := unary(t.Context(), c, "x")
			require.ErrorIs(t, err, retry.ErrExhausted)
			assert.Equal(t, 7, tr.Attempts())
			assert.Len(t, srv.seen(), 7)
		})
	})
	// A6 retries exactly after a pushback and then restarts the backoff
	// from its initial value; the interceptor adds the backoff to the
	// pushback, and the backoff goes on growing.
	t.Run("backoff after pushback", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := newServer(reply{code: codes.Unavailable, pushback: []string{"500"}}, fail(codes.Unavailable), reply{})
			p := retry.Policy{BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Jitter: retry.NoJitter}
			c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))
			tr, err := unary(t.Context(), c, "x")
			require.NoError(t, err)
			assert.Equal(t, []time.Duration{600 * time.Millisecond, 200 * time.Millisecond}, tr.Waits(),
				"A6 would wait 500ms, then 100ms")
		})
	})
}
