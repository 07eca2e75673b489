package retrygrpc

import (
	"context"

	"google.golang.org/grpc"
)

// fetchMetadata has grpc write each attempt's response header, which
// tells whether the call committed (gRFC A6), and trailer, which carries
// the server's pushback, where the call reads them: to the caller's own
// grpc.Header and grpc.Trailer targets, if it passed them, so that grpc
// copies each only once, else to c. A Header or Trailer CallOption holds
// one pointer, so it goes into the interface without an allocation, and
// the list fits c's own array unless the caller passes many.
func (c *unaryCall) fetchMetadata(opts []grpc.CallOption) {
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			if o.HeaderAddr != nil {
				c.headerAt = o.HeaderAddr
			}
		case grpc.TrailerCallOption:
			if o.TrailerAddr != nil {
				c.trailerAt = o.TrailerAddr
			}
		}
	}
	if c.headerAt != nil && c.trailerAt != nil {
		return
	}
	c.opts = append(c.optsBuf[:0], opts...)
	if c.trailerAt == nil {
		c.trailerAt = &c.trailer
		c.opts = append(c.opts, grpc.Trailer(c.trailerAt))
	}
	if c.headerAt == nil {
		c.headerAt = &c.header
		c.opts = append(c.opts, grpc.Header(c.headerAt))
	}
}

// invoke makes one call of the method with ctx, and notes the header and
// trailer it got, if the call fetches them.
func (c *unaryCall) invoke(ctx context.Context) error {
	if c.headerAt == nil {
		return c.invoker(ctx, c.method, c.req, c.reply, c.cc, c.opts...)
	}
	header, trailer := *c.headerAt, *c.trailerAt // the caller's, before this attempt
	*c.headerAt, *c.trailerAt = nil, nil
	err := c.invoker(ctx, c.method, c.req, c.reply, c.cc, c.opts...)
	c.header, c.trailer = *c.headerAt, *c.trailerAt
	if c.trailer == nil {
		// grpc writes a trailer, empty or not, for every attempt that
		// reached the transport, and the header with it: this one wrote
		// neither, and the caller's targets keep what they had, as they
		// would without the interceptor.
		*c.headerAt, *c.trailerAt = header, trailer
	}
	return err
}
