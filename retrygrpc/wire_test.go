package retrygrpc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stormguard/retry/retrytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Whatever clock the Policy uses, the deadline a unary attempt sends is the
// time left on that clock, from now on the real one: a fake clock that lies
// behind the real time (here by two hours) must not send a deadline that
// has passed already, and a healthy server answers.
func TestUnaryWireDeadlineOnFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := retrytest.NewAutoClock()
		time.Sleep(2 * time.Hour) // the real time moves on; the fake does not
		srv := newServer(reply{})
		p := retry.Policy{Clock: clk, AttemptTimeout: time.Hour, MaxAttempts: 2}
		c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))

		tr, err := unary(t.Context(), c, "x")
		require.NoError(t, err)
		assert.Equal(t, 1, tr.Attempts())
		seen := srv.seen()
		require.Len(t, seen, 1)
		assert.InDelta(t, float64(time.Hour), float64(seen[0].deadline), float64(time.Second),
			"the server got the time left on the Policy's clock as its deadline")
		assert.Zero(t, clk.Pending(), "every deadline released")
	})
}

// The same holds for MaxElapsed, and the caller's own (real) deadline goes
// on the wire as it is when it comes first.
func TestUnaryWireDeadlineMaxElapsedOnFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := retrytest.NewAutoClock()
		time.Sleep(2 * time.Hour)
		srv := newServer(reply{})
		p := retry.Policy{Clock: clk, MaxElapsed: time.Hour}
		c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()))

		_, err := unary(t.Context(), c, "x")
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		_, err = unary(ctx, c, "y")
		require.NoError(t, err)
		seen := srv.seen()
		require.Len(t, seen, 2)
		assert.InDelta(t, float64(time.Hour), float64(seen[0].deadline), float64(time.Second))
		assert.InDelta(t, float64(time.Minute), float64(seen[1].deadline), float64(time.Second), "the caller's deadline")
	})
}
