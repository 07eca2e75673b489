package retrygrpc

import (
	"context"
	"time"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/guard"
	"github.com/stormguard/retry/retryconfig"
	"google.golang.org/grpc/codes"
)

// defaultMaxRetryAfter is the longest server-asked delay (pushback or
// RetryInfo) that the interceptors wait for unless told otherwise: long
// enough for a quota window, short enough that a misconfigured server cannot
// park a caller that has no deadline.
const defaultMaxRetryAfter = time.Minute

// An Option configures [UnaryClientInterceptor] and [StreamClientInterceptor].
// The zero Option does nothing.
type Option struct {
	apply func(*config)
}

// WithIdempotent marks methods, by full name ("/pkg.Service/Method"), as
// safe to call more than once: only marked methods are ever retried. A
// method that is not marked gets exactly one attempt, whatever its status
// code, because the interceptor cannot know whether the server acted on a
// failed call before it failed. Options add up: several WithIdempotent
// mark the union.
func WithIdempotent(fullMethods ...string) Option {
	return Option{func(c *config) {
		if c.idempotent == nil {
			c.idempotent = make(map[string]bool, len(fullMethods))
		}
		for _, m := range fullMethods {
			c.idempotent[m] = true
		}
	}}
}

// WithAllIdempotent marks every method as safe to call more than once. Use
// it only for a ClientConn whose service is idempotent throughout, such as
// a read-only one; prefer [WithIdempotent] or [CallIdempotent] otherwise.
func WithAllIdempotent() Option {
	return Option{func(c *config) { c.all = true }}
}

// WithCodes replaces the status codes that are retried [UNAVAILABLE]. An
// attempt cut short by Policy.AttemptTimeout or Policy.MaxElapsed while the
// caller's ctx is alive is retried whatever the codes: adding
// codes.DeadlineExceeded retries a DEADLINE_EXCEEDED sent by the server too.
// The codes apply only while the Policy has no Classifier of its own (see
// [UnaryClientInterceptor]). WithCodes() with no code retries only timed-out
// attempts.
func WithCodes(cs ...codes.Code) Option {
	return Option{func(c *config) {
		c.codes = 0
		for _, code := range cs {
			c.codes = c.codes.with(code)
		}
	}}
}

// WithMaxRetryAfter sets the longest delay a server may ask for, through the
// grpc-retry-pushback-ms trailer or a google.rpc.RetryInfo detail, that the
// interceptor still waits for [1m]. A call whose server asks for as long or
// longer is not retried: its error is returned at once, rather than retried
// sooner than the server asked. A d of zero or less means the default.
func WithMaxRetryAfter(d time.Duration) Option {
	return Option{func(c *config) { c.maxRetryAfter = d }}
}

// WithGRPCRetryDisabled tells the interceptor that its ClientConn was made
// with grpc.WithDisableRetry, so that grpc-go retries nothing by itself.
// The interceptor then retries methods that the service config gives a
// retryPolicy too. Without it, such methods get one attempt from the
// interceptor and their retries are left to grpc-go, so that the two
// retry loops never multiply (see the package doc). Setting it on a
// ClientConn whose grpc-go retries are on multiplies them.
func WithGRPCRetryDisabled() Option {
	return Option{func(c *config) { c.grpcRetryDisabled = true }}
}

// config is what the Options and the Policy of an interceptor say. It is
// made once per interceptor and only read afterwards, so every call shares
// it without a lock.
type config struct {
	policy            retry.Policy
	all               bool
	idempotent        map[string]bool
	codes             codeSet
	maxRetryAfter     time.Duration
	grpcRetryDisabled bool
	noHold            bool
	holds             guard.Holds // targets that asked to be held back, unless guards.Holds
	guards            guard.Keyed // WithGuards

	policies *retryconfig.Live                // WithPolicies: each call's policy, by method
	onDone   []func(context.Context, Summary) // WithOnDone's hooks, in order
}

func newConfig(p retry.Policy, opts []Option) *config {
	c := &config{policy: p, codes: defaultCodes}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(c)
		}
	}
	if c.maxRetryAfter <= 0 {
		c.maxRetryAfter = defaultMaxRetryAfter
	}
	return c
}

// idempotentMethod reports whether method may be retried: marked by an
// Option, or by the call's own CallIdempotent.
func (c *config) idempotentMethod(method string, call callOptions) bool {
	return c.all || call.idempotent || c.idempotent[method]
}

// codeSet is a set of status codes, one bit each: gRPC defines codes 0 to
// 16, and any code up to 63 fits.
type codeSet uint64

var defaultCodes = codeSet(0).with(codes.Unavailable)

func (s codeSet) with(c codes.Code) codeSet {
	if c < 64 {
		s |= 1 << c
	}
	return s
}

func (s codeSet) has(c codes.Code) bool {
	return c < 64 && s&(1<<c) != 0
}
