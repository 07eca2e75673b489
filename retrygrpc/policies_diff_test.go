package retrygrpc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/status"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retrygrpc"
)

// TestServiceConfigDifferential gives one service config to grpc-go
// (grpc.WithDefaultServiceConfig) and to retryconfig.ParseServiceConfig with
// the interceptor's WithPolicies, and checks that the fake server sees the
// same number of attempts from both, for each status it answers with.
func TestServiceConfigDifferential(t *testing.T) {
	const sc = `{"methodConfig": [
		{"name": [{"service": "grpc.testing.TestService", "method": "UnaryCall"}],
		 "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.01s", "maxBackoff": "0.05s",
		                 "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE", "RESOURCE_EXHAUSTED"]}},
		{"name": [{"service": "grpc.testing.TestService"}],
		 "retryPolicy": {"maxAttempts": 9, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
		                 "backoffMultiplier": 1, "retryableStatusCodes": ["ABORTED"]}}
	]}`
	cfg, err := retryconfig.ParseServiceConfig([]byte(sc))
	require.NoError(t, err)
	for _, tc := range []struct {
		name   string
		script []reply
		empty  bool // call EmptyCall, which only the service's config names
	}{
		{"UNAVAILABLE", []reply{fail(codes.Unavailable)}, false},
		{"RESOURCE_EXHAUSTED", []reply{fail(codes.ResourceExhausted)}, false},
		{"INTERNAL", []reply{fail(codes.Internal)}, false},
		{"ABORTED: the service's codes do not apply to the method", []reply{fail(codes.Aborted)}, false},
		{"DEADLINE_EXCEEDED from the server", []reply{fail(codes.DeadlineExceeded)}, false},
		{"two failures then OK", []reply{fail(codes.Unavailable), fail(codes.ResourceExhausted), {}}, false},
		{"the service's config, maxAttempts capped at 5", []reply{fail(codes.Aborted)}, true},
		{"the service's config, a code it does not list", []reply{fail(codes.Unavailable)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var grpcGo, ours int
			var grpcGoCode, ourCode codes.Code
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(tc.script...)
				c := dial(t, srv, grpc.WithDefaultServiceConfig(sc))
				err := call(t, c, tc.empty)
				grpcGo, grpcGoCode = len(srv.seen()), status.Code(err)
			})
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(tc.script...)
				c := dial(t, srv, grpc.WithDisableRetry(), withRetry(retry.Policy{},
					retrygrpc.WithAllIdempotent(), retrygrpc.WithPolicies(retryconfig.NewLive(cfg))))
				err := call(t, c, tc.empty)
				ours, ourCode = len(srv.seen()), status.Code(err)
			})
			t.Logf("attempts: grpc-go %d, retrygrpc %d", grpcGo, ours)
			assert.Equal(t, grpcGo, ours, "attempts: grpc-go made %d, the interceptor %d", grpcGo, ours)
			assert.Equal(t, grpcGoCode, ourCode)
		})
	}
}

// call makes a UnaryCall, or an EmptyCall if empty.
func call(t *testing.T, c testgrpc.TestServiceClient, empty bool) error {
	if empty {
		_, err := c.EmptyCall(t.Context(), &testgrpc.Empty{})
		return err
	}
	_, err := unary(t.Context(), c, "x")
	return err
}

// TestServiceConfigDifferentialThrottling does the same with
// retryThrottling: over a run of failing calls, grpc-go's throttle and the
// shared Budget refuse the same retries.
func TestServiceConfigDifferentialThrottling(t *testing.T) {
	const sc = `{"methodConfig": [
		{"name": [{"service": "grpc.testing.TestService"}],
		 "retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
		                 "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}],
		"retryThrottling": {"maxTokens": 6, "tokenRatio": 0.5}}`
	cfg, err := retryconfig.ParseServiceConfig([]byte(sc))
	require.NoError(t, err)
	// Three failing calls, a success, two more failing calls.
	script := []reply{fail(codes.Unavailable)}
	perCall := func(t *testing.T, c testgrpc.TestServiceClient, srv *server) []int {
		var seen []int
		for i := range 6 {
			before := len(srv.seen())
			if i == 3 {
				srv.mu.Lock()
				srv.script = []reply{{}}
				srv.mu.Unlock()
			} else if i == 4 {
				srv.mu.Lock()
				srv.script = script
				srv.mu.Unlock()
			}
			_ = call(t, c, false)
			seen = append(seen, len(srv.seen())-before)
		}
		return seen
	}
	var grpcGo, ours []int
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(script...)
		grpcGo = perCall(t, dial(t, srv, grpc.WithDefaultServiceConfig(sc)), srv)
	})
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(script...)
		ours = perCall(t, dial(t, srv, grpc.WithDisableRetry(), withRetry(retry.Policy{},
			retrygrpc.WithAllIdempotent(), retrygrpc.WithPolicies(retryconfig.NewLive(cfg)))), srv)
	})
	t.Logf("attempts per call: grpc-go %v, retrygrpc %v", grpcGo, ours)
	assert.Equal(t, grpcGo, ours)
}

// TestServiceConfigDifferentialHedging gives a hedgingPolicy to both. grpc-go
// parses it but does not hedge (gRFC A6: "Implemented in: ... Go except
// hedging"): it sends one copy, whatever the status. So the number of copies
// the interceptor sends is checked against A6's text instead, in
// TestHedgingFollowsA6; this test pins the difference, so that the day
// grpc-go hedges, it fails and the two can be compared directly.
func TestServiceConfigDifferentialHedging(t *testing.T) {
	const sc = `{"methodConfig": [{"name": [{"service": "grpc.testing.TestService"}],
		"hedgingPolicy": {"maxAttempts": 3, "hedgingDelay": "0.01s", "nonFatalStatusCodes": ["UNAVAILABLE"]}}]}`
	cfg, err := retryconfig.ParseServiceConfig([]byte(sc))
	require.NoError(t, err)
	for _, tc := range []struct {
		code         codes.Code
		grpcGo, ours int
	}{
		{codes.Unavailable, 1, 3}, // non-fatal: every copy goes
		{codes.Internal, 1, 1},    // fatal: the first decides
		{codes.OK, 1, 1},
	} {
		t.Run(tc.code.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(fail(tc.code))
				_ = call(t, dial(t, srv, grpc.WithDefaultServiceConfig(sc)), false)
				assert.Len(t, srv.seen(), tc.grpcGo, "grpc-go")
			})
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(fail(tc.code))
				c := dial(t, srv, grpc.WithDefaultServiceConfig(sc), withRetry(retry.Policy{},
					retrygrpc.WithAllIdempotent(), retrygrpc.WithPolicies(retryconfig.NewLive(cfg))))
				err := call(t, c, false)
				assert.Len(t, srv.seen(), tc.ours, "retrygrpc")
				assert.Equal(t, tc.code, status.Code(err))
			})
		})
	}
}
