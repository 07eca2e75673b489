package retrygrpc_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stormguard/retry/shed"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
)

// The loop closes: a real grpc.Server sheds a call with a pushback, and
// the client interceptor, on synctest's fake clock, waits exactly that
// (no jitter here) before its retry. A shed's pushback (marked with the
// trailer load-shed) is that call's wait, not a hold of the target: a call
// made meanwhile is sent at once, as the server refused only its excess
// (a hold would stop all of a shared client's traffic to a server that
// still serves most of it). Both then succeed. Across the seam with the
// client's guards, each shed attempt counts as gRFC A6 says and no more:
// one token off the Budget (an UNAVAILABLE is a retryable status, "a
// failed RPC" for A6's throttling), and none for the Breaker, which hears
// each call once, by how it ended.
func TestShedPushbackReachesTheClientHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newShed(t, shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: -1, MaxRetryAfter: 5 * time.Second})
		entered, release := make(chan struct{}, 4), make(chan struct{})
		g := &gated{do: func(ctx context.Context, body string) error {
			if body != "blocker" {
				return nil
			}
			return block(entered, release)(ctx, body)
		}}
		budgets, err := guard.NewBudgets(guard.BudgetOptions{MaxTokens: 10, TokenRatio: 0.1}, 10)
		require.NoError(t, err)
		// One failure heard among the first calls would open it.
		breakers, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 1, FailureRatio: 0.3}, 10)
		require.NoError(t, err)
		p := retry.Policy{Jitter: noJitter{}, MaxAttempts: 3}
		cc := dialServe(t, func(s *grpc.Server) { testgrpc.RegisterTestServiceServer(s, g) },
			[]grpc.ServerOption{grpc.ChainUnaryInterceptor(retrygrpc.UnaryServerInterceptor(l))}, nil,
			withRetry(p, retrygrpc.WithAllIdempotent(), retrygrpc.WithGuards(guard.Keyed{Budgets: budgets, Breakers: breakers})))
		c := testgrpc.NewTestServiceClient(cc)

		blocker := make(chan error, 1)
		go func() {
			_, err := unary(t.Context(), c, "blocker")
			blocker <- err
		}()
		<-entered

		type result struct {
			tr      retry.Trace
			err     error
			elapsed time.Duration
		}
		shedCall, heldCall := make(chan result, 1), make(chan result, 1)
		start := time.Now()
		go func() {
			tr, err := unary(t.Context(), c, "shed")
			shedCall <- result{tr, err, time.Since(start)}
		}()
		synctest.Wait() // shed, and waiting for its retry
		assert.EqualValues(t, 1, l.Stats().Shed)
		time.Sleep(500 * time.Millisecond)
		go func() {
			begun := time.Now()
			tr, err := unary(t.Context(), c, "other")
			heldCall <- result{tr, err, time.Since(begun)}
		}()
		synctest.Wait()
		assert.EqualValues(t, 2, l.Stats().Shed, "the other call was sent at once, not held, and shed too")
		time.Sleep(500 * time.Millisecond)
		close(release) // the server has room again, before the pushback ends
		require.NoError(t, <-blocker)

		shed := <-shedCall
		require.NoError(t, shed.err)
		waits := shed.tr.Waits()
		require.Len(t, waits, 1, "one retry")
		pushback := waits[0]
		assert.GreaterOrEqual(t, pushback, time.Second, "the client waited the pushback")
		assert.LessOrEqual(t, pushback, 5*time.Second)
		assert.Zero(t, pushback%time.Second, "the shed's whole seconds: %v", pushback)
		assert.Equal(t, pushback, shed.elapsed, "no more than the pushback either")
		assert.Equal(t, []string{"Unavailable", ""}, reasons(shed.tr))

		other := <-heldCall
		require.NoError(t, other.err)
		assert.Equal(t, 2, other.tr.Attempts(), "shed, then its own retry after its own pushback")
		assert.Equal(t, int32(3), g.reached.Load(), "blocker, and the two retries")
		assert.EqualValues(t, 2, l.Stats().Shed, "nothing else was shed")

		target := cc.Target()
		assert.InDelta(t, 10-2+0.3, budgets.Get(target).Tokens(), 1e-9,
			"A6: each shed attempt took one token; three successes gave 0.1 each")
		assert.Equal(t, guard.BreakerClosed, breakers.Get(target).State(), "three calls, all ended OK")
	})
}
