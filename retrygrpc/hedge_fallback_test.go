package retrygrpc_test

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
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

// rawCodec sends and receives a call's messages as the bytes they are: a
// reply of *[]byte is no protobuf message, so the interceptor cannot give
// each hedged copy a reply of its own.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "proto" } // the server's codec reads the bytes

// A method with a hedging policy that the interceptor cannot hedge (a
// client-streaming or bidi stream, a unary reply that is no protobuf
// message) makes one attempt, whatever maxAttempts its policy has, and its
// failure takes no retryThrottling token: no retry policy lists its code.
// grpc-go, which does not hedge, makes one attempt of the same service
// config too. The policy is written in both formats: a service config, and
// this library's, where a "hedging" policy may also set maxAttempts (or
// leave it at the default).
func TestHedgingThatCannotHedgeMakesOneAttempt(t *testing.T) {
	const hedging = `{"maxAttempts": 3, "hedgingDelay": "0.01s", "nonFatalStatusCodes": ["UNAVAILABLE"]}`
	configs := map[string]string{
		"service config": `{"methodConfig": [{"name": [{"service": "grpc.testing.TestService"}], "hedgingPolicy": ` + hedging + `}],
			"retryThrottling": {"maxTokens": 100, "tokenRatio": 0.1}}`,
		"maxAttempts 4": `{"budgets": {"b": {"maxTokens": 100, "tokenRatio": 0.1}},
			"policies": {"/grpc.testing.TestService/": {"maxAttempts": 4, "budget": "b", "hedging": ` + hedging + `}}}`,
		"maxAttempts left out": `{"budgets": {"b": {"maxTokens": 100, "tokenRatio": 0.1}},
			"policies": {"/grpc.testing.TestService/": {"budget": "b", "hedging": ` + hedging + `}}}`,
	}
	calls := map[string]func(t *testing.T, cc *grpc.ClientConn) error{
		"unary, a reply that is no protobuf message": func(t *testing.T, cc *grpc.ClientConn) error {
			req, reply := []byte{}, []byte(nil)
			return cc.Invoke(t.Context(), unaryMethod, &req, &reply, grpc.ForceCodec(rawCodec{}))
		},
		"client stream": func(t *testing.T, cc *grpc.ClientConn) error {
			st, err := testgrpc.NewTestServiceClient(cc).StreamingInputCall(t.Context())
			if err != nil {
				return err
			}
			_, err = st.CloseAndRecv()
			return err
		},
		"bidi stream": func(t *testing.T, cc *grpc.ClientConn) error {
			st, err := testgrpc.NewTestServiceClient(cc).FullDuplexCall(t.Context())
			if err != nil {
				return err
			}
			require.NoError(t, st.CloseSend())
			_, err = st.Recv()
			if err == io.EOF {
				err = nil
			}
			return err
		},
	}
	for cname, doc := range configs {
		parse := retryconfig.Parse
		if cname == "service config" {
			parse = retryconfig.ParseServiceConfig
		}
		for name, call := range calls {
			t.Run(cname+"/"+name, func(t *testing.T) {
				cfg, err := parse([]byte(doc)) // a Budget of its own
				require.NoError(t, err)
				if cname == "service config" {
					synctest.Test(t, func(t *testing.T) {
						srv := newServer(fail(codes.Unavailable))
						err := call(t, dialConn(t, srv, grpc.WithDefaultServiceConfig(doc)))
						assert.Equal(t, codes.Unavailable, status.Code(err))
						assert.Len(t, srv.seen(), 1, "grpc-go")
					})
				}
				synctest.Test(t, func(t *testing.T) {
					srv := newServer(fail(codes.Unavailable))
					live := retryconfig.NewLive(cfg)
					opts := []retrygrpc.Option{retrygrpc.WithAllIdempotent(), retrygrpc.WithPolicies(live)}
					cc := dialConn(t, srv, grpc.WithDisableRetry(),
						withRetry(retry.Policy{}, opts...), withStreamRetry(retry.Policy{}, opts...))
					for range 3 {
						err := call(t, cc)
						assert.Equal(t, codes.Unavailable, status.Code(err))
					}
					assert.Len(t, srv.seen(), 3, "one attempt a call")
					budget := live.Config().Policy("/grpc.testing.TestService/").Budget
					require.NotNil(t, budget)
					assert.Equal(t, 100.0, budget.Tokens(), "no token taken")
				})
			})
		}
	}
}

// A client-streaming or bidi stream whose hedging policy it cannot follow
// is opened once: a stream that cannot open is not opened again.
func TestHedgingThatCannotHedgeOpensOnce(t *testing.T) {
	const doc = `{"policies": {"/grpc.testing.TestService/": {"maxAttempts": 4,
		"hedging": {"maxAttempts": 3, "nonFatalStatusCodes": ["UNAVAILABLE"]}}}}`
	cfg, err := retryconfig.Parse([]byte(doc))
	require.NoError(t, err)
	for _, method := range []string{"client stream", "bidi stream"} {
		t.Run(method, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var opened atomic.Int32
				refuse := func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, grpc.Streamer, ...grpc.CallOption) (grpc.ClientStream, error) {
					opened.Add(1)
					return nil, status.Error(codes.Unavailable, "no stream")
				}
				cc := dialConn(t, newServer(), grpc.WithDisableRetry(),
					withStreamRetry(retry.Policy{}, retrygrpc.WithAllIdempotent(), retrygrpc.WithPolicies(retryconfig.NewLive(cfg))),
					grpc.WithChainStreamInterceptor(refuse))
				c := testgrpc.NewTestServiceClient(cc)
				var err error
				if method == "client stream" {
					_, err = c.StreamingInputCall(t.Context())
				} else {
					_, err = c.FullDuplexCall(t.Context())
				}
				assert.Equal(t, codes.Unavailable, status.Code(err), fmt.Sprint(err))
				assert.EqualValues(t, 1, opened.Load())
			})
		})
	}
}
