package retrygrpc_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retrygrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// exampleConn serves srv in memory and dials it with opts; stop closes
// both.
func exampleConn(srv *server, opts ...grpc.DialOption) (cc *grpc.ClientConn, stop func()) {
	lis := bufconn.Listen(1 << 16)
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
		panic(err)
	}
	return cc, func() {
		cc.Close()
		s.Stop()
		<-served
	}
}

// A read is marked idempotent, so the interceptor retries it through two
// UNAVAILABLE; the status of a call that fails for good is the server's.
func ExampleUnaryClientInterceptor() {
	srv := newServer(fail(codes.Unavailable), fail(codes.Unavailable), reply{}, fail(codes.NotFound))
	cc, stop := exampleConn(srv, grpc.WithChainUnaryInterceptor(retrygrpc.UnaryClientInterceptor(
		retry.Policy{BaseBackoff: time.Millisecond}, // short waits, for the example
		retrygrpc.WithIdempotent("/grpc.testing.TestService/UnaryCall"),
	)))
	defer stop()
	client := testgrpc.NewTestServiceClient(cc)

	resp, err := client.UnaryCall(context.Background(), &testgrpc.SimpleRequest{Payload: payload("hello")})
	fmt.Println(string(resp.GetPayload().GetBody()), err, len(srv.seen()), "attempts")

	_, err = client.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	fmt.Println(status.Code(err))
	// Output:
	// hello <nil> 3 attempts
	// NotFound
}

// A server stream is retried until its first message arrives.
func ExampleStreamClientInterceptor() {
	srv := newServer(fail(codes.Unavailable), reply{messages: 3})
	cc, stop := exampleConn(srv, grpc.WithChainStreamInterceptor(retrygrpc.StreamClientInterceptor(
		retry.Policy{BaseBackoff: time.Millisecond},
		retrygrpc.WithIdempotent("/grpc.testing.TestService/StreamingOutputCall"),
	)))
	defer stop()
	client := testgrpc.NewTestServiceClient(cc)

	stream, err := client.StreamingOutputCall(context.Background(), &testgrpc.StreamingOutputCallRequest{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for {
		m, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Print(string(m.GetPayload().GetBody()))
	}
	fmt.Println(",", len(srv.seen()), "attempts")
	// Output:
	// abc, 2 attempts
}

// WithTrace hands back what the interceptor did for one call; the error
// of a call that ran out of attempts has both the status and the reason.
func ExampleWithTrace() {
	srv := newServer(fail(codes.Unavailable))
	cc, stop := exampleConn(srv, grpc.WithChainUnaryInterceptor(retrygrpc.UnaryClientInterceptor(
		retry.Policy{BaseBackoff: time.Millisecond, MaxAttempts: 3},
		retrygrpc.WithAllIdempotent(),
	)))
	defer stop()
	client := testgrpc.NewTestServiceClient(cc)

	var trace retry.Trace
	_, err := client.UnaryCall(retrygrpc.WithTrace(context.Background(), &trace), &testgrpc.SimpleRequest{})
	fmt.Println(trace.Attempts(), trace.Stop())
	fmt.Println(status.Code(err), errors.Is(err, retry.ErrExhausted))
	// Output:
	// 3 attempts exhausted
	// Unavailable true
}

// CallIdempotent marks one call of a method that is not always safe to
// repeat; CallPolicy gives one call a Policy of its own.
func ExampleCallIdempotent() {
	srv := newServer(fail(codes.Unavailable))
	cc, stop := exampleConn(srv, grpc.WithChainUnaryInterceptor(retrygrpc.UnaryClientInterceptor(
		retry.Policy{BaseBackoff: time.Millisecond},
	)))
	defer stop()
	client := testgrpc.NewTestServiceClient(cc)

	_, _ = client.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	fmt.Println("unmarked:", len(srv.seen()), "attempt")

	_, _ = client.UnaryCall(context.Background(), &testgrpc.SimpleRequest{},
		retrygrpc.CallIdempotent(),
		retrygrpc.CallPolicy(retry.Policy{BaseBackoff: time.Millisecond, MaxAttempts: 2}))
	fmt.Println("marked:", len(srv.seen())-1, "attempts")
	// Output:
	// unmarked: 1 attempt
	// marked: 2 attempts
}

// WithGuards gives each target a breaker of its own: once a target's
// calls fail, the next fails fast with UNAVAILABLE and reaches no server.
func ExampleWithGuards() {
	breakers, _ := guard.NewBreakers(guard.BreakerOptions{MinCalls: 2}, 100)
	srv := newServer(fail(codes.Unavailable))
	cc, stop := exampleConn(srv, grpc.WithChainUnaryInterceptor(retrygrpc.UnaryClientInterceptor(
		retry.Policy{MaxAttempts: 1}, retrygrpc.WithGuards(guard.Keyed{Breakers: breakers}))))
	defer stop()
	client := testgrpc.NewTestServiceClient(cc)
	for range 2 {
		_, _ = client.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	}
	_, err := client.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	fmt.Println(status.Code(err), errors.Is(err, retry.ErrBreakerOpen), breakers.Get(cc.Target()).State())
	// Output:
	// Unavailable true open
}
