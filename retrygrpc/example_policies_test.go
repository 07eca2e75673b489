package retrygrpc_test

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retrygrpc"
	"google.golang.org/grpc/codes"
)

// The interceptor takes each call's policy from a service config, the one
// grpc-go would read, by method, then service, then default.
func ExampleWithPolicies() {
	cfg, err := retryconfig.ParseServiceConfig([]byte(`{"methodConfig": [{
		"name": [{"service": "grpc.testing.TestService"}],
		"retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.001s", "maxBackoff": "0.001s",
		                "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"]}
	}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	live := retryconfig.NewLive(cfg)
	srv := newServer(fail(codes.Unavailable))
	cc, stop := exampleConn(srv, grpc.WithDisableRetry(), grpc.WithChainUnaryInterceptor(retrygrpc.UnaryClientInterceptor(
		retry.Policy{}, retrygrpc.WithAllIdempotent(), retrygrpc.WithPolicies(live))))
	defer stop()
	client := testgrpc.NewTestServiceClient(cc)

	_, err = client.UnaryCall(context.Background(), &testgrpc.SimpleRequest{})
	fmt.Println(status.Code(err), len(srv.seen()), "attempts")
	// Output: Unavailable 3 attempts
}
