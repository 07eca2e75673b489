package retrygrpc

import (
	"github.com/stormguard/retry"
	"google.golang.org/grpc"
)

// CallPolicy returns a grpc.CallOption that makes one call with p in place
// of the interceptor's Policy: one ClientConn can give a payment one
// attempt and a read four, or give a tenant a Budget of its own. The
// interceptor's Options still apply. grpc-go itself ignores the option, so
// a call without the interceptor behaves as if it were not there.
func CallPolicy(p retry.Policy) grpc.CallOption {
	return &callOption{policy: &p}
}

// CallIdempotent returns a grpc.CallOption that marks one call as safe to
// make more than once, as [WithIdempotent] marks a method: for a method that
// is idempotent only for some requests, such as a create with a
// client-chosen id. grpc-go itself ignores the option.
func CallIdempotent() grpc.CallOption {
	return &callOption{idempotent: true}
}

// callOption carries the per-call settings through grpc's CallOption list.
// EmptyCallOption makes grpc-go pass it along untouched.
type callOption struct {
	grpc.EmptyCallOption
	policy     *retry.Policy
	idempotent bool
}

// callOptions are the per-call settings found in a call's options; the
// last of each wins.
type callOptions struct {
	policy     *retry.Policy
	idempotent bool
}

func callOptionsOf(opts []grpc.CallOption) callOptions {
	var co callOptions
	for _, o := range opts {
		if o, ok := o.(*callOption); ok {
			if o.policy != nil {
				co.policy = o.policy
			}
			co.idempotent = co.idempotent || o.idempotent
		}
	}
	return co
}
