package retryotel

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/stormguard/retry/idempotency"
)

// The metrics of keyed requests that an idempotency middleware answered.
const (
	// IdempotencyRequestsName counts keyed requests, by route and outcome.
	IdempotencyRequestsName = "idempotency.requests"
	// IdempotencyStoreDurationName is a histogram, in seconds, of the time
	// each keyed request spent in the store (claim, renewals, complete or
	// release), by route and outcome; a request that did not call the
	// store records nothing.
	IdempotencyStoreDurationName = "idempotency.store.duration"
)

// The attributes of the idempotency metrics: these two and no other.
const (
	// RouteKey is the semantic conventions' http.route: the pattern of
	// the http.ServeMux that served the request ("POST /orders"), or the
	// name given to [Observer.OnIdempotency], or the request's method.
	// Never its key, path or query. Routes past the Observer's cap read as
	// "_OTHER".
	RouteKey = attribute.Key("http.route")
	// IdempotencyOutcomeKey says how the middleware answered: the String
	// of an idempotency.Outcome ("executed", "replayed", "in_flight",
	// "mismatch", "store_failed", "lease_lost", …).
	IdempotencyOutcomeKey = attribute.Key("idempotency.outcome")
)

// idemOutcomes is the number of outcome slots of a route: every
// idempotency.Outcome, and room for those added later, which read as
// "unknown" in the last.
const idemOutcomes = 16

// idemRoute holds one route's attribute sets, made once per outcome.
type idemRoute struct {
	other  bool
	add    [idemOutcomes][]metric.AddOption
	record [idemOutcomes][]metric.RecordOption
}

func newIdemRoute(name string) *idemRoute {
	r := &idemRoute{}
	for i := range idemOutcomes {
		outcome := idempotency.Outcome(i).String()
		if i == idemOutcomes-1 {
			outcome = "unknown"
		}
		opt := metric.WithAttributeSet(attribute.NewSet(RouteKey.String(name), IdempotencyOutcomeKey.String(outcome)))
		r.add[i] = []metric.AddOption{opt}
		r.record[i] = []metric.RecordOption{opt}
	}
	return r
}

// RecordIdempotency records a keyed request that an idempotency middleware
// has answered. It has the type of idempotency.Options.OnDone:
//
//	opts.OnDone = obs.RecordIdempotency
//
// It counts the request in idempotency.requests and its time in the store
// in idempotency.store.duration, under its route: the http.ServeMux
// pattern that served it (r.Pattern), or, when it has none (the middleware
// wraps the mux, or answered before the mux saw it), its method; see
// [Observer.OnIdempotency] to name those yourself. It also sets
// idempotency.outcome on the span of r's ctx, if one is recording (an
// otelhttp.NewHandler around the middleware makes one), so that a trace
// shows a replay as a replay.
func (o *Observer) RecordIdempotency(r *http.Request, s idempotency.Summary) {
	name := r.Pattern
	if name == "" {
		name = httpOperation(r.Method)
	}
	o.recordIdempotency(r, o.idemRoute(name), &s)
}

// OnIdempotency returns a hook for idempotency.Options.OnDone that records
// each request as [Observer.RecordIdempotency] does, under its r.Pattern,
// or under name when it has none:
//
//	opts.OnDone = obs.OnIdempotency("orders.create")
func (o *Observer) OnIdempotency(name string) func(*http.Request, idempotency.Summary) {
	fallback := o.idemRoute(name)
	return func(r *http.Request, s idempotency.Summary) {
		route := fallback
		if r.Pattern != "" {
			route = o.idemRoute(r.Pattern)
		}
		o.recordIdempotency(r, route, &s)
	}
}

func (o *Observer) recordIdempotency(r *http.Request, route *idemRoute, s *idempotency.Summary) {
	ctx := r.Context()
	oc := min(int(s.Outcome), idemOutcomes-1)
	o.idemRequests.Add(ctx, 1, route.add[oc]...)
	if s.StoreCalls > 0 {
		o.idemStore.Record(ctx, s.StoreTime.Seconds(), route.record[oc]...)
	}
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(IdempotencyOutcomeKey.String(s.Outcome.String()))
	}
}

// idemRoute returns the attributes of route name, made on first use, or
// those of "_OTHER" once the cap is reached.
func (o *Observer) idemRoute(name string) *idemRoute {
	o.mu.RLock()
	r, other := o.byRoute[name], o.otherRoute
	o.mu.RUnlock()
	switch {
	case r != nil:
		return r
	case other != nil:
		return other
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if r := o.byRoute[name]; r != nil {
		return r
	}
	if len(o.byRoute) >= o.maxOps {
		if o.otherRoute == nil {
			o.otherRoute = newIdemRoute(otherOperation)
			o.otherRoute.other = true
		}
		return o.otherRoute
	}
	if o.byRoute == nil {
		o.byRoute = make(map[string]*idemRoute)
	}
	r = newIdemRoute(name)
	o.byRoute[name] = r
	return r
}
