package retrygrpc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
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
	}{
		{"UNAVAILABLE", []reply{fail(codes.Unavailable)}},
		{"RESOURCE_EXHAUSTED", []reply{fail(codes.ResourceExhausted)}},
		{"INTERNAL", []reply{fail(codes.Internal)}},
		{"ABORTED: the service's codes do not apply to the method", []reply{fail(codes.Aborted)}},
		{"DEADLINE_EXCEEDED from the server", []reply{fail(codes.DeadlineExceeded)}},
		{"two failures then OK", []reply{fail(codes.Unavailable), fail(codes.ResourceExhausted), {}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var grpcGo, ours int
			var grpcGoCode, ourCode codes.Code
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(tc.script...)
				c := dial(t, srv, grpc.WithDefaultServiceConfig(sc))
				_, err := unary(t.Context(), c, "x")
				grpcGo, grpcGoCode = len(srv.seen()), status.Code(err)
			})
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(tc.script...)
				c := dial(t, srv, grpc.WithDisableRetry(), withRetry(retry.Policy{},
					retrygrpc.WithAllIdempotent(), retrygrpc.WithPolicies(retryconfig.NewLive(cfg))))
				_, err := unary(t.Context(), c, "x")
				ours, ourCode = len(srv.seen()), status.Code(err)
			})
			t.Logf("attempts: grpc-go %d, retrygrpc %d", grpcGo, ours)
			assert.Equal(t, grpcGo, ours, "attempts: grpc-go made %d, the interceptor %d", grpcGo, ours)
			assert.Equal(t, grpcGoCode, ourCode)
		})
	}
}
