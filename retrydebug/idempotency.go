package retrydebug

import (
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/stormguard/retry/idempotency"
)

// otherRoute is the name the overflow bucket of idempotency routes is
// shown under.
const otherRoute = "(other routes)"

// outcomeSlots has room for every idempotency.Outcome, and more, so that
// an outcome added later is counted (under its String) without a change
// here.
const outcomeSlots = 16

// idemRoute holds one route's counts of keyed requests, by outcome, and the
// time they spent in the store.
type idemRoute struct {
	name  string
	other bool

	mu         sync.Mutex
	requests   uint64
	outcomes   [outcomeSlots]uint64
	storeCalls uint64
	storeTime  histogram // of each request's time in the store, for those that called it
	elapsed    histogram // of each request's time to its answer
}

// RecordIdempotency records a request that an idempotency middleware has
// answered. It has the type of idempotency.Options.OnDone:
//
//	opts.OnDone = rec.RecordIdempotency
//
// A request is counted under its route, the pattern of the http.ServeMux
// that served it (r.Pattern, "POST /orders"), or, when it has none (the
// middleware wraps the mux, or the request was answered before the mux
// saw it), under its method ("POST"); see [Recorder.OnIdempotency] to name
// those yourself. Never under its key, path or query. The page shows, per
// route, the requests by outcome (replays, 409s for requests in flight,
// 422s for keys reused with other content, 503s for a store that failed,
// lost leases, …) and percentiles of the time each spent in the store.
func (r *Recorder) RecordIdempotency(req *http.Request, s idempotency.Summary) {
	name := req.Pattern
	if name == "" {
		name = httpMethod(req.Method)
	}
	r.idemRoute(name).record(&s)
}

// OnIdempotency returns a hook for idempotency.Options.OnDone that records
// each request as [Recorder.RecordIdempotency] does, under its r.Pattern,
// or under name when it has none:
//
//	opts.OnDone = rec.OnIdempotency("orders.create")
func (r *Recorder) OnIdempotency(name string) func(*http.Request, idempotency.Summary) {
	fallback := r.idemRoute(name)
	return func(req *http.Request, s idempotency.Summary) {
		route := fallback
		if req.Pattern != "" {
			route = r.idemRoute(req.Pattern)
		}
		route.record(&s)
	}
}

func (o *idemRoute) record(s *idempotency.Summary) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.requests++
	o.outcomes[min(int(s.Outcome), outcomeSlots-1)]++
	if s.StoreCalls > 0 {
		o.storeCalls += uint64(s.StoreCalls)
		o.storeTime.add(s.StoreTime)
	}
	o.elapsed.add(s.Elapsed)
}

// idemRoute returns the route of name, made on first use, or the overflow
// bucket once as many routes as operations are known.
func (r *Recorder) idemRoute(name string) *idemRoute {
	r.mu.RLock()
	route, other := r.byRoute[name], r.otherRoute
	r.mu.RUnlock()
	switch {
	case route != nil:
		return route
	case other != nil:
		return other
	}
	_, maxOps := r.limits()
	r.mu.Lock()
	defer r.mu.Unlock()
	if route := r.byRoute[name]; route != nil {
		return route
	}
	if len(r.byRoute) >= maxOps {
		if r.otherRoute == nil {
			r.otherRoute = &idemRoute{name: otherRoute, other: true}
		}
		return r.otherRoute
	}
	if r.byRoute == nil {
		r.byRoute = make(map[string]*idemRoute)
	}
	route = &idemRoute{name: name}
	r.byRoute[name] = route
	return route
}

// IdempotencyRoute is what a [Recorder] holds of the keyed requests of one
// route, for the page and its JSON.
type IdempotencyRoute struct {
	Route string `json:"route"`
	// Other is true for the overflow bucket, which counts the requests of
	// every route past the Recorder's cap.
	Other    bool  `json:"other"`
	Requests int64 `json:"requests"`
	// Outcomes counts the requests by how they were answered, under the
	// texts of idempotency.Outcome: "executed", "replayed", "in_flight"
	// (409), "mismatch" (422), "store_failed" (503), "lease_lost", …
	Outcomes map[string]int64 `json:"outcomes"`
	// StoreCalls counts the calls made to the store.
	StoreCalls int64 `json:"store_calls"`
	// StoreTime has percentiles of the time each request that called the
	// store spent in it, within 6.25%.
	StoreTime Percentiles `json:"store_time_ns"`
	// Elapsed has percentiles of the time from each request's arrival to
	// its answer.
	Elapsed Percentiles `json:"elapsed_ns"`
}

func (o *idemRoute) snapshot() IdempotencyRoute {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := IdempotencyRoute{
		Route: o.name, Other: o.other,
		Requests:   int64(o.requests),
		Outcomes:   make(map[string]int64),
		StoreCalls: int64(o.storeCalls),
		StoreTime:  o.storeTime.percentiles(),
		Elapsed:    o.elapsed.percentiles(),
	}
	for i, n := range o.outcomes {
		if n > 0 {
			s.Outcomes[idempotency.Outcome(i).String()] += int64(n)
		}
	}
	return s
}

// idempotencyRoutes returns what r holds of each route, by name, the
// overflow bucket last.
func (r *Recorder) idempotencyRoutes() []IdempotencyRoute {
	r.mu.RLock()
	routes := make([]*idemRoute, 0, len(r.byRoute)+1)
	for _, route := range r.byRoute {
		routes = append(routes, route)
	}
	other := r.otherRoute
	r.mu.RUnlock()
	slices.SortFunc(routes, func(a, b *idemRoute) int { return strings.Compare(a.name, b.name) })
	if other != nil {
		routes = append(routes, other)
	}
	out := make([]IdempotencyRoute, 0, len(routes))
	for _, route := range routes {
		out = append(out, route.snapshot())
	}
	return out
}
