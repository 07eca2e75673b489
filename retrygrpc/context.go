package retrygrpc

import (
	"context"

	"github.com/stormguard/retry"
)

type traceKey struct{}

// WithTrace returns a copy of parent in which the interceptors store the
// retry.Trace of the call made with it, whatever its outcome: a unary call
// writes it to *dst before it returns; a stream writes it when it stops
// retrying, which is when it opens for a client-streaming or bidi stream,
// and for a server-streaming one when it commits or fails for good (see
// [StreamClientInterceptor]). Use one dst per call.
func WithTrace(parent context.Context, dst *retry.Trace) context.Context {
	return context.WithValue(parent, traceKey{}, dst)
}

// storeTrace writes t where the call's ctx asks for it, if it does.
func storeTrace(ctx context.Context, t retry.Trace) {
	if dst, _ := ctx.Value(traceKey{}).(*retry.Trace); dst != nil {
		*dst = t
	}
}
