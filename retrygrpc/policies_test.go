package retrygrpc_test

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
	"github.com/stormguard/retry/retrygrpc"
)

// retryPolicy is a methodConfig of a service config that retries code.
func methodConfig(name string, attempts int, code string) string {
	return `{"name": [` + name + `], "retryPolicy": {"maxAttempts": ` + string(rune('0'+attempts)) +
		`, "initialBackoff": "0.001s", "maxBackoff": "0.001s", "backoffMultiplier": 1, "retryableStatusCodes": ["` + code + `"]}}`
}

// WithPolicies looks the full method name up, then its service, then
// "default", and retries the codes the policy lists in place of WithCodes'.
func TestWithPolicies(t *testing.T) {
	const (
		method  = `{"service": "grpc.testing.TestService", "method": "UnaryCall"}`
		service = `{"service": "grpc.testing.TestService"}`
		other   = `{"service": "other.Service"}`
		def     = `{}`
	)
	for _, tc := range []struct {
		name     string
		configs  []string
		code     codes.Code
		attempts int
	}{
		{"method", []string{methodConfig(method, 3, "RESOURCE_EXHAUSTED"), methodConfig(service, 2, "RESOURCE_EXHAUSTED")}, codes.ResourceExhausted, 3},
		{"the method's codes replace the default", []string{methodConfig(method, 3, "RESOURCE_EXHAUSTED")}, codes.Unavailable, 1},
		{"service", []string{methodConfig(service, 2, "UNAVAILABLE"), methodConfig(def, 4, "UNAVAILABLE")}, codes.Unavailable, 2},
		{"default", []string{methodConfig(other, 2, "UNAVAILABLE"), methodConfig(def, 4, "UNAVAILABLE")}, codes.Unavailable, 4},
		{"no match: one attempt, as in grpc-go", []string{methodConfig(other, 2, "UNAVAILABLE")}, codes.Unavailable, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				doc := `{"methodConfig": [`
				for i, c := range tc.configs {
					if i > 0 {
						doc += ","
					}
					doc += c
				}
				cfg, err := retryconfig.ParseServiceConfig([]byte(doc + `]}`))
				require.NoError(t, err)
				srv := newServer(fail(tc.code))
				c := dial(t, srv, withRetry(retry.Policy{MaxAttempts: 9}, retrygrpc.WithAllIdempotent(),
					retrygrpc.WithPolicies(retryconfig.NewLive(cfg))))
				tr, err := unary(t.Context(), c, "x")
				require.Error(t, err)
				assert.Equal(t, tc.attempts, tr.Attempts())
			})
		})
	}
}

// A call takes its policy once, at its start; CallPolicy still wins; the
// service config's retryThrottling is one Budget for every method.
func TestWithPoliciesUpdateAndCallPolicy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := retryconfig.ParseServiceConfig([]byte(`{"methodConfig": [` +
			methodConfig(`{}`, 3, "UNAVAILABLE") + `], "retryThrottling": {"maxTokens": 100, "tokenRatio": 0.1}}`))
		require.NoError(t, err)
		live := retryconfig.NewLive(cfg)
		srv := newServer(fail(codes.Unavailable))
		c := dial(t, srv, withRetry(fast(), retrygrpc.WithAllIdempotent(), retrygrpc.WithPolicies(live)))

		tr, err := unary(t.Context(), c, "x")
		require.Error(t, err)
		assert.Equal(t, 3, tr.Attempts())
		assert.InDelta(t, 97.0, live.Policy("default").Budget.Tokens(), 1e-9, "the shared Budget took a token per failure")

		require.NoError(t, live.Update([]byte(`{"methodConfig": [`+methodConfig(`{}`, 2, "UNAVAILABLE")+`], "retryThrottling": {"maxTokens": 100, "tokenRatio": 0.1}}`)))
		tr, _ = unary(t.Context(), c, "x")
		assert.Equal(t, 2, tr.Attempts(), "the next call takes the new policy")
		assert.InDelta(t, 95.0, live.Policy("default").Budget.Tokens(), 1e-9, "an unchanged retryThrottling keeps its tokens")

		p := fast()
		p.MaxAttempts = 4
		tr, _ = unary(t.Context(), c, "x", retrygrpc.CallPolicy(p))
		assert.Equal(t, 4, tr.Attempts(), "CallPolicy wins")
	})
}

// The stream interceptor takes its policy from WithPolicies too.
func TestWithPoliciesStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg, err := retryconfig.ParseServiceConfig([]byte(`{"methodConfig": [` +
			methodConfig(`{"service": "grpc.testing.TestService", "method": "StreamingOutputCall"}`, 3, "UNAVAILABLE") + `]}`))
		require.NoError(t, err)
		srv := newServer(fail(codes.Unavailable))
		c := dial(t, srv, withStreamRetry(retry.Policy{MaxAttempts: 9}, retrygrpc.WithAllIdempotent(),
			retrygrpc.WithPolicies(retryconfig.NewLive(cfg))))
		_, err = drain(watch(t.Context(), t, c, "x"))
		require.Error(t, err)
		assert.Len(t, srv.seen(), 3)
	})
}
