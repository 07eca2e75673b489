package chaos

import (
	"context"
	"net/http"
	"slices"
	"sync/atomic"
	"time"
)

// Injector decides, for each request, which of its faults the request
// gets. [Transport] and [Handler] are built on it, and so are the gRPC
// interceptors of the retrygrpc module; an integration of your own (a
// queue consumer, a driver) can use it the same way: ask [Injector.Active]
// first, the one atomic load of the fast path, and only then build what
// Decide needs.
//
// An Injector is safe for concurrent use.
type Injector struct {
	faults []armed
	first  *Switch   // of the first fault, nil for none: Active loads its flag
	more   []*Switch // the other switches, distinct, for the rare injector of several
	id     uint64    // from the first switch, so that two injectors draw apart
	n      atomic.Uint64
}

// armed is one valid fault of an Injector, with its counts.
type armed struct {
	Fault
	name string
	c    *counts
}

// NewInjector returns an Injector of faults, copied. A fault that has no
// Switch or fails [Fault.Validate] is left out: it never fires. Faults
// are drawn for in order, from the seed of their own Switch; injectors
// made in the same order from the same Switch draw the same numbers on
// every run.
func NewInjector(faults ...Fault) *Injector {
	in := &Injector{}
	for _, f := range faults {
		if f.Switch == nil || f.Validate() != nil {
			continue
		}
		switch {
		case in.first == nil:
			in.first = f.Switch
			in.id = f.Switch.injectors.Add(1)
		case f.Switch != in.first && !slices.Contains(in.more, f.Switch):
			in.more = append(in.more, f.Switch)
		}
		name := f.label()
		in.faults = append(in.faults, armed{Fault: f, name: name, c: f.Switch.countsOf(name)})
	}
	return in
}

// Active reports whether any of the Injector's switches is on: the fast
// path, one atomic load for the usual single switch, nothing allocated. A
// nil Injector is never active.
func (in *Injector) Active() bool {
	// Small enough to be inlined into the injectors' fast paths.
	return in != nil && in.first != nil && (in.first.on.Load() || in.more != nil && in.anyMore())
}

func (in *Injector) anyMore() bool {
	for _, s := range in.more {
		if s.on.Load() {
			return true
		}
	}
	return false
}

// Decide draws the faults of request r (given to the faults' Match; it may
// be nil when none has one) and counts them in their Switch's Stats. It
// returns the zero Decision, having counted nothing, when no switch is on.
func (in *Injector) Decide(r *http.Request) Decision {
	if !in.Active() {
		return Decision{}
	}
	n := in.n.Add(1) - 1
	var d Decision
	for i := range in.faults {
		f := &in.faults[i]
		if !f.Switch.on.Load() || (f.Match != nil && !f.Match(r)) {
			continue
		}
		f.c.requests.Add(1)
		if f.Switch.draw(in.id, n, i) >= f.Rate {
			continue
		}
		f.c.injected.Add(1)
		d.Latency += f.Latency
		if !f.terminal() {
			continue
		}
		d.Fault = f.name
		switch {
		case f.Drop:
			d.Drop = true
		case f.Err != nil:
			d.Err = &injectedError{fault: f.name, err: f.Err}
		default:
			d.Status, d.Header = f.Status, f.Header
		}
		break
	}
	return d
}

// Decision is what one request gets: added Latency, and at most one of a
// Status (with its Header), an Err or Drop. The zero Decision injects
// nothing.
type Decision struct {
	// Fault is the name of the fault that answers the request, "" when
	// none does (no fault, or latency alone).
	Fault   string
	Latency time.Duration
	Status  int
	Header  http.Header // the Fault's own: clone it before changing it
	Err     error       // matches ErrInjected and the Fault's Err
	Drop    bool
}

// Wait waits out the Decision's Latency on the real clock (which
// testing/synctest fakes), or until ctx ends, and then returns ctx's
// cause.
func (d Decision) Wait(ctx context.Context) error {
	if d.Latency <= 0 {
		return nil
	}
	t := time.NewTimer(d.Latency)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
