package retrygrpc_test

import (
	"errors"
	"io"
	"slices"
	"strconv"
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

// step is one call of a throttling scenario: which method, and how the
// server answers each of its attempts.
type step struct {
	method string // "unary", "empty" or "out" (a server stream)
	reply  reply
	times  int // the call made this many times; 0 is once
}

// TestServiceConfigDifferentialThrottlingA6 runs each scenario through
// grpc-go's own retries (the service config given to the ClientConn) and
// through the interceptors (the same config read by ParseServiceConfig,
// grpc-go's retries disabled), against the same scripted server, and
// compares the attempts the server sees of each call. grpc-go takes a
// retryThrottling token only where its shouldRetry calls throttle(): a
// trailers-only failure whose code the method's retryPolicy retries, or
// whose pushback is malformed; it gives tokenRatio back for every call of
// any method that ends OK.
func TestServiceConfigDifferentialThrottlingA6(t *testing.T) {
	const throttling = `"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.5}`
	const unaryRetried = `{"name": [{"service": "grpc.testing.TestService", "method": "UnaryCall"}],
		"retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
		                "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}`
	// A call that drains the throttle: 5 attempts and 5 tokens, then,
	// with 5 of 10 left, 1 attempt each.
	drain := step{method: "unary", reply: fail(codes.Unavailable)}
	for _, tc := range []struct {
		name  string
		sc    string
		steps []step
	}{
		{
			// The case: EmptyCall has no retryPolicy, so none of
			// its failures is retryable for it, and it takes no token.
			name:  "a method without retryPolicy takes no token",
			sc:    `{"methodConfig": [` + unaryRetried + `], ` + throttling + `}`,
			steps: []step{{method: "empty", reply: fail(codes.Unavailable), times: 5}, drain, drain},
		},
		{
			name: "a code the method does not retry takes no token",
			sc: `{"methodConfig": [` + unaryRetried + `,
				{"name": [{"service": "grpc.testing.TestService", "method": "EmptyCall"}],
				 "retryPolicy": {"maxAttempts": 2, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
				                 "backoffMultiplier": 1, "retryableStatusCodes": ["ABORTED"]}}], ` + throttling + `}`,
			steps: []step{
				{method: "empty", reply: fail(codes.Unavailable), times: 5},
				{method: "unary", reply: fail(codes.Internal), times: 5},
				drain, drain,
			},
		},
		{
			// The method's timeout ends the call with DEADLINE_EXCEEDED,
			// which its retryPolicy does not list.
			name: "a call cut off by the method's timeout takes no token",
			sc: `{"methodConfig": [{"name": [{"service": "grpc.testing.TestService", "method": "UnaryCall"}],
				"timeout": "0.05s",
				"retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
				                "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}], ` + throttling + `}`,
			steps: []step{{method: "unary", reply: reply{block: true}, times: 5}, drain, drain},
		},
		{
			name: "a call cut off by a timeout of a method without retryPolicy",
			sc: `{"methodConfig": [` + unaryRetried + `,
				{"name": [{"service": "grpc.testing.TestService", "method": "EmptyCall"}], "timeout": "0.05s"}], ` + throttling + `}`,
			steps: []step{{method: "empty", reply: reply{block: true}, times: 5}, drain, drain},
		},
		{
			// Each OK call of any method gives back tokenRatio: 4 of them
			// refill 2 tokens, which allow 2 more attempts.
			name:  "successes refill the bucket",
			sc:    `{"methodConfig": [` + unaryRetried + `], ` + throttling + `}`,
			steps: []step{drain, {method: "empty", times: 4}, drain, {method: "unary", times: 3}, drain},
		},
		{
			name:  "a call that fails then succeeds",
			sc:    `{"methodConfig": [` + unaryRetried + `], ` + throttling + `}`,
			steps: []step{drain, {method: "unary", reply: reply{}, times: 2}, drain},
		},
		{
			// A6: a response header commits the call: no retry, no token.
			name:  "a failure after the response header takes no token",
			sc:    `{"methodConfig": [` + unaryRetried + `], ` + throttling + `}`,
			steps: []step{{method: "unary", reply: reply{code: codes.Unavailable, header: true}, times: 5}, drain},
		},
		{
			// grpc-go counts a pushback that says stop as a failure for
			// throttling, whatever the code and the method's policy.
			name: "a malformed pushback takes a token",
			sc:   `{"methodConfig": [` + unaryRetried + `], ` + throttling + `}`,
			steps: []step{
				{method: "empty", reply: reply{code: codes.Internal, pushback: []string{"-1"}}, times: 2},
				{method: "unary", reply: reply{code: codes.Unavailable, pushback: []string{"-1"}}},
				{method: "out", reply: reply{code: codes.Internal, pushback: []string{"x"}}},
				drain,
			},
		},
		{
			name: "a server stream shares the throttle",
			sc: `{"methodConfig": [` + unaryRetried + `,
				{"name": [{"service": "grpc.testing.TestService", "method": "StreamingOutputCall"}],
				 "retryPolicy": {"maxAttempts": 3, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
				                 "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}], ` + throttling + `}`,
			steps: []step{
				{method: "out", reply: fail(codes.Unavailable), times: 2},
				{method: "out", reply: reply{messages: 1}, times: 2},
				drain,
			},
		},
		{
			// grpc-go's shouldRetry sees DEADLINE_EXCEEDED retryable and
			// takes a token before it finds the call's time gone.
			name: "a timeout when the method retries DEADLINE_EXCEEDED",
			sc: `{"methodConfig": [{"name": [{"service": "grpc.testing.TestService", "method": "UnaryCall"}],
				"timeout": "0.05s",
				"retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
				                "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE", "DEADLINE_EXCEEDED"]}}], ` + throttling + `}`,
			steps: []step{{method: "unary", reply: reply{block: true}, times: 3}, drain, drain},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := retryconfig.ParseServiceConfig([]byte(tc.sc))
			require.NoError(t, err)
			var grpcGo, ours []string
			synctest.Test(t, func(t *testing.T) {
				grpcGo = runSteps(t, tc.steps, grpc.WithDefaultServiceConfig(tc.sc))
			})
			synctest.Test(t, func(t *testing.T) {
				opts := []retrygrpc.Option{retrygrpc.WithAllIdempotent(), retrygrpc.WithPolicies(retryconfig.NewLive(cfg))}
				ours = runSteps(t, tc.steps, grpc.WithDisableRetry(),
					withRetry(retry.Policy{}, opts...), withStreamRetry(retry.Policy{}, opts...))
			})
			t.Logf("attempts:code per call\n grpc-go   %v\n retrygrpc %v", grpcGo, ours)
			assert.Equal(t, grpcGo, ours)
		})
	}
}

// runSteps makes the calls of steps on a fresh server and ClientConn, and
// returns, for each call, the attempts the server saw and the status the
// call ended with.
func runSteps(t *testing.T, steps []step, opts ...grpc.DialOption) []string {
	srv := newServer()
	c := dial(t, srv, opts...)
	var out []string
	for _, s := range steps {
		for range max(s.times, 1) {
			srv.mu.Lock()
			srv.script = []reply{s.reply}
			before := len(srv.calls)
			srv.mu.Unlock()
			var err error
			switch s.method {
			case "unary":
				_, err = unary(t.Context(), c, "x")
			case "empty":
				_, err = c.EmptyCall(t.Context(), &testgrpc.Empty{})
			case "out":
				err = drainStream(t, c)
			}
			out = append(out, status.Code(err).String()+"×"+strconv.Itoa(len(srv.seen())-before))
		}
	}
	return out
}

// drainStream makes a StreamingOutputCall and reads it to its end.
func drainStream(t *testing.T, c testgrpc.TestServiceClient) error {
	st, err := c.StreamingOutputCall(t.Context(), &testgrpc.StreamingOutputCallRequest{})
	if err != nil {
		return err
	}
	for {
		if _, err := st.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// TestServiceConfigDifferentialThrottlingStreamCommit pins the one
// difference left in how the two count a stream for retryThrottling:
// grpc-go gives tokenRatio back when a stream ends OK, the interceptor when
// it commits (its response header came), since its retry loop ends there.
// So a server stream that fails after its header refills the bucket here,
// not in grpc-go: four of them, at 0.5 each, allow one retry more. The day
// the two agree, this fails and the scenario joins the others.
func TestServiceConfigDifferentialThrottlingStreamCommit(t *testing.T) {
	const sc = `{"methodConfig": [{"name": [{"service": "grpc.testing.TestService"}],
		"retryPolicy": {"maxAttempts": 5, "initialBackoff": "0.01s", "maxBackoff": "0.01s",
		                "backoffMultiplier": 1, "retryableStatusCodes": ["UNAVAILABLE"]}}],
		"retryThrottling": {"maxTokens": 10, "tokenRatio": 0.5}}`
	cfg, err := retryconfig.ParseServiceConfig([]byte(sc))
	require.NoError(t, err)
	steps := []step{
		{method: "unary", reply: fail(codes.Unavailable)}, // 5 tokens left
		{method: "out", reply: reply{code: codes.Unavailable, header: true}, times: 4},
		{method: "unary", reply: fail(codes.Unavailable)},
	}
	var grpcGo, ours []string
	synctest.Test(t, func(t *testing.T) {
		grpcGo = runSteps(t, steps, grpc.WithDefaultServiceConfig(sc))
	})
	synctest.Test(t, func(t *testing.T) {
		opts := []retrygrpc.Option{retrygrpc.WithAllIdempotent(), retrygrpc.WithPolicies(retryconfig.NewLive(cfg))}
		ours = runSteps(t, steps, grpc.WithDisableRetry(), withRetry(retry.Policy{}, opts...), withStreamRetry(retry.Policy{}, opts...))
	})
	streams := []string{"Unavailable×1", "Unavailable×1", "Unavailable×1", "Unavailable×1"}
	assert.Equal(t, slices.Concat([]string{"Unavailable×5"}, streams, []string{"Unavailable×1"}), grpcGo, "grpc-go")
	assert.Equal(t, slices.Concat([]string{"Unavailable×5"}, streams, []string{"Unavailable×2"}), ours, "retrygrpc")
}
