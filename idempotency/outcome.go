package idempotency

import (
	"context"
	"net/http"
	"time"
)

// Outcome says how the middleware answered one request that carried a key,
// for [Options.OnDone]. The set is closed: a switch over it can be
// exhaustive, and a metric labelled by it stays bounded.
type Outcome uint8

const (
	// OutcomeExecuted: the request claimed its key, the handler ran and
	// its response was saved for replays.
	OutcomeExecuted Outcome = iota + 1

	// OutcomeReleased: the handler ran but answered a status that
	// Options.Retryable calls "nothing was done" (or panicked), so its
	// response was not saved and the key was released for a retry.
	OutcomeReleased

	// OutcomeReplayed: a saved response was replayed; the handler did not
	// run.
	OutcomeReplayed

	// OutcomeInFlight: the same request was still running elsewhere; the
	// caller was answered 409 with Retry-After.
	OutcomeInFlight

	// OutcomeMismatch: the key was used before for a different request;
	// the caller was answered 422.
	OutcomeMismatch

	// OutcomeRejected: the key or the body was malformed or too large
	// (400, 413); the store was not asked.
	OutcomeRejected

	// OutcomeStoreFailed: the store failed, timed out or was full before
	// the handler could run; the caller was answered 503 and the handler
	// did not run. (Or the result the store returned is unreadable: the
	// caller was answered 500.)
	OutcomeStoreFailed

	// OutcomeLeaseLost: the handler ran but its claim was taken over (or
	// could not be saved) so its response was not saved.
	OutcomeLeaseLost
)

var outcomeNames = [...]string{
	OutcomeExecuted:    "executed",
	OutcomeReleased:    "released",
	OutcomeReplayed:    "replayed",
	OutcomeInFlight:    "in_flight",
	OutcomeMismatch:    "mismatch",
	OutcomeRejected:    "rejected",
	OutcomeStoreFailed: "store_failed",
	OutcomeLeaseLost:   "lease_lost",
}

// String returns the outcome's name in snake case ("in_flight"), fit for a
// metric attribute.
func (o Outcome) String() string {
	if int(o) < len(outcomeNames) && outcomeNames[o] != "" {
		return outcomeNames[o]
	}
	return "unknown"
}

// Summary describes one keyed request the middleware has answered, for
// [Options.OnDone]. It holds neither the key nor the scope nor any header:
// only what is safe to log and bounded in cardinality.
type Summary struct {
	Outcome Outcome
	// Status is the status code the caller was sent, or 0 if none was (a
	// handler that panicked before its response went out).
	Status int
	// Elapsed is the time from the request's arrival to its answer, on
	// Options.Clock.
	Elapsed time.Duration
	// StoreTime is the time spent in Store calls for this request (claim,
	// renewals, complete or release), on Options.Clock.
	StoreTime time.Duration
	// StoreCalls counts those calls.
	StoreCalls int
	// Err is the store's error for OutcomeStoreFailed and OutcomeLeaseLost,
	// or nil. Test it with errors.Is.
	Err error
}

// report gathers a keyed request's Summary as the middleware answers it,
// and hands it to Options.OnDone. A nil *report (no OnDone) does nothing,
// so that a middleware without the hook pays nothing for it.
type report struct {
	start time.Time
	tally tally
	s     Summary
}

// newReport starts the report of a keyed request, or returns nil without
// an OnDone.
func (m *Middleware) newReport() *report {
	if m.opts.OnDone == nil {
		return nil
	}
	return &report{start: m.now()}
}

// set records how the request was answered.
func (p *report) set(o Outcome, status int, err error) {
	if p != nil {
		p.s.Outcome, p.s.Status, p.s.Err = o, status, err
	}
}

// ctx returns parent carrying the report's tally, so that the store calls
// made with it are counted.
func (p *report) ctx(parent context.Context) context.Context {
	if p == nil {
		return parent
	}
	return withTally(parent, &p.tally)
}

// done calls OnDone. It is deferred, so that a handler's panic is
// reported too.
func (p *report) done(m *Middleware, r *http.Request) {
	p.s.Elapsed = m.now().Sub(p.start)
	p.s.StoreCalls = int(p.tally.calls.Load())
	p.s.StoreTime = time.Duration(p.tally.nanos.Load())
	m.opts.OnDone(r, p.s)
}
