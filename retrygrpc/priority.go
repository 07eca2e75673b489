package retrygrpc

import (
	"context"

	"github.com/stormguard/retry/shed"
	"google.golang.org/grpc/metadata"
)

// WithPriority returns a copy of parent whose calls carry p in the
// metadata key "criticality" (the shed.PriorityHeader, as
// shed.Priority.String names p), so that a server behind
// [UnaryServerInterceptor] or [StreamServerInterceptor] sheds them in that
// order under overload: it is retryhttp.WithPriority for gRPC. It needs no
// interceptor on the client, and every attempt of a retried call carries
// it. A value already in parent's outgoing metadata wins; a later
// metadata.NewOutgoingContext replaces it, as it replaces all metadata.
func WithPriority(parent context.Context, p shed.Priority) context.Context {
	if md, ok := metadata.FromOutgoingContext(parent); ok && len(md[priorityKey]) > 0 {
		return parent
	}
	return metadata.AppendToOutgoingContext(parent, priorityKey, p.String())
}
