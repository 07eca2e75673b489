package retrygrpc_test

import (
	"context"
	"testing"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
)

// echoServer answers UnaryCall with its payload and records nothing, so
// that what it allocates is the same for every call.
type echoServer struct {
	testgrpc.UnimplementedTestServiceServer
}

func (echoServer) UnaryCall(_ context.Context, req *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	return &testgrpc.SimpleResponse{Payload: req.GetPayload()}, nil
}

// A unary call that succeeds at once costs, through the interceptor, what a
// bare grpc-go call costs and a fixed few allocations more. A retried
// method's: the mark of retry.Do's loop on its ctx, the call itself, and
// grpc's copies of the response header (three: a map, its group and the
// content-type value) and of the trailer (an empty map), which grpc makes
// for the grpc.Header and grpc.Trailer options that tell whether the call
// committed (gRFC A6) and what the server's pushback is; grpc offers no
// other way to see them. A caller that passes those options has them read
// instead, and grpc copies each once, as without the interceptor. A method
// that is not retried needs neither.
func TestUnaryFirstSuccessAllocs(t *testing.T) {
	var header, trailer metadata.MD
	own := []grpc.CallOption{grpc.Header(&header), grpc.Trailer(&trailer)}
	for _, tc := range []struct {
		name  string
		opts  []retrygrpc.Option
		call  []grpc.CallOption
		extra float64
	}{
		{"idempotent", []retrygrpc.Option{retrygrpc.WithAllIdempotent()}, nil, 6},
		{"idempotent, the caller's own Header and Trailer", []retrygrpc.Option{retrygrpc.WithAllIdempotent()}, own, 2},
		{"not idempotent", nil, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bare := allocsPerCall(t, tc.call)
			got := allocsPerCall(t, tc.call, withRetry(retry.Policy{}, tc.opts...))
			// The transport's own allocations vary a little with the
			// bytes sent (window updates, pings): the count is rounded.
			assert.InDelta(t, tc.extra, got-bare, 0.5, "allocations per call: %.2f through the interceptor, %.2f bare", got, bare)
		})
	}
}

// allocsPerCall returns how many allocations a UnaryCall with call options
// co that succeeds makes, on average, over a ClientConn with opts to an
// echoServer over bufconn, server included.
func allocsPerCall(t *testing.T, co []grpc.CallOption, opts ...grpc.DialOption) float64 {
	t.Helper()
	c := testgrpc.NewTestServiceClient(dialRaw(t, func(s *grpc.Server) { testgrpc.RegisterTestServiceServer(s, echoServer{}) }, opts...))
	ctx := t.Context()
	req := &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: []byte("hello")}}
	const calls = 400
	var err error
	n := testing.AllocsPerRun(1, func() { // AllocsPerRun runs it once first, to warm up
		for range calls {
			if _, e := c.UnaryCall(ctx, req, co...); e != nil {
				err = e
			}
		}
	})
	require.NoError(t, err)
	return n / calls
}
