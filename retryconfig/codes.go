package retryconfig

import (
	"errors"
	"fmt"
)

// grpcNames are the canonical gRPC status code names, indexed by code, as
// google.golang.org/grpc/codes and service configs spell them.
var grpcNames = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED",
	"NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED",
	"FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED",
	"INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED",
}

func grpcCode(name string) (uint32, bool) {
	for i, n := range grpcNames {
		if n == name {
			return uint32(i), true
		}
	}
	return 0, false
}

func errorf(format string, args ...any) error {
	if len(args) == 0 {
		return errors.New(format)
	}
	return fmt.Errorf(format, args...)
}
