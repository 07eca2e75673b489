package retrygrpc_test

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/stormguard/retry/retrygrpc"
	"github.com/stormguard/retry/shed"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/test/bufconn"
)

// exampleShedConn serves g in memory behind both server interceptors of l;
// stop closes the server and the client.
func exampleShedConn(l *shed.Limiter, g *gated) (c testgrpc.TestServiceClient, stop func()) {
	lis := bufconn.Listen(1 << 16)
	s := grpc.NewServer(
		grpc.ChainUnaryInterceptor(retrygrpc.UnaryServerInterceptor(l)),
		grpc.ChainStreamInterceptor(retrygrpc.StreamServerInterceptor(l)),
	)
	testgrpc.RegisterTestServiceServer(s, g)
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(lis)
	}()
	cc, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	return testgrpc.NewTestServiceClient(cc), func() {
		cc.Close()
		s.Stop()
		<-served
	}
}

// A server that does one call at a time, with no queue: while a call is in
// its handler, the next is shed with UNAVAILABLE and a pushback, in whole
// seconds, that this package's client interceptors (and grpc-go's own
// retries) wait before they try again.
func ExampleUnaryServerInterceptor() {
	l, err := shed.New(shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: -1})
	if err != nil {
		panic(err)
	}
	entered, release := make(chan struct{}, 1), make(chan struct{})
	c, stop := exampleShedConn(l, &gated{do: block(entered, release)})
	defer stop()

	done := make(chan error)
	go func() {
		_, err := c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
		done <- err
	}()
	<-entered // the first call holds the one slot

	var trailer metadata.MD
	_, err = c.UnaryCall(context.Background(), &testgrpc.SimpleRequest{}, grpc.Trailer(&trailer))
	ms, _ := strconv.Atoi(trailer.Get("grpc-retry-pushback-ms")[0])
	fmt.Println(status.Code(err), ms >= 1000 && ms%1000 == 0)

	close(release)
	fmt.Println(<-done, l.Stats().Shed, "shed")
	// Output:
	// Unavailable true
	// <nil> 1 shed
}

// A stream holds its slot from when it opens until its handler returns.
func ExampleStreamServerInterceptor() {
	l, err := shed.New(shed.Options{Algorithm: shed.Fixed, InitialLimit: 1, MaxQueue: -1})
	if err != nil {
		panic(err)
	}
	c, stop := exampleShedConn(l, &gated{})
	defer stop()

	st, err := c.FullDuplexCall(context.Background())
	if err != nil {
		panic(err)
	}
	_ = st.Send(&testgrpc.StreamingOutputCallRequest{})
	_, _ = st.Recv() // the stream is in its handler
	fmt.Println(l.Stats().InFlight, "in flight")

	_ = st.CloseSend()
	_, err = st.Recv()
	fmt.Println(err)
	// Output:
	// 1 in flight
	// EOF
}

// WithPriority marks the calls made with a ctx, so that a server behind
// UnaryServerInterceptor sheds batch work before a user's.
func ExampleWithPriority() {
	l, err := shed.New(shed.Options{})
	if err != nil {
		panic(err)
	}
	g := &gated{}
	c, stop := exampleShedConn(l, g)
	defer stop()

	ctx := retrygrpc.WithPriority(context.Background(), shed.Sheddable)
	_, err = c.UnaryCall(ctx, &testgrpc.SimpleRequest{})
	fmt.Println(err, g.priorities)
	// Output:
	// <nil> [sheddable]
}
