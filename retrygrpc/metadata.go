package retrygrpc

import (
	"context"
	"strconv"

	"google.golang.org/grpc/metadata"
)

// previousAttemptsKey tells the server how many attempts of this call came
// before this one: absent on the first, "1" on the second, and so on (gRFC
// A6, "Exposed Retry Metadata"). grpc-go sends it for its own retries only.
const previousAttemptsKey = "grpc-previous-rpc-attempts"

// withAttemptHeader returns ctx with outgoing metadata that says attempt n
// is under way. On a retry, a value already in ctx, as a proxy that
// forwards its incoming metadata would leave, is replaced, since it counts
// someone else's attempts. The first attempt is sent as the caller made it,
// at no cost: grpc offers no way to look for a key without copying all the
// outgoing metadata.
func withAttemptHeader(ctx context.Context, n int) context.Context {
	if n <= 1 {
		return ctx
	}
	md, ok := metadata.FromOutgoingContext(ctx) // a copy: ours to change
	if !ok {
		md = make(metadata.MD, 1)
	}
	md[previousAttemptsKey] = []string{strconv.Itoa(n - 1)}
	return metadata.NewOutgoingContext(ctx, md)
}
