package retryotel_test

import (
	"context"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrydebug"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stormguard/retry/retryotel"
)

// flakyService answers its first UnaryCall UNAVAILABLE and the others OK,
// and every EmptyCall NOT_FOUND, with a secret in the status message.
type flakyService struct {
	testgrpc.UnimplementedTestServiceServer
	mu    sync.Mutex
	calls int
}

func (f *flakyService) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.calls == 1 {
		return nil, status.Error(codes.Unavailable, "try later, "+secret)
	}
	return &testgrpc.SimpleResponse{}, nil
}

func (f *flakyService) EmptyCall(context.Context, *testgrpc.Empty) (*testgrpc.Empty, error) {
	return nil, status.Error(codes.NotFound, "no "+secret)
}

// grpcClient serves svc on an in-memory listener and returns a client whose
// ClientConn has opts; both are closed when the test ends.
func grpcClient(t *testing.T, svc testgrpc.TestServiceServer, opts ...grpc.DialOption) testgrpc.TestServiceClient {
	t.Helper()
	lis := bufconn.Listen(1 << 16)
	srv := grpc.NewServer()
	testgrpc.RegisterTestServiceServer(srv, svc)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(lis)
	}()
	opts = append(opts,
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	cc, err := grpc.NewClient("passthrough:///bufconn", opts...)
	require.NoError(t, err)
	t.Cleanup(func() {
		_ = cc.Close()
		srv.Stop()
		<-served
	})
	return testgrpc.NewTestServiceClient(cc)
}

// One WithOnDone hook feeds a gRPC client's calls to both observers, named
// by method, with their status codes; no status message reaches either.
func TestRecordGRPC(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSink(t)
		rec := retrydebug.NewRecorder(0, 0)
		hook := retrygrpc.WithOnDone(func(ctx context.Context, sum retrygrpc.Summary) {
			s.obs.RecordGRPC(ctx, sum.Method, uint32(sum.Code), sum.Trace)
			rec.RecordGRPC(ctx, sum.Method, uint32(sum.Code), sum.Trace)
		})
		p := retry.Policy{BaseBackoff: time.Millisecond, Jitter: retry.NoJitter}
		c := grpcClient(t, &flakyService{}, grpc.WithChainUnaryInterceptor(retrygrpc.UnaryClientInterceptor(p, retrygrpc.WithAllIdempotent(), hook)))

		_, err := c.UnaryCall(t.Context(), &testgrpc.SimpleRequest{})
		require.NoError(t, err)
		_, err = c.EmptyCall(t.Context(), &testgrpc.Empty{})
		require.Equal(t, codes.NotFound, status.Code(err))

		calls := map[[2]string]float64{}
		for _, p := range points(t, s.metrics(t)[retryotel.CallsName]) {
			calls[[2]string{p.attrs["retry.operation"], p.attrs["retry.outcome"]}] += p.sum
		}
		assert.Equal(t, map[[2]string]float64{
			{"grpc.testing.TestService/UnaryCall", "ok"}:          1,
			{"grpc.testing.TestService/EmptyCall", "not_retried"}: 1,
		}, calls)
		delay := byOutcome(t, s.metrics(t)[retryotel.RetryDelayName])["ok"]
		assert.InDelta(t, 0.001, delay[1], 1e-9, "one wait of 1ms")

		spans := s.spans.Ended()
		require.Len(t, spans, 2)
		assert.Equal(t, "grpc.testing.TestService/UnaryCall", spans[0].Name())
		assert.Equal(t, map[string]string{
			"retry.operation": "grpc.testing.TestService/UnaryCall", "retry.outcome": "ok", "retry.attempts": "2",
			"rpc.system": "grpc", "rpc.service": "grpc.testing.TestService", "rpc.method": "UnaryCall", "rpc.grpc.status_code": "0",
		}, attrs(spans[0].Attributes()))
		assert.Equal(t, "5", attrs(spans[1].Attributes())["rpc.grpc.status_code"])
		for _, sp := range spans {
			assertNoSecret(t, sp)
		}

		ops := rec.Snapshot().Operations
		require.Len(t, ops, 2)
		assert.Equal(t, "grpc.testing.TestService/EmptyCall", ops[0].Name)
		assert.Equal(t, "NOT_FOUND", ops[0].Recent[0].GRPCCode)
		assert.Equal(t, "grpc.testing.TestService/UnaryCall", ops[1].Name)
		assert.EqualValues(t, 2, ops[1].Attempts)
		assert.Equal(t, "OK", ops[1].Recent[0].GRPCCode)
	})
}
