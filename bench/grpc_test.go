package bench_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"

	grpcretry "github.com/grpc-ecosystem/go-grpc-middleware/v2/interceptors/retry"
	"github.com/stormguard/retry/retrygrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// Scenario 6: one logical unary gRPC call per iteration over an in-memory
// connection (bufconn), so that the rows differ by the client's retry
// layer alone. GRPCFirstSuccess answers OK at once; GRPCTwoUnavailable
// answers UNAVAILABLE, UNAVAILABLE, OK, so every row makes three attempts
// with its smallest delay (1ns).
//
// The rows: direct is the plain ClientConn with no retry layer (three plain
// calls on the retry path), the floor; stormguard is retrygrpc's
// UnaryClientInterceptor with the method marked idempotent;
// grpc-middleware is go-grpc-middleware/v2's retry interceptor; serviceconfig
// is grpc-go's own retry, configured by a service config retryPolicy.
// Every retrying row is set to at most 4 attempts on UNAVAILABLE.

const benchMethod = "/grpc.testing.TestService/UnaryCall"

func BenchmarkGRPCFirstSuccess(b *testing.B) { benchGRPC(b, 0) }

func BenchmarkGRPCTwoUnavailable(b *testing.B) { benchGRPC(b, 2) }

// grpcServer answers UnaryCall with UNAVAILABLE to the first `fails` of
// every fails+1 calls, and with OK to the last.
type grpcServer struct {
	testgrpc.UnimplementedTestServiceServer
	fails int64
	calls atomic.Int64
}

func (s *grpcServer) UnaryCall(_ context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	if s.calls.Add(1)%(s.fails+1) != 0 {
		return nil, status.Error(codes.Unavailable, "busy")
	}
	return &testgrpc.SimpleResponse{Payload: req.GetPayload()}, nil
}

// grpcRetryConfig is grpc-go's retry as close to the others as its service
// config allows: backoffs must be positive, and its jitter is ±20%.
const grpcRetryConfig = `{"methodConfig": [{
	"name": [{"service": "grpc.testing.TestService", "method": "UnaryCall"}],
	"retryPolicy": {
		"maxAttempts": 4, "initialBackoff": "0.000000001s", "maxBackoff": "0.000000001s",
		"backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]
	}
}]}`

func benchGRPC(b *testing.B, fails int) {
	rows := []struct {
		name  string
		opts  []grpc.DialOption
		calls int // plain calls per iteration: the direct row retries by hand
	}{
		{"direct", []grpc.DialOption{grpc.WithDisableRetry()}, fails + 1},
		{"stormguard", []grpc.DialOption{
			grpc.WithDisableRetry(),
			grpc.WithChainUnaryInterceptor(retrygrpc.UnaryClientInterceptor(
				ourPolicy(tinyDelay, tinyDelay), retrygrpc.WithIdempotent(benchMethod), retrygrpc.WithGRPCRetryDisabled())),
		}, 1},
		{"grpc-middleware", []grpc.DialOption{
			grpc.WithDisableRetry(),
			grpc.WithChainUnaryInterceptor(grpcretry.UnaryClientInterceptor(
				grpcretry.WithMax(attempts), grpcretry.WithCodes(codes.Unavailable),
				grpcretry.WithBackoff(grpcretry.BackoffExponential(tinyDelay)))),
		}, 1},
		{"serviceconfig", []grpc.DialOption{grpc.WithDefaultServiceConfig(grpcRetryConfig)}, 1},
	}
	ctx := context.Background()
	req := &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: []byte("hello")}}
	for _, row := range rows {
		b.Run(row.name, func(b *testing.B) {
			srv := &grpcServer{fails: int64(fails)}
			client := newGRPCClient(b, srv, row.opts...)
			for b.Loop() {
				var err error
				for range row.calls {
					_, err = client.UnaryCall(ctx, req)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// newGRPCClient serves srv over bufconn and returns a client with opts,
// both closed when b ends. It makes one call first, so that the connection
// is up before the timer starts.
func newGRPCClient(b *testing.B, srv *grpcServer, opts ...grpc.DialOption) testgrpc.TestServiceClient {
	b.Helper()
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer(grpc.WaitForHandlers(true))
	testgrpc.RegisterTestServiceServer(s, srv)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(lis)
	}()
	opts = append(opts,
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	cc, err := grpc.NewClient("passthrough:///bufconn", opts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cc.Close()
		s.Stop()
		<-served
	})
	client := testgrpc.NewTestServiceClient(cc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.EmptyCall(ctx, &testgrpc.Empty{}, grpc.WaitForReady(true)); status.Code(err) != codes.Unimplemented {
		b.Fatalf("warm-up call: %v, want Unimplemented", err)
	}
	return client
}
