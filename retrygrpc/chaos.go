package retrygrpc

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/stormguard/retry/chaos"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// ChaosUnaryClientInterceptor returns an interceptor that injects faults
// into the unary calls it sends, on the client side, as chaos.Transport
// does for HTTP (see package chaos): the drawn Latency before the call; a
// Status, answered without reaching the server, as the gRPC code that
// gRPC's HTTP-to-gRPC status mapping gives it (429, 502, 503 and 504 are
// UNAVAILABLE, 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404
// UNIMPLEMENTED, 400 INTERNAL, any other UNKNOWN), with the Fault's Header
// as the call's trailer (a "Grpc-Retry-Pushback-Ms" header asks for a
// pushback); an Err, unsent, with its own code if it carries a gRPC status
// (status.Error(codes.ResourceExhausted, …)), else UNAVAILABLE, as a broken
// connection reads; Drop, the call made and its answer lost, as
// UNAVAILABLE. Every error it makes up matches chaos.ErrInjected. Match
// sees a request whose URL.Path is the full method and whose Header is the
// call's outgoing metadata.
//
// Chain it after [UnaryClientInterceptor], so that each attempt is drawn
// for:
//
//	grpc.WithChainUnaryInterceptor(retrygrpc.UnaryClientInterceptor(p), retrygrpc.ChaosUnaryClientInterceptor(faults...))
//
// While no switch of the faults is on, it adds one atomic load to each
// call and allocates nothing.
func ChaosUnaryClientInterceptor(faults ...chaos.Fault) grpc.UnaryClientInterceptor {
	in := chaos.NewInjector(faults...)
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if !in.Active() {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		md, _ := metadata.FromOutgoingContext(ctx)
		d := in.Decide(chaosRequest(method, md))
		if err := d.Wait(ctx); err != nil {
			return status.FromContextError(ctx.Err()).Err()
		}
		switch {
		case d.Drop:
			if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
				return err
			}
			return chaosStatus(codes.Unavailable, d, nil)
		case d.Err != nil:
			return chaosErr(d)
		case d.Status != 0:
			setTrailer(opts, d.Header)
			return chaosStatus(httpCode(d.Status), d, nil)
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// ChaosUnaryServerInterceptor returns an interceptor that injects faults
// into the unary calls a server handles, as chaos.Handler does for HTTP:
// the drawn Latency before the handler (whose call ends with the ctx's
// status if the client leaves meanwhile); a Status, the handler not
// called, as the code [ChaosUnaryClientInterceptor] maps it to, with the
// Fault's Header as the trailer; an Err, the handler not called, as the
// call's status (its own gRPC status, else UNAVAILABLE); Drop, the handler
// called, its side effects done, and its answer thrown away for an
// UNAVAILABLE, as a connection lost before the answer reads to the client.
// Match sees a request whose URL.Path is the full method and whose Header
// is the call's incoming metadata. While no switch of the faults is on, it
// adds one atomic load to each call and allocates nothing.
func ChaosUnaryServerInterceptor(faults ...chaos.Fault) grpc.UnaryServerInterceptor {
	in := chaos.NewInjector(faults...)
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if !in.Active() {
			return handler(ctx, req)
		}
		md, _ := metadata.FromIncomingContext(ctx)
		d := in.Decide(chaosRequest(info.FullMethod, md))
		if err := d.Wait(ctx); err != nil {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		switch {
		case d.Drop:
			if _, err := handler(ctx, req); err != nil {
				return nil, err
			}
			return nil, chaosStatus(codes.Unavailable, d, nil)
		case d.Err != nil:
			return nil, chaosErr(d)
		case d.Status != 0:
			if len(d.Header) > 0 {
				_ = grpc.SetTrailer(ctx, trailerOf(d.Header))
			}
			return nil, chaosStatus(httpCode(d.Status), d, nil)
		}
		return handler(ctx, req)
	}
}

// chaosRequest is what a Fault's Match sees of a gRPC call.
func chaosRequest(method string, md metadata.MD) *http.Request {
	h := make(http.Header, len(md))
	for k, vs := range md {
		h[http.CanonicalHeaderKey(k)] = vs
	}
	return &http.Request{Method: http.MethodPost, URL: &url.URL{Path: method}, Proto: "HTTP/2", ProtoMajor: 2, Header: h}
}

// httpCode maps an HTTP status to a gRPC code as gRPC's own
// http-grpc-status-mapping.md does, for a status that did not come with
// a grpc-status.
func httpCode(s int) codes.Code {
	switch s {
	case http.StatusBadRequest:
		return codes.Internal
	case http.StatusUnauthorized:
		return codes.Unauthenticated
	case http.StatusForbidden:
		return codes.PermissionDenied
	case http.StatusNotFound:
		return codes.Unimplemented
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return codes.Unavailable
	}
	return codes.Unknown
}

// chaosErr is the status error of an Err fault: its own gRPC status, or
// UNAVAILABLE.
func chaosErr(d chaos.Decision) error {
	if _, ok := status.FromError(d.Err); ok {
		return d.Err // d.Err wraps the status, and matches chaos.ErrInjected
	}
	return chaosStatus(codes.Unavailable, d, d.Err)
}

// chaosStatus is an injected error of code c: it matches chaos.ErrInjected,
// and err if not nil.
func chaosStatus(c codes.Code, d chaos.Decision, err error) error {
	if err == nil {
		err = chaos.ErrInjected
	}
	return &injectedStatus{st: status.New(c, "chaos: injected "+d.Fault), err: err}
}

type injectedStatus struct {
	st  *status.Status
	err error // matches chaos.ErrInjected
}

func (e *injectedStatus) Error() string              { return e.st.Err().Error() }
func (e *injectedStatus) GRPCStatus() *status.Status { return e.st }
func (e *injectedStatus) Unwrap() error              { return e.err }

// setTrailer gives an injected status's header to the caller's
// grpc.Trailer call options, as a server's trailer would reach them.
func setTrailer(opts []grpc.CallOption, h http.Header) {
	if len(h) == 0 {
		return
	}
	md := trailerOf(h)
	for _, o := range opts {
		if t, ok := o.(grpc.TrailerCallOption); ok && t.TrailerAddr != nil {
			*t.TrailerAddr = md.Copy()
		}
	}
}

// trailerOf is a header as metadata, whose keys are lower case.
func trailerOf(h http.Header) metadata.MD {
	md := make(metadata.MD, len(h))
	for k, vs := range h {
		md[strings.ToLower(k)] = vs
	}
	return md
}
