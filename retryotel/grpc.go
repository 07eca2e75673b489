package retryotel

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"

	"github.com/stormguard/retry"
)

// The span attributes of a gRPC call, from the OpenTelemetry RPC semantic
// conventions.
const (
	rpcSystemKey     = attribute.Key("rpc.system")
	rpcServiceKey    = attribute.Key("rpc.service")
	rpcMethodKey     = attribute.Key("rpc.method")
	grpcStatusKey    = attribute.Key("rpc.grpc.status_code")
	rpcSystemGRPC    = "grpc"
	grpcMethodPrefix = "/"
)

// RecordGRPC records a gRPC call that ended with status code code and Trace
// t. Its operation is the full method without its leading slash
// ("pkg.Service/Method"), as the RPC semantic conventions name a gRPC span;
// the span also carries rpc.system, rpc.service, rpc.method and
// rpc.grpc.status_code. It takes the parts of a retrygrpc.Summary, so that
// this module does not depend on grpc; wire it with retrygrpc.WithOnDone:
//
//	retrygrpc.WithOnDone(func(ctx context.Context, s retrygrpc.Summary) {
//		obs.RecordGRPC(ctx, s.Method, uint32(s.Code), s.Trace)
//	})
//
// The methods of a client are those of its services, so the operations are
// bounded; past the Observer's cap they are "_OTHER" like any other name.
func (o *Observer) RecordGRPC(ctx context.Context, method string, code uint32, t retry.Trace) {
	name := strings.TrimPrefix(method, grpcMethodPrefix)
	o.record(ctx, o.operation(name), &t, callInfo{grpc: true, method: name, code: code})
}

// grpcAttributes returns the RPC attributes of a gRPC call's span.
func (info callInfo) grpcAttributes() []attribute.KeyValue {
	service, method, _ := strings.Cut(info.method, "/")
	return []attribute.KeyValue{
		rpcSystemKey.String(rpcSystemGRPC),
		rpcServiceKey.String(service),
		rpcMethodKey.String(method),
		grpcStatusKey.Int64(int64(info.code)),
	}
}
