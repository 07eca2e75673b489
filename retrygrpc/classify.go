package retrygrpc

import (
	"context"
	"errors"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// call is what the unary and the stream interceptor share about one call:
// whom it is for, what may be retried, and what its latest attempt said.
// Do runs the attempts and the Classifier on one goroutine at a time, so
// call needs no lock of its own.
type call struct {
	cfg        *config
	ctx        context.Context // the caller's
	method     string
	cc         *grpc.ClientConn
	classify   retry.Classifier                          // the Policy's own; nil: decide by status code
	clk        retry.Clock                               // the Policy's; nil for the real clock
	onDone     func(context.Context, retry.Trace, error) // the Policy's own OnDone, when WithOnDone has hooks
	idempotent bool                                      // beside the bools below, which share its word

	budget    *guard.Budget   // the Policy's, which a pushback that says stop charges
	committed bool            // a stream's latest attempt failed after a response header
	answered  bool            // a unary call's latest attempt failed after a response header
	decision  retry.Decision  // what the latest failed attempt was judged
	sent      guard.HoldEpoch // when awaitHold let the latest attempt go
	trailer   metadata.MD     // the latest attempt's trailer
}

// init fills c for a call and puts decide, which calls c.decide, in p as
// its Classifier, in place of p's own, which c.decide consults first.
func (c *call) init(cfg *config, ctx context.Context, method string, cc *grpc.ClientConn, co callOptions, p *retry.Policy, decide retry.Classifier) {
	c.cfg, c.ctx, c.method, c.cc, c.clk, c.budget = cfg, ctx, method, cc, p.Clock, p.Budget
	c.idempotent = cfg.idempotentMethod(method, co)
	c.classify = p.Classifier
	p.Classifier = decide
}

// decide is the Classifier the interceptors give Do: the Policy's own, or
// the retryable codes, then the rules no Classifier can override: a
// method not marked idempotent, a committed stream and a method that grpc-go
// retries by itself get one attempt; the server's pushback and RetryInfo set
// the least wait, or stop the retries.
func (c *call) decide(ctx context.Context, a retry.Attempt) retry.Decision {
	if _, ok := pushback(c.trailer); !ok && c.budget != nil && !c.committed && !c.answered {
		// A pushback that says stop counts as a failure for the
		// retryThrottling token bucket whatever the code and the method's
		// policy, as grpc-go counts it (gRFC A6's throttling sees the
		// server asking not to retry as a failed attempt). Do takes no
		// token for it: the gate refuses the retry.
		c.budget.Failed()
	}
	d := c.judge(ctx, a)
	if d.Retry {
		d = c.gate(d, a.Err)
	}
	c.decision = d
	return d
}

// judge says whether err is worth another attempt, before the gate.
func (c *call) judge(ctx context.Context, a retry.Attempt) retry.Decision {
	if errors.Is(a.Err, ErrTargetHeld) {
		return retry.Decision{Reason: "target held back (pushback)"}
	}
	if c.classify != nil {
		return c.classify(ctx, a)
	}
	if _, ok := a.Err.(*timeoutError); ok {
		return retry.Decision{Retry: true, Reason: "attempt timed out"}
	}
	code := status.Code(a.Err)
	// code.String() is a fixed name ("Unavailable"): safe to log. A code
	// that says the service is overloaded or down fails the attempt for
	// the guards even where it is not retried, as HTTP's 429 and 503 do.
	d := retry.Decision{Retry: c.cfg.codes.has(code), Reason: code.String()}
	d.Failed = code == codes.ResourceExhausted || code == codes.Unavailable
	return d
}

func (c *call) gate(d retry.Decision, err error) retry.Decision {
	switch {
	case c.committed:
		return refuse(d, "stream committed")
	case c.answered:
		return refuse(d, "call committed: response header received")
	case !c.idempotent:
		return refuse(d, "method not marked idempotent")
	case c.cfg.grpcRetries(c.cc, c.method):
		return refuse(d, "left to grpc-go's retryPolicy")
	}
	after, ok := pushback(c.trailer)
	if !ok {
		return refuse(d, "server pushback says stop")
	}
	asked := max(after, retryInfoDelay(err))
	if len(c.trailer.Get(loadShedKey)) == 0 {
		c.hold(asked) // every new attempt to the target waits too
	} // a shed's pushback is this call's wait: the server refused only its excess
	d.RetryAfter = max(d.RetryAfter, asked)
	if d.RetryAfter >= c.cfg.maxRetryAfter {
		return refuse(d, "server delay reaches the maximum")
	}
	return d
}

// refuse turns d into a refusal, and says why in the Reason that the Trace
// keeps.
func refuse(d retry.Decision, why string) retry.Decision {
	r := retry.Decision{Reason: d.Reason + "; " + why}
	r.Failed = true // the service failed the attempt: the Breaker and Throttle count it so
	return r
}

// grpcRetries reports whether grpc-go retries method by itself: the
// ClientConn's service config gives it a retryPolicy, and the interceptor
// was not told that the ClientConn disables retries.
//
// GetMethodConfig is the one public view of the service config. It sees the
// config from the resolver or WithDefaultServiceConfig, not the per-route
// policies of an xDS config selector; see the package doc.
func (c *config) grpcRetries(cc *grpc.ClientConn, method string) bool {
	if c.grpcRetryDisabled || cc == nil {
		return false
	}
	return cc.GetMethodConfig(method).RetryPolicy != nil
}
