package retrygrpc_test

import (
	"context"
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

// WithGuards' Limiters give each target its own bulkhead: while the
// target's one slot is taken, a call to it is refused unsent, with
// UNAVAILABLE and an error matching retry.ErrLimited, and a call to
// another target goes.
func TestWithLimitersPerTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ls, err := guard.NewLimiters(guard.LimiterOptions{Max: 1, MaxQueue: -1}, 10)
		require.NoError(t, err)
		opt := withRetry(fast(), retrygrpc.WithGuards(guard.Keyed{Limiters: ls}))
		busySrv := newServer(reply{block: true}, reply{})
		busy := dialTarget(t, busySrv, "passthrough:///busy", opt)
		other := dialTarget(t, newServer(reply{}), "passthrough:///other", opt)

		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		first := make(chan error, 1)
		go func() {
			_, err := unary(ctx, busy, "x")
			first <- err
		}()
		<-busySrv.arrived
		tr, err := unary(t.Context(), busy, "x")
		require.ErrorIs(t, err, retry.ErrLimited)
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, retry.StopLimited, tr.Stop())
		assert.Len(t, busySrv.seen(), 1, "a refused call reached the server")
		assert.Equal(t, 1, ls.Get("passthrough:///busy").Stats().InFlight)

		_, err = unary(t.Context(), other, "x")
		require.NoError(t, err, "the other target's slots are its own")

		cancel()
		assert.Equal(t, codes.Canceled, status.Code(<-first))
		synctest.Wait()
		assert.Equal(t, 0, ls.Get("passthrough:///busy").Stats().InFlight)
		_, err = unary(t.Context(), busy, "x")
		require.NoError(t, err)
	})
}
