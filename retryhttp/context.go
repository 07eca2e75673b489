package retryhttp

import (
	"context"
	"net/http"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/shed"
)

// options are what a request's ctx tells the Transport: where to store its
// Trace, its name, and a Policy of its own. They share one ctx key, so that
// RoundTrip looks them up once.
type options struct {
	trace      *retry.Trace
	route      string
	policy     *retry.Policy
	policyName string
	priority   shed.Priority
	hasPrio    bool
}

type optionsKey struct{}

func optionsOf(ctx context.Context) options {
	o, _ := ctx.Value(optionsKey{}).(*options)
	if o == nil {
		return options{}
	}
	return *o
}

func withOptions(parent context.Context, set func(*options)) context.Context {
	o := optionsOf(parent)
	set(&o)
	return context.WithValue(parent, optionsKey{}, &o)
}

// WithTrace returns a copy of parent in which the [Transport] stores the
// retry.Trace of the request made with it: RoundTrip writes it to *dst
// before it returns, whatever the outcome. Use one dst per request; when
// http.Client follows redirects, each hop is a request of its own and *dst
// ends with the last hop's Trace.
func WithTrace(parent context.Context, dst *retry.Trace) context.Context {
	return withOptions(parent, func(o *options) { o.trace = dst })
}

// WithRoute returns a copy of parent that names the requests made with it,
// such as "GET /users/{id}/orders". The Transport logs the route in place
// of the URL's path, and hands it to [Transport.OnDone]; name requests by a
// route whenever their paths carry ids or secrets, so that neither reaches
// a log and observers see a bounded set of names.
func WithRoute(parent context.Context, route string) context.Context {
	return withOptions(parent, func(o *options) { o.route = route })
}

// WithPolicy returns a copy of parent whose requests the [Transport] makes
// with p in place of its own Policy: one Transport can give payments one
// attempt and feeds four, or give each tenant a Budget of its own.
func WithPolicy(parent context.Context, p retry.Policy) context.Context {
	return withOptions(parent, func(o *options) { o.policy = &p })
}

// WithPolicyName returns a copy of parent whose requests a [Transport] with
// Policies makes with the policy of that name ("payments"), taken from the
// Config current when each request starts: a reload never changes a request
// in flight. A policy from [WithPolicy] wins over it.
func WithPolicyName(parent context.Context, name string) context.Context {
	return withOptions(parent, func(o *options) { o.policyName = name })
}

// WithPriority returns a copy of parent whose requests the [Transport]
// sends with p in the shed.PriorityHeader ("Criticality: sheddable"), so
// that a server behind a shed.Limiter sheds them in that order under
// overload. A header the caller set wins.
func WithPriority(parent context.Context, p shed.Priority) context.Context {
	return withOptions(parent, func(o *options) { o.priority, o.hasPrio = p, true })
}

// withPriority returns req with the priority's header, a copy when it
// must set it: a RoundTripper does not modify its request.
func withPriority(req *http.Request, o options) *http.Request {
	if !o.hasPrio || req.Header.Get(shed.PriorityHeader) != "" {
		return req
	}
	r := req.Clone(req.Context())
	r.Header.Set(shed.PriorityHeader, o.priority.String())
	return r
}
