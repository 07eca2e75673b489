package retrygrpc_test

import (
	"context"
	"fmt"

	"github.com/stormguard/retry/chaos"
	"github.com/stormguard/retry/retrygrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// A game day on the client side: chain the chaos interceptor after the
// retrying one, so that each attempt is drawn for. The invoker here stands
// for the ClientConn.
func ExampleChaosUnaryClientInterceptor() {
	sw := chaos.NewSwitch(1)
	intercept := retrygrpc.ChaosUnaryClientInterceptor(chaos.Fault{Switch: sw, Rate: 1, Status: 503})
	// In a program:
	//	grpc.NewClient(target, grpc.WithChainUnaryInterceptor(
	//		retrygrpc.UnaryClientInterceptor(p), intercept))
	invoker := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }

	err := intercept(context.Background(), "/shop.Orders/Create", nil, nil, nil, invoker)
	fmt.Println("off:", status.Code(err))
	sw.On()
	err = intercept(context.Background(), "/shop.Orders/Create", nil, nil, nil, invoker)
	fmt.Println("on:", status.Code(err))
	// Output:
	// off: OK
	// on: Unavailable
}

// A game day on the server side: answers lost after the handler ran.
func ExampleChaosUnaryServerInterceptor() {
	sw := chaos.NewSwitch(1)
	sw.On()
	intercept := retrygrpc.ChaosUnaryServerInterceptor(chaos.Fault{Switch: sw, Rate: 1, Drop: true})
	// In a program: grpc.NewServer(grpc.ChainUnaryInterceptor(intercept))
	made := 0
	handler := func(context.Context, any) (any, error) { made++; return "order 1", nil }

	reply, err := intercept(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: "/shop.Orders/Create"}, handler)
	fmt.Println(reply, status.Code(err), "orders made:", made)
	// Output: <nil> Unavailable orders made: 1
}
