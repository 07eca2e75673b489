package retryotel

import (
	"context"
	"sync"

	"github.com/stormguard/retry"
	"github.com/stormguard/retry/retryhttp"
)

// ScopeName is the instrumentation scope of the Observer's meter and
// tracer: this package's import path.
const ScopeName = "github.com/stormguard/retry/retryotel"

// Observer turns each finished call of retry.Do or of a retryhttp.Transport
// into metrics and a span. Make one with [New] and wire it in one line,
// through [Observer.OnDone] or [Observer.RecordHTTP].
//
// The zero Observer has no instruments: make one with New. An Observer is
// safe for concurrent use. It tells apart a bounded number
// of operation names (see [WithMaxOperations]), so that neither its memory
// nor the number of time series grows with the traffic.
type Observer struct {
	instruments
	maxOps int

	mu     sync.RWMutex
	byName map[string]*operation
	byHTTP map[httpKey]*operation // Summaries already resolved, so that naming one allocates nothing
	other  *operation

	byRoute    map[string]*idemRoute // idempotency routes, capped as operations are
	otherRoute *idemRoute
}

// httpKey is what an HTTP request's operation is made of, so that a
// Summary is looked up without building its name: a route, or a method.
type httpKey struct{ route, method string }

// New returns an Observer that records with the providers of opts, or with
// the global ones. It fails only if an instrument cannot be made.
func New(opts ...Option) (*Observer, error) {
	c := newConfig(opts)
	ins, err := newInstruments(c)
	if err != nil {
		return nil, err
	}
	return &Observer{instruments: ins, maxOps: c.maxOps}, nil
}

// OnDone returns a hook for [retry.Policy.OnDone] that records each call
// under name:
//
//	p.OnDone = obs.OnDone("inventory.get")
//
// The name is looked up once, here, so that the hook only records. Name
// operations by what they do, never by a path or a URL with ids in it.
//
// OnDone is for retry.Do (and retry.Hedge). Do not also set it as the Policy
// of a retryhttp.Transport whose OnDone is [Observer.RecordHTTP]: both see
// the same request, which would be counted twice.
func (o *Observer) OnDone(name string) func(ctx context.Context, t retry.Trace, err error) {
	op := o.operation(name)
	return func(ctx context.Context, t retry.Trace, _ error) {
		o.record(ctx, op, &t, callInfo{})
	}
}

// RecordHTTP records a request that a [retryhttp.Transport] has finished.
// It has the type of [retryhttp.Transport.OnDone]:
//
//	transport.OnDone = obs.RecordHTTP
//
// Its operation is the route given with retryhttp.WithRoute, or else the
// request's method ("GET"), as the OpenTelemetry semantic conventions name
// an HTTP client span whose route is unknown; a method they do not know
// reads as "HTTP". The origin is never part of the operation, so that the
// calls to per-tenant hosts share one series: it is the span's
// server.address. The span also carries http.request.method (a method the
// conventions do not know reads as "_OTHER") and the response's status as
// http.response.status_code. No path, query, header or error reaches a
// metric or a span.
func (o *Observer) RecordHTTP(ctx context.Context, s retryhttp.Summary) {
	k := httpKey{route: s.Route}
	if s.Route == "" {
		k.method = httpMethod(s.Method)
	}
	o.mu.RLock()
	op := o.byHTTP[k]
	o.mu.RUnlock()
	if op == nil {
		name := s.Route
		if name == "" {
			name = httpOperation(s.Method)
		}
		op = o.operation(name)
		if !op.other { // the overflow's names are unbounded: not cached
			o.mu.Lock()
			if o.byHTTP == nil {
				o.byHTTP = make(map[httpKey]*operation)
			}
			o.byHTTP[k] = op // at most two keys per named operation: bounded
			o.mu.Unlock()
		}
	}
	o.record(ctx, op, &s.Trace, callInfo{http: true, status: s.Status, method: s.Method, origin: s.Origin})
}

// operation returns the attributes of name, made on first use, or those of
// "_OTHER" once the cap is reached.
func (o *Observer) operation(name string) *operation {
	o.mu.RLock()
	op, other := o.byName[name], o.other
	o.mu.RUnlock()
	switch {
	case op != nil:
		return op
	case other != nil:
		return other
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if op := o.byName[name]; op != nil {
		return op
	}
	if len(o.byName) >= o.maxOps {
		if o.other == nil {
			o.other = newOperation(otherOperation)
			o.other.other = true
		}
		return o.other
	}
	if o.byName == nil {
		o.byName = make(map[string]*operation)
	}
	op = newOperation(name)
	o.byName[name] = op
	return op
}

// record records one call: its metrics, then its span, named after op
// (so "_OTHER" past the cap, as in the metrics).
func (o *Observer) record(ctx context.Context, op *operation, t *retry.Trace, info callInfo) {
	oc := outcomeOf(t.Stop())
	o.recordMetrics(ctx, op, oc, t)
	o.recordSpan(ctx, op, oc, t, info)
}
