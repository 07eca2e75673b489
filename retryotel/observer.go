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
}

// httpKey is what retryhttp.Summary.Name is made of, so that a Summary is
// looked up without building its name.
type httpKey struct{ route, method, origin string }

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
func (o *Observer) OnDone(name string) func(ctx context.Context, t retry.Trace, err error) {
	op := o.operation(name)
	return func(ctx context.Context, t retry.Trace, _ error) {
		o.record(ctx, op, name, &t, 0)
	}
}

// RecordHTTP records a request that a [retryhttp.Transport] has finished,
// under its [retryhttp.Summary.Name]: the route given with
// retryhttp.WithRoute, or else its method and origin. It has the type of
// [retryhttp.Transport.OnDone]:
//
//	transport.OnDone = obs.RecordHTTP
//
// The span also carries the response's status as
// http.response.status_code; no path, query, header or error reaches
// either.
func (o *Observer) RecordHTTP(ctx context.Context, s retryhttp.Summary) {
	k := httpKey{route: s.Route}
	if s.Route == "" {
		k.method, k.origin = s.Method, s.Origin
	}
	o.mu.RLock()
	op := o.byHTTP[k]
	o.mu.RUnlock()
	name := ""
	if op == nil {
		name = s.Name()
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
	o.record(ctx, op, name, &s.Trace, s.Status)
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

// record records one call: its metrics, then its span. spanName is the
// call's own name when op is "_OTHER", or "" to use op's.
func (o *Observer) record(ctx context.Context, op *operation, spanName string, t *retry.Trace, status int) {
	oc := outcomeOf(t.Stop())
	o.recordMetrics(ctx, op, oc, t)
	if spanName == "" || !op.other {
		spanName = op.name
	}
	o.recordSpan(ctx, op, oc, spanName, t, status)
}
