package retrygrpc_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// throttling answers UNAVAILABLE with a 2s pushback for its first 2s, and
// OK after; it counts what it saw in that window.
type throttling struct {
	testgrpc.UnimplementedTestServiceServer
	start          time.Time
	during, served atomic.Int32
}

func (s *throttling) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	s.served.Add(1)
	if time.Since(s.start) < 2*time.Second {
		s.during.Add(1)
		_ = grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", "2000"))
		return nil, status.Error(codes.Unavailable, "throttled")
	}
	return &testgrpc.SimpleResponse{}, nil
}

// serveOn serves srv on an in-memory listener and dials it as target, with
// the retrying interceptor; both are closed when the test ends.
func serveOn(t *testing.T, srv testgrpc.TestServiceServer, target string, opts ...retrygrpc.Option) testgrpc.TestServiceClient {
	t.Helper()
	register := func(s *grpc.Server) { testgrpc.RegisterTestServiceServer(s, srv) }
	retrying := withRetry(retry.Policy{MaxAttempts: 5}, append([]retrygrpc.Option{retrygrpc.WithAllIdempotent()}, opts...)...)
	return testgrpc.NewTestServiceClient(dialServeAs(t, target, register, nil, nil, retrying))
}

// 500 calls to a server that pushes back for 2s, one every 4ms: the first
// pushback holds back every new attempt to that target, so the server sees
// a handful of calls in its window instead of hundreds; afterwards all
// complete; a second target served by the same interceptor's options is
// never delayed.
func TestPushbackHoldsBackTheWholeClient(t *testing.T) {
	for _, hold := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			var opts []retrygrpc.Option
			if !hold {
				opts = append(opts, retrygrpc.WithoutHold())
			}
			srv := &throttling{start: time.Now()}
			a := serveOn(t, srv, "passthrough:///a", opts...)
			b := serveOn(t, &throttling{start: time.Now().Add(-time.Hour)}, "passthrough:///b", opts...)
			var wg sync.WaitGroup
			var ok atomic.Int32
			var slowestB time.Duration
			var mu sync.Mutex
			for i := range 500 {
				time.Sleep(4 * time.Millisecond)
				wg.Go(func() {
					if _, err := a.UnaryCall(context.Background(), &testgrpc.SimpleRequest{}); assert.NoError(t, err) {
						ok.Add(1)
					}
				})
				if i%50 == 0 {
					wg.Go(func() {
						start := time.Now()
						_, err := b.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
						assert.NoError(t, err)
						mu.Lock()
						slowestB = max(slowestB, time.Since(start))
						mu.Unlock()
					})
				}
			}
			wg.Wait()
			assert.Equal(t, int32(500), ok.Load())
			assert.Zero(t, slowestB, "the other target is never delayed")
			if hold {
				assert.LessOrEqual(t, srv.during.Load(), int32(24), "a few at most in the window")
			} else {
				assert.GreaterOrEqual(t, srv.during.Load(), int32(490))
			}
			t.Logf("hold %v: the throttled target saw %d calls in its 2s window, %d in all", hold, srv.during.Load(), srv.served.Load())
		})
	}
}

// A call that cannot wait for the hold (its deadline comes first) fails at
// once with ErrTargetHeld and UNAVAILABLE, without reaching the server.
func TestHoldLongerThanTheDeadlineFailsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &throttling{start: time.Now()}
		a := serveOn(t, srv, "passthrough:///a")
		_, err := a.UnaryCall(context.Background(), &testgrpc.SimpleRequest{}, retrygrpc.CallPolicy(retry.Policy{MaxAttempts: 1}))
		require.Error(t, err) // learns of the pushback
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		_, err = a.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		require.ErrorIs(t, err, retrygrpc.ErrTargetHeld)
		assert.Equal(t, codes.Unavailable, status.Code(err))
		assert.Zero(t, time.Since(start))
		assert.Equal(t, int32(1), srv.served.Load())
	})
}

// handled serves UnaryCall with handle, and counts the calls it saw.
type handled struct {
	testgrpc.UnimplementedTestServiceServer
	served atomic.Int32
	handle func(ctx context.Context, req *testgrpc.SimpleRequest) error
}

func (s *handled) UnaryCall(ctx context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	s.served.Add(1)
	if err := s.handle(ctx, req); err != nil {
		return nil, err
	}
	return &testgrpc.SimpleResponse{}, nil
}

// pushBack answers UNAVAILABLE with a pushback of ms.
func pushBack(ctx context.Context, ms string) error {
	_ = grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", ms))
	return status.Error(codes.Unavailable, "throttled")
}

// A hold is weighed against the call's deadline (its ctx and MaxElapsed),
// not against AttemptTimeout: a call whose attempts may take 500ms, and
// which may take 10s in all, waits out a 2s hold and succeeds.
func TestHoldIsWeighedAgainstTheCallsDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &throttling{start: time.Now()}
		a := serveOn(t, srv, "passthrough:///a")
		_, err := a.UnaryCall(context.Background(), &testgrpc.SimpleRequest{}, retrygrpc.CallPolicy(retry.Policy{MaxAttempts: 1}))
		require.Error(t, err) // learns of the 2s pushback
		start := time.Now()
		_, err = a.UnaryCall(context.Background(), &testgrpc.SimpleRequest{},
			retrygrpc.CallPolicy(retry.Policy{MaxAttempts: 3, AttemptTimeout: 500 * time.Millisecond, MaxElapsed: 10 * time.Second}))
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), 2*time.Second, "it waited out the hold")
		assert.Equal(t, int32(2), srv.served.Load(), "the held call went once, when the hold ended")
	})
}

// 200 calls held back by a server that keeps pushing back: when the hold
// ends, a few probes go, their pushback renews the hold, and the others
// wait again, so the server sees a handful of calls, not the queue.
func TestReleasedHoldSendsProbesNotTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var during atomic.Int32
		srv := &handled{handle: func(ctx context.Context, _ *testgrpc.SimpleRequest) error {
			if time.Since(start) < 5*time.Second {
				during.Add(1)
				return pushBack(ctx, "1000")
			}
			return nil
		}}
		a := serveOn(t, srv, "passthrough:///a")
		_, err := a.UnaryCall(context.Background(), &testgrpc.SimpleRequest{}, retrygrpc.CallPolicy(retry.Policy{MaxAttempts: 1}))
		require.Error(t, err) // the hold begins
		var wg sync.WaitGroup
		var ok atomic.Int32
		for range 200 {
			wg.Go(func() {
				_, err := a.UnaryCall(context.Background(), &testgrpc.SimpleRequest{},
					retrygrpc.CallPolicy(retry.Policy{MaxAttempts: 10, MaxElapsed: time.Minute}))
				if assert.NoError(t, err) {
					ok.Add(1)
				}
			})
		}
		wg.Wait()
		assert.Equal(t, int32(200), ok.Load(), "all complete once the server serves")
		assert.LessOrEqual(t, during.Load(), int32(1+5*3+3), "a few probes per hold, not the queue")
		t.Logf("the throttling server saw %d calls in its 5s window", during.Load())
	})
}

// A pushback at or past WithMaxRetryAfter holds the target for
// WithMaxRetryAfter at most: grpc-retry-pushback-ms: 2147483647 (24.8
// days) must not hold it until no call can reach the server to clear it.
func TestPushbackHoldIsCapped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var first atomic.Bool
		srv := &handled{handle: func(ctx context.Context, _ *testgrpc.SimpleRequest) error {
			if first.CompareAndSwap(false, true) {
				return pushBack(ctx, "2147483647")
			}
			return nil
		}}
		a := serveOn(t, srv, "passthrough:///a", retrygrpc.WithMaxRetryAfter(time.Minute))
		_, err := a.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
		require.Error(t, err, "a delay past the cap is not waited for")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		start := time.Now()
		_, err = a.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		require.NoError(t, err, "the hold ended within the cap")
		assert.LessOrEqual(t, time.Since(start), time.Minute)
	})
}

// Only the answer to a call sent after a hold began clears it: a slow call,
// in flight when the server began to push back, comes back OK, and the
// hold stands.
func TestOnlyAnswersSentAfterTheHoldClearIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var throttle atomic.Bool
		srv := &handled{handle: func(ctx context.Context, req *testgrpc.SimpleRequest) error {
			if req.ResponseSize == 1 { // the slow one
				time.Sleep(time.Second)
				return nil
			}
			if throttle.Load() {
				return pushBack(ctx, "10000")
			}
			return nil
		}}
		a := serveOn(t, srv, "passthrough:///a")
		slow := make(chan error, 1)
		go func() {
			_, err := a.UnaryCall(context.Background(), &testgrpc.SimpleRequest{ResponseSize: 1})
			slow <- err
		}()
		synctest.Wait() // the slow call is in the handler
		throttle.Store(true)
		_, err := a.UnaryCall(context.Background(), &testgrpc.SimpleRequest{}, retrygrpc.CallPolicy(retry.Policy{MaxAttempts: 1}))
		require.Error(t, err) // the hold begins
		throttle.Store(false)
		require.NoError(t, <-slow)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, err = a.UnaryCall(ctx, &testgrpc.SimpleRequest{})
		require.ErrorIs(t, err, retrygrpc.ErrTargetHeld, "the slow call's OK did not clear the hold")
	})
}
