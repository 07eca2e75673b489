package retrydebug

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/stormguard/retry"
)

// RecordGRPC records a gRPC call that ended with status code code and Trace
// t, under its full method ("/pkg.Service/Method", shown without the
// leading slash, as the OpenTelemetry RPC conventions name it). It takes
// the parts of a retrygrpc.Summary, so that this package, in the core
// module, does not depend on grpc; wire it with retrygrpc.WithOnDone:
//
//	retrygrpc.WithOnDone(func(ctx context.Context, s retrygrpc.Summary) {
//		rec.RecordGRPC(ctx, s.Method, uint32(s.Code), s.Trace)
//	})
//
// The methods of a client are those of its services, so the names are
// bounded; past the Recorder's cap, they share the overflow bucket like any
// other. Only the method, the code and the Trace are kept.
func (r *Recorder) RecordGRPC(_ context.Context, method string, code uint32, t retry.Trace) {
	name := strings.TrimPrefix(method, "/")
	r.operation(name).record(name, &t, answer{grpc: true, code: code}, time.Now())
}

// grpcCodes are the names of the gRPC status codes, by number, as the gRPC
// status code document spells them.
var grpcCodes = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

// grpcCode returns the name of a's gRPC code, or "" if it has none.
func (a answer) grpcCode() string {
	switch {
	case !a.grpc:
		return ""
	case int(a.code) < len(grpcCodes):
		return grpcCodes[a.code]
	}
	return "CODE(" + strconv.FormatUint(uint64(a.code), 10) + ")"
}
