package retrygrpc_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// dialTarget is dial for a ClientConn whose target is target, so that a
// test can tell two services apart.
func dialTarget(t *testing.T, srv *server, target string, opts ...grpc.DialOption) testgrpc.TestServiceClient {
	t.Helper()
	register := func(s *grpc.Server) { testgrpc.RegisterTestServiceServer(s, srv) }
	return testgrpc.NewTestServiceClient(dialServeAs(t, target, register, nil, nil, opts...))
}

// WithBreakers gives each target its own breaker, on the bubble's fake
// clock: the target that is down fails fast with UNAVAILABLE, an outer
// retry.Do does not retry the refusal, the other target is untouched, and
// the breaker is half-open on time and closes on its probe.
func TestWithBreakersPerTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 2, OpenFor: 10 * time.Second, Probes: 1}, 10)
		require.NoError(t, err)
		opt := withRetry(fast(), retrygrpc.WithIdempotent(unaryMethod), retrygrpc.WithGuards(guard.Keyed{Breakers: bs}))
		downSrv := newServer(fail(codes.Unavailable), fail(codes.Unavailable), fail(codes.Unavailable),
			fail(codes.Unavailable), fail(codes.Unavailable), fail(codes.Unavailable), fail(codes.Unavailable),
			fail(codes.Unavailable), reply{})
		down := dialTarget(t, downSrv, "passthrough:///down", opt)
		up := dialTarget(t, newServer(reply{}), "passthrough:///up", opt)
		for range 2 {
			_, err := unary(t.Context(), down, "x")
			require.Equal(t, codes.Unavailable, status.Code(err))
		}
		br := bs.Get("passthrough:///down")
		require.Equal(t, guard.BreakerOpen, br.State())
		sent := len(downSrv.seen())
		require.Equal(t, 8, sent, "2 calls of 4 attempts")

		outer := 0
		_, err = retry.Do(t.Context(), func(ctx context.Context) error {
			outer++
			_, err := unary(ctx, down, "x")
			return err
		}, fast())
		assert.ErrorIs(t, err, retry.ErrBreakerOpen)
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Equal(t, 1, outer, "the outer Do retried a breaker's refusal")
		assert.Len(t, downSrv.seen(), sent, "a refused call reaches no server")

		_, err = unary(t.Context(), up, "x")
		require.NoError(t, err, "the other target's breaker is its own")
		assert.Equal(t, guard.BreakerClosed, bs.Get("passthrough:///up").State())

		time.Sleep(10 * time.Second)
		assert.Equal(t, guard.BreakerHalfOpen, br.State(), "on time")
		_, err = unary(t.Context(), down, "x")
		require.NoError(t, err)
		assert.Len(t, downSrv.seen(), sent+1, "one probe")
		assert.Equal(t, guard.BreakerClosed, br.State())
	})
}

// WithThrottles sheds the calls to the target that rejects them, and only
// those.
func TestWithThrottlesPerTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts, err := guard.NewThrottles(guard.ThrottleOptions{}, 10)
		require.NoError(t, err)
		p := fast()
		p.MaxAttempts = 1
		opt := withRetry(p, retrygrpc.WithIdempotent(unaryMethod), retrygrpc.WithGuards(guard.Keyed{Throttles: ts}))
		downSrv := newServer(fail(codes.Unavailable))
		down := dialTarget(t, downSrv, "passthrough:///down", opt)
		up := dialTarget(t, newServer(reply{}), "passthrough:///up", opt)
		var downShed, upShed int
		for range 200 {
			if _, err := unary(t.Context(), down, "x"); errors.Is(err, retry.ErrThrottled) {
				downShed++
				assert.Equal(t, codes.Unavailable, status.Code(err))
			}
			if _, err := unary(t.Context(), up, "x"); errors.Is(err, retry.ErrThrottled) {
				upShed++
			}
		}
		assert.Greater(t, downShed, 100)
		assert.Equal(t, 200-downShed, len(downSrv.seen()), "a shed call is not sent")
		assert.Zero(t, upShed)
	})
}

// A call hedged by the service config's hedgingPolicy goes through the
// target's breaker as one call, and a half-open breaker's probe sends no
// hedge: the slow probe's hedgingDelay passes, and no second copy goes.
func TestHedgingPolicyNeverTakesAProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newHedgeServer(
			copyReply{code: codes.Unavailable},
			copyReply{code: codes.Unavailable},
			copyReply{after: time.Second}, // the probe: slow, then OK
		)
		srv.byArrival = true
		bs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 1, OpenFor: 10 * time.Second, Probes: 1}, 10)
		require.NoError(t, err)
		c := dialHedged(t, srv, hedgingConfig(t, 2, "0.1s", []string{"UNAVAILABLE"}, ""),
			retrygrpc.WithAllIdempotent(), retrygrpc.WithGuards(guard.Keyed{Breakers: bs}))
		_, err = callHedged(t.Context(), c)
		require.Equal(t, codes.Unavailable, status.Code(err))
		require.Len(t, srv.copies(), 2)
		var br *guard.Breaker
		for _, b := range bs.All() {
			br = b
		}
		require.NotNil(t, br)
		require.Equal(t, guard.BreakerOpen, br.State(), "the race counted as one failed call")

		_, err = callHedged(t.Context(), c)
		assert.ErrorIs(t, err, retry.ErrBreakerOpen)
		assert.Len(t, srv.copies(), 2, "an open breaker sends no copy")

		time.Sleep(10 * time.Second)
		require.Equal(t, guard.BreakerHalfOpen, br.State())
		_, err = callHedged(t.Context(), c)
		require.NoError(t, err)
		assert.Len(t, srv.copies(), 3, "the probe, and no hedge")
		assert.Equal(t, guard.BreakerClosed, br.State())
	})
}

// A method not marked idempotent is never retried, but its UNAVAILABLEs
// are the service failing: they open its target's breaker.
func TestWithBreakersCountFailuresOfCallsNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bs, err := guard.NewBreakers(guard.BreakerOptions{MinCalls: 2}, 10)
		require.NoError(t, err)
		srv := newServer(fail(codes.Unavailable))
		c := dialTarget(t, srv, "passthrough:///down", withRetry(fast(), retrygrpc.WithGuards(guard.Keyed{Breakers: bs})))
		for range 2 {
			_, err := unary(t.Context(), c, "x")
			require.Equal(t, codes.Unavailable, status.Code(err))
		}
		assert.Len(t, srv.seen(), 2, "one attempt each")
		assert.Equal(t, guard.BreakerOpen, bs.Get("passthrough:///down").State())
		_, err = unary(t.Context(), c, "x")
		assert.ErrorIs(t, err, retry.ErrBreakerOpen)
		assert.Len(t, srv.seen(), 2)
	})
}

// WithGuards' Budgets give each target a retry budget of its own: the
// target that fails spends its own tokens and is refused retries (an
// error matching retry.ErrBudgetExhausted), while the other target's
// budget stays full.
func TestWithGuardsBudgetsPerTarget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bs, err := guard.NewBudgets(guard.BudgetOptions{MaxTokens: 4, TokenRatio: 0.1}, 10)
		require.NoError(t, err)
		opt := withRetry(fast(), retrygrpc.WithIdempotent(unaryMethod), retrygrpc.WithGuards(guard.Keyed{Budgets: bs}))
		fails := make([]reply, 8)
		for i := range fails {
			fails[i] = fail(codes.Unavailable)
		}
		downSrv := newServer(fails...)
		down := dialTarget(t, downSrv, "passthrough:///down", opt)
		up := dialTarget(t, newServer(reply{}), "passthrough:///up", opt)
		_, err = unary(t.Context(), down, "x")
		require.ErrorIs(t, err, retry.ErrBudgetExhausted, "4 tokens: the retry after the second failure is refused")
		assert.Len(t, downSrv.seen(), 2, "two failures spend half the bucket")
		assert.Equal(t, 2.0, bs.Get("passthrough:///down").Tokens())
		_, err = unary(t.Context(), up, "x")
		require.NoError(t, err)
		assert.Equal(t, 4.0, bs.Get("passthrough:///up").Tokens(), "the other target's budget is its own")
	})
}

// RESOURCE_EXHAUSTED is the service saying it is overloaded: it counts
// against the target's Throttle though it is not retried, as HTTP's 429
// does, so a target that rejects every call with it is shed.
func TestResourceExhaustedCountsForTheThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ts, err := guard.NewThrottles(guard.ThrottleOptions{}, 10)
		require.NoError(t, err)
		p := fast()
		p.MaxAttempts = 1
		opt := withRetry(p, retrygrpc.WithIdempotent(unaryMethod), retrygrpc.WithGuards(guard.Keyed{Throttles: ts}))
		srv := newServer(fail(codes.ResourceExhausted))
		c := dialTarget(t, srv, "passthrough:///busy", opt)
		shed := 0
		for range 200 {
			if _, err := unary(t.Context(), c, "x"); errors.Is(err, retry.ErrThrottled) {
				shed++
			}
		}
		assert.Greater(t, shed, 100, "a target rejecting 200 of 200 calls is shed")
		assert.Equal(t, 200-shed, len(srv.seen()))
	})
}
