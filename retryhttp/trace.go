package retryhttp

import (
	"context"

	"github.com/stormguard/retry"
)

type traceKey struct{}

// WithTrace returns a copy of parent in which the [Transport] stores the
// retry.Trace of the request made with it: RoundTrip writes it to *dst
// before it returns, whatever the outcome. Use one dst per request; when
// http.Client follows redirects, each hop is a request of its own and *dst
// ends with the last hop's Trace.
func WithTrace(parent context.Context, dst *retry.Trace) context.Context {
	return context.WithValue(parent, traceKey{}, dst)
}

func traceSlot(ctx context.Context) *retry.Trace {
	dst, _ := ctx.Value(traceKey{}).(*retry.Trace)
	return dst
}
