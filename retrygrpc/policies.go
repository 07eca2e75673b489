package retrygrpc

import (
	"context"
	"strings"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryconfig"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// WithPolicies takes each call's Policy from live, in place of the Policy
// given to the interceptor: the policy of the full method name
// ("/pkg.Service/Method"), else of its service ("/pkg.Service/"), else
// "default", from the Config current when the call starts, so that a reload
// never changes a call in flight. The policy's retryableStatusCodes, if its
// document lists any, replace the codes of [WithCodes]. A call's own
// [CallPolicy] still wins, and a method is retried only if it is marked
// idempotent, as without WithPolicies.
//
// A Config's hedgingPolicy (see retryconfig.Config.Hedging) is not acted
// on here yet: such a method gets the one attempt of its policy.
func WithPolicies(live *retryconfig.Live) Option {
	return Option{func(c *config) { c.policies = live }}
}

// policyFor is the Policy of a call of method.
func (cfg *config) policyFor(method string) retry.Policy {
	if cfg.policies == nil {
		return cfg.policy
	}
	conf := cfg.policies.Config()
	name := retryconfig.DefaultName
	if _, ok := conf.Lookup(method); ok {
		name = method
	} else if i := strings.LastIndexByte(method, '/'); i > 0 {
		if _, ok := conf.Lookup(method[:i+1]); ok {
			name = method[:i+1]
		}
	}
	p := conf.Policy(name)
	if cs := conf.GRPCCodes(name); cs != nil && p.Classifier == nil {
		var set codeSet
		for _, c := range cs {
			set = set.with(codes.Code(c))
		}
		p.Classifier = set.classify
	}
	return p
}

// classify retries the codes of s, and an attempt that timed out, as the
// interceptor does with the codes of WithCodes.
func (s codeSet) classify(_ context.Context, a retry.Attempt) retry.Decision {
	if _, ok := a.Err.(*timeoutError); ok {
		return retry.Decision{Retry: true, Reason: "attempt timed out"}
	}
	code := status.Code(a.Err)
	return retry.Decision{Retry: s.has(code), Reason: code.String()}
}
