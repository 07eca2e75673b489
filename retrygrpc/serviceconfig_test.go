package retrygrpc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// serviceConfig gives the method named a grpc-go retryPolicy of 3 attempts
// on UNAVAILABLE (gRFC A6).
func serviceConfig(method string) grpc.DialOption {
	return grpc.WithDefaultServiceConfig(`{"methodConfig": [{
		"name": [{"service": "grpc.testing.TestService", "method": "` + method + `"}],
		"retryPolicy": {
			"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
			"backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]
		}
	}]}`)
}

// grpc-go's service-config retries and the interceptor's never multiply: a
// method that grpc-go retries gets one attempt from the interceptor, unless
// the ClientConn disables grpc-go's retries and says so.
func TestServiceConfigRetry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dial     []grpc.DialOption
		opts     []retrygrpc.Option
		calls    int      // what the server sees
		previous []string // the grpc-previous-rpc-attempts it sees
		attempts int      // what the interceptor's Trace shows
		reason   string
	}{
		{
			name: "grpc-go retries the method", dial: []grpc.DialOption{serviceConfig("UnaryCall")},
			calls: 3, previous: []string{"", "1", "2"}, attempts: 1,
			reason: "Unavailable; left to grpc-go's retryPolicy",
		},
		{
			name: "grpc-go retries another method", dial: []grpc.DialOption{serviceConfig("EmptyCall")},
			calls: 4, previous: []string{"", "1", "2", "3"}, attempts: 4, reason: "Unavailable",
		},
		{
			name:  "grpc-go retries disabled, and the interceptor told",
			dial:  []grpc.DialOption{serviceConfig("UnaryCall"), grpc.WithDisableRetry()},
			opts:  []retrygrpc.Option{retrygrpc.WithGRPCRetryDisabled()},
			calls: 4, previous: []string{"", "1", "2", "3"}, attempts: 4, reason: "Unavailable",
		},
		{
			// The pitfall the package doc warns of: no one retries.
			name:  "grpc-go retries disabled, the interceptor not told",
			dial:  []grpc.DialOption{serviceConfig("UnaryCall"), grpc.WithDisableRetry()},
			calls: 1, previous: []string{""}, attempts: 1,
			reason: "Unavailable; left to grpc-go's retryPolicy",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(fail(codes.Unavailable))
				dialOpts := append(tc.dial, withRetry(fast(), append(tc.opts, retrygrpc.WithAllIdempotent())...))
				c := dial(t, srv, dialOpts...)

				tr, err := unary(t.Context(), c, "x")
				assert.Equal(t, codes.Unavailable, status.Code(err))
				assert.Len(t, srv.seen(), tc.calls)
				assert.Equal(t, tc.previous, srv.previous())
				assert.Equal(t, tc.attempts, tr.Attempts())
				assert.Equal(t, tc.reason, tr.Last().Reason)
				assert.Equal(t, tc.attempts > 1, errorIs(err, retry.ErrExhausted))
			})
		})
	}
}

// WithGRPCRetryDisabled on a ClientConn whose grpc-go retries are on
// multiplies the attempts, as its doc warns: 3 × 4.
func TestServiceConfigRetryMultipliedWhenMisconfigured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newServer(fail(codes.Unavailable))
		c := dial(t, srv, serviceConfig("UnaryCall"),
			withRetry(fast(), retrygrpc.WithAllIdempotent(), retrygrpc.WithGRPCRetryDisabled()))
		tr, _ := unary(t.Context(), c, "x")
		assert.Equal(t, 4, tr.Attempts())
		assert.Len(t, srv.seen(), 12)
	})
}
