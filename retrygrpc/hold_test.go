package retrygrpc_test

import (
	"context"
	"net"
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
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
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
	buf := bufconn.Listen(1 << 16)
	s := grpc.NewServer(grpc.WaitForHandlers(true))
	testgrpc.RegisterTestServiceServer(s, srv)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(buf)
	}()
	cc, err := grpc.NewClient(target,
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return buf.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		withRetry(retry.Policy{MaxAttempts: 5}, append([]retrygrpc.Option{retrygrpc.WithAllIdempotent()}, opts...)...))
	require.NoError(t, err)
	t.Cleanup(func() {
		cc.Close()
		s.Stop()
		<-served
	})
	return testgrpc.NewTestServiceClient(cc)
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
