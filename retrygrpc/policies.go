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
// A shared Budget (a service config's retryThrottling) is charged as
// grpc-go charges its throttle: a token for each failure whose code the
// method's policy retries, and for a trailers-only failure whose pushback
// says stop, whatever its code; tokenRatio back for each call that
// succeeds. A policy of one attempt (a method without a retryPolicy)
// retries no code, so its failures take no token; the method's timeout
// (MaxElapsed) ending a call is DEADLINE_EXCEEDED, a token only where the
// policy lists that code. A stream gives tokenRatio back when it commits,
// not when it ends OK as in grpc-go.
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
// reply that is not a protobuf message get one attempt instead, whatever
// maxAttempts the policy has beside its hedging.
//
// A server-streaming method with a hedgingPolicy is hedged by
// [StreamClientInterceptor] by the same rules, in its first RecvMsg or
// Header: each copy opens a stream and sends it the request message, and
// the first copy to commit (its response header comes, or it ends with OK)
// wins and is the caller's stream, the others cancelled; after that,
// nothing is sent again. Client-streaming and bidi streams are not hedged:
// the interceptor keeps no copy of what the caller streams, so they make
// one attempt, and one that cannot open is not opened again.
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
	h, hedged := conf.Hedging(name)
	if hedged {
		// A hedged policy's own maxAttempts is not for retries (A6 gives
		// a method a retryPolicy or a hedgingPolicy): a call that cannot
		// be hedged (a client or bidi stream, a reply that is no protobuf
		// message) makes one attempt. The hedged race counts its copies
		// by the hedging's MaxAttempts.
		p.MaxAttempts = 1
	}
	cs := conf.GRPCCodes(name)
	switch {
	case p.Classifier != nil:
	case p.MaxAttempts == 1:
		// A policy of one attempt (a service config's method without a
		// retryPolicy) retries no code: its failures are no retry's
		// business, and must not take the tokens of a retryThrottling
		// that other methods share (gRFC A6 counts a failure whose code
		// is retryable for the method; so does grpc-go).
		p.Classifier = retriesNoCode
	case cs != nil:
		m := methodCodes{timeouts: p.AttemptTimeout > 0}
		for _, c := range cs {
			m.set = m.set.with(codes.Code(c))
		}
		p.Classifier = m.classify
	}
	return p, h, hedged
}

// retriesNoCode is the Classifier of a policy of one attempt, made once:
// a method value made per call would cost the call an allocation.
var retriesNoCode retry.Classifier = methodCodes{}.classify

// methodCodes are the codes that a policy of WithPolicies retries, and
// whether it retries an attempt that its AttemptTimeout cut short.
type methodCodes struct {
	set      codeSet
	timeouts bool
}

// classify retries the codes of m.set. A timed-out attempt is retried
// when the policy has an AttemptTimeout of its own (retryconfig's, which a
// service config lacks); otherwise it is the call's timeout (a service
// config's "timeout", MaxElapsed), which leaves no time for another, and
// it is judged by its code, DEADLINE_EXCEEDED, as grpc-go judges a call
// that its timeout ended: a token of retryThrottling is taken only if the
// method retries DEADLINE_EXCEEDED. A timeout, or a code that says the
// service is down or overloaded, fails the attempt for the guards (Breaker,
// Throttle) even where it is not retried, as with the codes of WithCodes.
func (m methodCodes) classify(_ context.Context, a retry.Attempt) retry.Decision {
	_, timedOut := a.Err.(*timeoutError)
	if timedOut && m.timeouts {
		return retry.Decision{Retry: true, Reason: "attempt timed out"}
	}
	code := status.Code(a.Err)
	d := retry.Decision{Retry: m.set.has(code), Reason: code.String()}
	d.Failed = timedOut || code == codes.ResourceExhausted || code == codes.Unavailable
	return d
}
