package retrygrpc_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/stormguard/retry/retrygrpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// The caller's own grpc.Header and grpc.Trailer targets, which the
// interceptor reads in place of copies of its own, get what they get
// without the interceptor: the last attempt's header and trailer, or, when
// no attempt reached the transport, what they held before. The interceptor
// still reads the commit (gRFC A6) and the pushback from them.
func TestUnaryCallersHeaderAndTrailer(t *testing.T) {
	before := func() (metadata.MD, metadata.MD) { return metadata.Pairs("before", "h"), metadata.Pairs("before", "t") }
	for _, tc := range []struct {
		name     string
		script   []reply
		local    []error // what a lower interceptor returns, by attempt, without calling grpc; nil: it calls grpc
		seen     int
		reasons  []string
		code     codes.Code
		header   metadata.MD
		pushback []string // in the trailer
	}{
		{name: "retried, then OK with a header", script: []reply{fail(codes.Unavailable), {header: true}},
			seen: 2, reasons: []string{"Unavailable", ""}, header: metadata.Pairs("attempt", "header")},
		{name: "pushback that says stop", script: []reply{{code: codes.Unavailable, pushback: []string{"-1"}}},
			seen: 1, reasons: []string{"Unavailable; server pushback says stop"}, code: codes.Unavailable, pushback: []string{"-1"}},
		{name: "committed by the header", script: []reply{{code: codes.Unavailable, header: true}},
			seen: 1, reasons: []string{"Unavailable; call committed: response header received"}, code: codes.Unavailable,
			header: metadata.Pairs("attempt", "header")},
		{name: "the last attempt never reached grpc", script: []reply{{code: codes.Unavailable, pushback: []string{"1"}}},
			local: []error{nil, status.Error(codes.Unavailable, "local")},
			seen:  1, reasons: []string{"Unavailable", "Unavailable"}, code: codes.Unavailable, pushback: []string{"1"}},
		{name: "no attempt reached grpc", local: []error{status.Error(codes.NotFound, "local")},
			reasons: []string{"NotFound"}, code: codes.NotFound, header: metadata.Pairs("before", "h")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newServer(tc.script...)
				attempts := 0
				lower := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
					attempts++
					if attempts <= len(tc.local) && tc.local[attempts-1] != nil {
						return tc.local[attempts-1]
					}
					return invoker(ctx, method, req, reply, cc, opts...)
				}
				p := fast()
				p.MaxAttempts = 2
				c := dial(t, srv, withRetry(p, retrygrpc.WithAllIdempotent()), grpc.WithChainUnaryInterceptor(lower))
				header, trailer := before()
				tr, err := unary(t.Context(), c, "x", grpc.Header(&header), grpc.Trailer(&trailer))

				assert.Equal(t, tc.code, status.Code(err))
				assert.Len(t, srv.seen(), tc.seen)
				assert.Equal(t, tc.reasons, reasons(tr))
				if len(tc.reasons) == 2 && tc.pushback != nil {
					assert.GreaterOrEqual(t, tr.Last().Wait.Milliseconds(), int64(1), "the pushback of the first attempt's trailer")
				}
				delete(header, "content-type") // grpc's own, in every header
				assert.Equal(t, tc.header, header, "the caller's header")
				if tc.seen == 0 {
					_, want := before()
					assert.Equal(t, want, trailer, "the caller's trailer, untouched")
				} else {
					require.NotNil(t, trailer, "a trailer, if only an empty one")
					assert.Equal(t, tc.pushback, trailer.Get("grpc-retry-pushback-ms"))
				}
			})
		})
	}
}
