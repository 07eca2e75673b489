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
// A unary method whose policy has a hedgingPolicy (retryconfig.Hedging,
// from a gRPC service config) is hedged as gRFC A6 says: up to maxAttempts
// copies, one each hedgingDelay (all at once for a delay of 0) while none
// has answered; the first OK or fatal status (one not in
// nonFatalStatusCodes) decides the call and the other copies are
// cancelled; a non-fatal status sends the next copy at once; a pushback
// that says stop, or asks for [WithMaxRetryAfter] or more, sends no more,
// and one that says wait n ms sends the next n ms later and holds the
// target back (see [WithoutHold]), whose hold the first copy waits for as
// any first attempt does; a Budget (retryThrottling) lets a copy after the first go only
// while it allows a retry (a token bucket over half full), and counts each
// copy: its outcome for a token bucket, each copy sent for a ratio budget.
// Each copy carries grpc-previous-rpc-attempts, and gets the whole call's
// MaxElapsed and deadline. The call returns once every copy has answered or
// been cancelled. The header, trailer and peer that the caller asks for
// (grpc.Header, grpc.Trailer, grpc.Peer) are the deciding copy's. Its Trace
// and Summary record the race as one attempt, whose Reason counts the
// copies. Hedging, like retrying, needs the method marked idempotent; a
// call with its own CallPolicy, a method that grpc-go retries itself and a
// reply that is not a protobuf message get one attempt instead.
//
// A server-streaming method with a hedgingPolicy is hedged by
// [StreamClientInterceptor] by the same rules, in its first RecvMsg or
// Header: each copy opens a stream and sends it the request message, and
// the first copy to commit (its response header comes, or it ends with OK)
// wins and is the caller's stream, the others cancelled; after that,
// nothing is sent again. Client-streaming and bidi streams are not hedged:
// the interceptor keeps no copy of what the caller streams, so they make
// one attempt.
func WithPolicies(live *retryconfig.Live) Option {
	return Option{func(c *config) { c.policies = live }}
}

// policyAndHedging is the Policy of a call of method, and its hedging, if
// it has one, from one Config, so that an update cannot come between them.
func (cfg *config) policyAndHedging(method string) (retry.Policy, retryconfig.Hedging, bool) {
	if cfg.policies == nil {
		return cfg.policy, retryconfig.Hedging{}, false
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
	h, hedged := conf.Hedging(name)
	return p, h, hedged
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
