package retrygrpc_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/chaos"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

func switchedOn(seed int64) *chaos.Switch {
	sw := chaos.NewSwitch(seed)
	sw.On()
	return sw
}

// withChaos chains the chaos interceptor after the retrying one, so that
// each attempt is drawn for.
func withChaos(p retry.Policy, faults ...chaos.Fault) grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(
		retrygrpc.UnaryClientInterceptor(p, retrygrpc.WithAllIdempotent()),
		retrygrpc.ChaosUnaryClientInterceptor(faults...),
	)
}

func chaosCall(c testgrpc.TestServiceClient) error {
	_, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{Payload: &testgrpc.Payload{Body: []byte("x")}})
	return err
}

// A 503 is answered as UNAVAILABLE without reaching the server, and each
// attempt is drawn for: retried until the attempts run out.
func TestChaosClientStatus(t *testing.T) {
	t.Parallel()
	srv := newServer()
	sw := switchedOn(1)
	c := dial(t, srv, withChaos(fast(), chaos.Fault{Switch: sw, Rate: 1, Status: http.StatusServiceUnavailable}))
	err := chaosCall(c)
	require.ErrorIs(t, err, chaos.ErrInjected)
	require.ErrorIs(t, err, retry.ErrExhausted)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Empty(t, srv.seen(), "calls that reached the server")
	assert.Equal(t, []chaos.FaultStats{{Name: "503", Requests: 4, Injected: 4}}, sw.Stats().Faults)
}

// The Header of an injected status reaches the retrying interceptor as a
// trailer: a negative pushback stops the retries after one attempt.
func TestChaosClientTrailer(t *testing.T) {
	t.Parallel()
	sw := switchedOn(1)
	c := dial(t, newServer(), withChaos(fast(), chaos.Fault{Switch: sw, Rate: 1, Status: 503, Header: http.Header{"Grpc-Retry-Pushback-Ms": {"-1"}}}))
	err := chaosCall(c)
	require.ErrorIs(t, err, chaos.ErrInjected)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Equal(t, uint64(1), sw.Stats().Faults[0].Requests, "attempts")
}

// An Err keeps its own gRPC code; another error reads as UNAVAILABLE.
func TestChaosClientErr(t *testing.T) {
	t.Parallel()
	reset := errors.New("connection reset")
	for _, tc := range []struct {
		err  error
		code codes.Code
	}{
		{status.Error(codes.ResourceExhausted, "quota"), codes.ResourceExhausted},
		{reset, codes.Unavailable},
	} {
		srv := newServer()
		c := dial(t, srv, withChaos(retry.Policy{MaxAttempts: 1}, chaos.Fault{Switch: switchedOn(1), Rate: 1, Err: tc.err}))
		err := chaosCall(c)
		require.ErrorIs(t, err, chaos.ErrInjected)
		require.ErrorIs(t, err, tc.err)
		assert.Equal(t, tc.code, status.Code(err), "%v", tc.err)
		assert.Empty(t, srv.seen())
	}
}

// Drop on the client makes the call and loses its answer.
func TestChaosClientDrop(t *testing.T) {
	t.Parallel()
	srv := newServer()
	c := dial(t, srv, withChaos(retry.Policy{MaxAttempts: 1}, chaos.Fault{Switch: switchedOn(1), Rate: 1, Drop: true}))
	err := chaosCall(c)
	require.ErrorIs(t, err, chaos.ErrInjected)
	assert.Equal(t, codes.Unavailable, status.Code(err))
	assert.Len(t, srv.seen(), 1, "calls the server carried out")
}

// Drop on the server runs the handler and loses its answer; the client,
// retrying, gets the answer of its second attempt.
func TestChaosServerDrop(t *testing.T) {
	t.Parallel()
	srv := newServer()
	sw := switchedOn(1)
	first := true // the server's calls come one at a time here
	drop := chaos.Fault{Switch: sw, Rate: 1, Drop: true, Match: func(*http.Request) bool { defer func() { first = false }(); return first }}
	cc := dialWith(t, srv, []grpc.ServerOption{grpc.ChainUnaryInterceptor(retrygrpc.ChaosUnaryServerInterceptor(drop))}, nil,
		withRetry(fast(), retrygrpc.WithAllIdempotent()))
	c := testgrpc.NewTestServiceClient(cc)
	require.NoError(t, chaosCall(c))
	assert.Len(t, srv.seen(), 2, "calls the handler carried out: the dropped one and its retry")
	assert.Equal(t, []chaos.FaultStats{{Name: "drop", Requests: 1, Injected: 1}}, sw.Stats().Faults)
}

// The server's faults, and what Match sees of a call: its full method and
// its metadata.
func TestChaosServerStatusAndMatch(t *testing.T) {
	t.Parallel()
	srv := newServer()
	sw := switchedOn(1)
	var seenPath, seenMD string
	f := chaos.Fault{Switch: sw, Rate: 1, Status: 429, Header: http.Header{"Grpc-Retry-Pushback-Ms": {"-1"}}, Match: func(r *http.Request) bool {
		seenPath, seenMD = r.URL.Path, r.Header.Get("Tenant")
		return r.URL.Path == unaryMethod
	}}
	cc := dialWith(t, srv, []grpc.ServerOption{grpc.ChainUnaryInterceptor(retrygrpc.ChaosUnaryServerInterceptor(f))}, nil,
		withRetry(fast(), retrygrpc.WithAllIdempotent()))
	c := testgrpc.NewTestServiceClient(cc)
	ctx := metadata.AppendToOutgoingContext(context.Background(), "tenant", "t1")
	_, err := c.UnaryCall(ctx, &testgrpc.SimpleRequest{})
	assert.Equal(t, codes.Unavailable, status.Code(err), "429 reads as UNAVAILABLE")
	assert.Equal(t, unaryMethod, seenPath)
	assert.Equal(t, "t1", seenMD)
	assert.Empty(t, srv.seen(), "the handler ran")
	assert.Equal(t, uint64(1), sw.Stats().Faults[0].Injected, "the pushback in the trailer stopped the retries")

	_, err = c.EmptyCall(ctx, &testgrpc.Empty{})
	require.NoError(t, err, "a method Match leaves alone")
}

// An Err on the server is the call's status; the handler does not run.
func TestChaosServerErr(t *testing.T) {
	t.Parallel()
	srv := newServer()
	f := chaos.Fault{Switch: switchedOn(1), Rate: 1, Err: status.Error(codes.ResourceExhausted, "quota")}
	cc := dialWith(t, srv, []grpc.ServerOption{grpc.ChainUnaryInterceptor(retrygrpc.ChaosUnaryServerInterceptor(f))}, nil)
	err := chaosCall(testgrpc.NewTestServiceClient(cc))
	assert.Equal(t, codes.ResourceExhausted, status.Code(err))
	assert.Empty(t, srv.seen())
}

// Latency comes before the handler; a caller that leaves meanwhile gets
// its ctx's status, and the handler does not run.
func TestChaosServerLatency(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		intercept := retrygrpc.ChaosUnaryServerInterceptor(chaos.Fault{Switch: switchedOn(1), Rate: 1, Latency: time.Second})
		ran := 0
		handler := func(context.Context, any) (any, error) { ran++; return "ok", nil }
		info := &grpc.UnaryServerInfo{FullMethod: unaryMethod}
		start := time.Now()
		got, err := intercept(context.Background(), nil, info, handler)
		require.NoError(t, err)
		assert.Equal(t, "ok", got)
		assert.Equal(t, time.Second, time.Since(start))

		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err = intercept(ctx, nil, info, handler)
		assert.Equal(t, codes.DeadlineExceeded, status.Code(err))
		assert.Equal(t, 1, ran)
	})
}

// With the switch off, both interceptors pass every call.
func TestChaosOff(t *testing.T) {
	t.Parallel()
	srv := newServer()
	sw := chaos.NewSwitch(1)
	f := chaos.Fault{Switch: sw, Rate: 1, Status: 503}
	cc := dialWith(t, srv, []grpc.ServerOption{grpc.ChainUnaryInterceptor(retrygrpc.ChaosUnaryServerInterceptor(f))}, nil,
		withChaos(retry.Policy{MaxAttempts: 1}, f))
	c := testgrpc.NewTestServiceClient(cc)
	for range 5 {
		require.NoError(t, chaosCall(c))
	}
	assert.Len(t, srv.seen(), 5)
	assert.Equal(t, []chaos.FaultStats{{Name: "503"}}, sw.Stats().Faults)
}

// The fast path of a switch that is off: one atomic load, no allocation.
func TestChaosOffAllocs(t *testing.T) {
	sw := chaos.NewSwitch(1)
	f := chaos.Fault{Switch: sw, Rate: 1, Status: 503}
	client := retrygrpc.ChaosUnaryClientInterceptor(f)
	server := retrygrpc.ChaosUnaryServerInterceptor(f)
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	handler := func(context.Context, any) (any, error) { return nil, nil }
	info := &grpc.UnaryServerInfo{FullMethod: unaryMethod}
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		_ = client(ctx, unaryMethod, nil, nil, nil, invoker)
		_, _ = server(ctx, nil, info, handler)
	})
	assert.Zero(t, allocs)
}
