package retrygrpc_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/internal/loadgen"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stormguard/retry/shed"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
)

// loadService serves UnaryCall with the work behind the Limiter, and
// EmptyCall with the twin's, with no Limiter.
type loadService struct {
	testgrpc.UnimplementedTestServiceServer
	work, twin *loadgen.Server
}

func (s *loadService) UnaryCall(ctx context.Context, _ *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	if !s.work.Raw() {
		if err := s.work.Serve(ctx); err != nil {
			return nil, status.FromContextError(err).Err()
		}
	}
	return &testgrpc.SimpleResponse{}, nil
}

func (s *loadService) EmptyCall(ctx context.Context, _ *testgrpc.Empty) (*testgrpc.Empty, error) {
	if err := s.twin.Serve(ctx); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	return &testgrpc.Empty{}, nil
}

type clientKey struct{}

// The loopback proof over gRPC, as TestLoopbackHTTP (package shed) makes
// it over HTTP: a grpc.Server on bufconn whose handler does 20 calls at
// once, 5 ms each (or more; see loadgen.Prove), behind
// UnaryServerInterceptor and an adaptive Limiter, and 200 clients, each
// with a retrying client interceptor of its own (its own holds, as 200
// processes would have), over one ClientConn. Overloaded about 3 times,
// the server still serves at least 0.9 of its capacity, the calls it
// serves take at most 3 times the unloaded twin's p99, and the handler
// never has more calls inside than the Limiter's limit.
// The timing targets are checked where the machine leaves the Limiter in
// charge, not under the race detector (see loadgen.Check).
func TestLoopbackGRPC(t *testing.T) {
	if testing.Short() {
		t.Skip("real time: about 7 seconds")
	}
	srv := loadgen.NewServer(20, loadgen.MinWork)
	twin := loadgen.NewServer(20, loadgen.MinWork)
	var limited atomic.Pointer[grpc.UnaryServerInterceptor]
	start := func(time.Duration) *shed.Limiter { // the zero Options: no tuning to the work
		l := newShed(t, shed.Options{})
		ic := retrygrpc.UnaryServerInterceptor(l)
		limited.Store(&ic)
		return l
	}
	admit := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if info.FullMethod == emptyMethod || srv.Raw() {
			return h(ctx, req) // the twin, or the transport alone
		}
		return (*limited.Load())(ctx, req, info, h)
	}

	rec, twinRec := &loadgen.Recorder{}, &loadgen.Recorder{}
	timed := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		start := time.Now()
		err := invoker(ctx, method, req, reply, cc, opts...)
		if code := status.Code(err); code == codes.OK || code == codes.Unavailable {
			r := rec
			if method == emptyMethod {
				r = twinRec
			}
			r.Attempt(start, code == codes.OK)
		}
		return err
	}
	// Each client's interceptor keeps its own holds; the dispatcher picks
	// the client's from the ctx, and each attempt goes through timed.
	clients := make([]grpc.UnaryClientInterceptor, loadgen.Clients+srv.Slots()+1)
	for i := range clients {
		clients[i] = retrygrpc.UnaryClientInterceptor(retry.Policy{}, retrygrpc.WithAllIdempotent())
	}
	dispatch := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		attempt := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
			return timed(ctx, method, req, reply, cc, invoker, opts...)
		}
		return clients[ctx.Value(clientKey{}).(int)](ctx, method, req, reply, cc, attempt, opts...)
	}
	cc := dialServe(t, func(s *grpc.Server) { testgrpc.RegisterTestServiceServer(s, &loadService{work: srv, twin: twin}) },
		[]grpc.ServerOption{grpc.ChainUnaryInterceptor(admit)}, nil, grpc.WithChainUnaryInterceptor(dispatch))
	c := testgrpc.NewTestServiceClient(cc)

	r := loadgen.Prove(t.Context(), loadgen.Stack{
		Server: srv, Start: start, Rec: rec,
		Call: func(ctx context.Context, i int) {
			_, _ = c.UnaryCall(context.WithValue(ctx, clientKey{}, i), &testgrpc.SimpleRequest{})
		},
		Twin: twin, TwinRec: twinRec,
		TwinCall: func(ctx context.Context, _ int) {
			_, _ = c.EmptyCall(context.WithValue(ctx, clientKey{}, len(clients)-1), &testgrpc.Empty{})
		},
	})
	loadgen.Check(t, r, srv)
}
