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
	"google.golang.org/grpc/status"
)

// Inside an outer retry.Do the interceptors make one attempt per outer
// attempt and leave retrying to the outer loop: attempts add up, they do not
// multiply.
func TestNestedSingleOwner(t *testing.T) {
	outer := retry.Policy{MaxAttempts: 3, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond}
	t.Run("unary", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := newServer(fail(codes.Unavailable))
			c := dial(t, srv, withRetry(fast(), retrygrpc.WithAllIdempotent()))

			var inner retry.Trace
			tr, err := retry.Do(t.Context(), func(ctx context.Context) error {
				var err error
				inner, err = unary(ctx, c, "x")
				return err
			}, outer)
			assert.Len(t, srv.seen(), 3, "3 attempts, not 3 × 4")
			assert.Equal(t, 3, tr.Attempts())
			assert.Equal(t, retry.StopDeferred, inner.Stop())
			assert.Equal(t, 1, inner.Attempts())
			assert.ErrorIs(t, err, retry.ErrExhausted)
			assert.Equal(t, codes.Unavailable, status.Code(err))
		})
	})
	t.Run("server stream", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := newServer(fail(codes.Unavailable))
			c := dial(t, srv, withStreamRetry(fast(), retrygrpc.WithAllIdempotent()))

			tr, err := retry.Do(t.Context(), func(ctx context.Context) error {
				_, err := drain(watch(ctx, t, c, "x"))
				return err
			}, outer)
			assert.Len(t, srv.seen(), 3)
			assert.Equal(t, 3, tr.Attempts())
			assert.Equal(t, codes.Unavailable, status.Code(err))
		})
	})
}

// A failure the interceptor does not retry is not retried by the outer
// loop either; a server's pushback holds for the outer loop's wait.
func TestNestedPermanentAndPushback(t *testing.T) {
	outer := retry.Policy{MaxAttempts: 3, BaseBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Jitter: retry.NoJitter}
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(fail(codes.NotFound))
		c := dial(t, srv, withRetry(fast(), retrygrpc.WithAllIdempotent()))
		tr, err := retry.Do(t.Context(), func(ctx context.Context) error {
			_, err := unary(ctx, c, "x")
			return err
		}, outer)
		assert.Equal(t, 1, tr.Attempts())
		assert.Equal(t, codes.NotFound, status.Code(err))

		srv = newServer(reply{code: codes.Unavailable, pushback: []string{"700"}}, reply{})
		c = dial(t, srv, withRetry(fast(), retrygrpc.WithAllIdempotent()))
		tr, err = retry.Do(t.Context(), func(ctx context.Context) error {
			_, err := unary(ctx, c, "x")
			return err
		}, outer)
		assert.NoError(t, err)
		assert.Equal(t, []time.Duration{701 * time.Millisecond}, tr.Waits(), "the pushback, plus the outer backoff")
	})
}
