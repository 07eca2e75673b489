package guard

import (
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry/internal/coarse"
)

// Defaults of a zero field of [BreakerOptions].
const (
	defaultBreakerRatio    = 0.5
	defaultBreakerMinCalls = 20
	defaultBreakerWindow   = 30 * time.Second
	defaultBreakerOpenFor  = 10 * time.Second
	defaultBreakerProbes   = 3
)

// BreakerOptions configures [NewBreaker]. A zero field stands for the
// default in brackets.
type BreakerOptions struct {
	// FailureRatio is the share of failed calls in the Window at or above
	// which the breaker opens [0.5]; in (0, 1].
	FailureRatio float64
	// MinCalls is how many calls the Window must hold before the breaker
	// may open [20].
	MinCalls int
	// Window is the span of time over which calls are counted [30s]; it
	// slides by a sixteenth of itself, as ThrottleOptions.Window does.
	Window time.Duration
	// OpenFor is how long the breaker stays open before it lets probes
	// through [10s].
	OpenFor time.Duration
	// Probes is how many calls the half-open breaker admits [3]; when all
	// of them succeed it closes, and when one fails it opens again.
	Probes int
	// CountAttempts counts every attempt as a call [false: a logical call,
	// retries included, counts once, as a success if it finally succeeds].
	CountAttempts bool
	// Clock is the time source of the window and of OpenFor [real time].
	Clock Clock
}

// Breaker is a circuit breaker that retry.Do consults: it fails calls fast
// while the service behind it is down, instead of sending each of them
// there first.
//
// Closed, it counts calls over a sliding Window; when the window holds at
// least MinCalls and the share of failures reaches FailureRatio, it opens.
// Open, it refuses every call for OpenFor; then, on time (State reads the
// clock, no call is needed), it is half-open: it admits exactly Probes
// first attempts, closes when all of them succeed and opens again when one
// fails. A call fails, for the breaker, when it ends on an error the
// Classifier would retry; a success and an error it would not retry (a
// 400: the service answered) count as successes, and a call cut short by
// its caller's cancel, held back unsent, or cut by a panic in retry.Do
// counts as nothing, while one that ran out its caller's deadline counts
// as a failure, the service having been too slow for it (a probe so
// ended is given back).
//
// A refused call is never sent, never waits, and stops with
// retry.StopBreakerOpen and an error matching retry.ErrBreakerOpen and
// retry.ErrGaveUp. That error is marked retry.Permanent, so that neither this Do
// nor an outer one with the retry.DefaultClassifier retries it. A retry or a
// hedge never takes a probe: while the breaker is not closed, a call's
// retries and hedges are refused rather than sent. A logical call counts
// once, whatever its retries (see [BreakerOptions.CountAttempts]).
//
// Share one Breaker per downstream service. The zero Breaker is ready to
// use, with the defaults of a zero [BreakerOptions] and the real clock. A
// Breaker is safe for concurrent use; a closed one takes no lock (an
// atomic load to admit a call, and an atomic add to count it), and the
// probe count is exact however many goroutines race for it. On the real
// clock, a Breaker made by NewBreaker or a [Breakers] counts calls at a
// time read at most once per 10ms (less for a short Window or OpenFor), so
// that a call costs no clock read of its own; State reads the clock.
//
// Its changes of state are logged once each by a retryhttp.Transport with
// a Logger, and counted by retryotel; when something watches it, an open
// breaker sets one timer for the end of OpenFor, so that they see the
// move to half-open on time, with no call and no goroutine per breaker.
type Breaker struct {
	ratio         float64
	minCalls      uint64
	openFor       time.Duration
	probes        int64
	countAttempts bool
	clk           Clock
	clkComparable bool  // clk can be compared with ==, to share a read with a Throttle
	width         int64 // of a bucket of w; zero in the zero Breaker, which has the defaults

	state     atomic.Uint64 // generation<<2 | BreakerState: each change of state makes a new generation
	openUntil atomic.Int64  // coarse.Nanos on clk, while open
	probesOut atomic.Int64  // probes left to admit in this half-open generation
	probesOK  atomic.Int64  // probes that succeeded in it
	mu        sync.Mutex    // serializes changes of state
	w         window        // calls (total) and failures (marked) while closed

	coarse *coarse.Clock // the real clock, read once per tick; nil in the zero Breaker

	key string                   // in its Breakers; "" alone
	ws  atomic.Pointer[watchers] // told of each change of state; a Breakers' own, for its Breakers
}

// changed tells b's watchers that it moved from s to next. It runs under
// b.mu, so that they hear of the changes in their order. A breaker that
// opens while watched sets a timer for its move to half-open, so that the
// watchers hear of it on time, whether or not a call comes (State makes
// the move on time for a caller who asks; a watcher cannot ask).
func (b *Breaker) changed(s, next uint64) {
	ws := b.ws.Load()
	if ws == nil || !ws.watching() {
		return
	}
	if BreakerState(next&3) == BreakerOpen {
		afterFunc(b.clk, b.openUntil.Load(), func() { b.State() })
	}
	ws.tell(Change{Key: b.key, Breaker: true, From: BreakerState(s & 3), To: BreakerState(next & 3)})
}

// NewBreaker returns a closed Breaker with the options o, or an error
// matching [ErrInvalidOptions] that names the first option that cannot be
// used.
func NewBreaker(o BreakerOptions) (*Breaker, error) {
	switch {
	case math.IsNaN(o.FailureRatio) || o.FailureRatio < 0 || o.FailureRatio > 1:
		return nil, invalid("BreakerOptions.FailureRatio %v is not in (0, 1]", o.FailureRatio)
	case o.MinCalls < 0:
		return nil, invalid("BreakerOptions.MinCalls %d is negative", o.MinCalls)
	case o.Window < 0:
		return nil, invalid("BreakerOptions.Window %v is negative", o.Window)
	case o.Window > 0 && o.Window < windowBuckets*time.Millisecond:
		return nil, invalid("BreakerOptions.Window %v is below %v", o.Window, windowBuckets*time.Millisecond)
	case o.OpenFor < 0:
		return nil, invalid("BreakerOptions.OpenFor %v is negative", o.OpenFor)
	case o.Probes < 0:
		return nil, invalid("BreakerOptions.Probes %d is negative", o.Probes)
	}
	b := &Breaker{ratio: o.FailureRatio, minCalls: uint64(o.MinCalls), openFor: o.OpenFor,
		probes: int64(o.Probes), countAttempts: o.CountAttempts, clk: o.Clock, clkComparable: comparableClock(o.Clock)}
	if b.ratio == 0 {
		b.ratio = defaultBreakerRatio
	}
	if o.MinCalls == 0 {
		b.minCalls = defaultBreakerMinCalls
	}
	if b.openFor == 0 {
		b.openFor = defaultBreakerOpenFor
	}
	if b.probes == 0 {
		b.probes = defaultBreakerProbes
	}
	span := o.Window
	if span == 0 {
		span = defaultBreakerWindow
	}
	b.width = bucketWidth(span)
	if b.clk == nil {
		b.coarse = &coarse.Clock{Tick: min(time.Duration(b.width/4), b.openFor/16)}
	}
	return b, nil
}

// now is the time a call is counted at: the injected clock's, or the real
// one's, read once per tick. State reads the clock itself, exactly.
func (b *Breaker) now() time.Time {
	switch {
	case b.clk != nil:
		return b.clk.Now()
	case b.coarse != nil:
		return b.coarse.Now()
	}
	return time.Now()
}

// nowNs is now in UnixNano, without building a time.Time on the real
// clock.
func (b *Breaker) nowNs() int64 {
	if b.coarse != nil { // set only on the real clock
		return b.coarse.Nanos()
	}
	return coarse.Nanos(now(b.clk))
}

// State returns the breaker's state now. An open breaker whose OpenFor has
// passed is half-open, whether or not a call has come since.
func (b *Breaker) State() BreakerState {
	s := b.state.Load()
	if BreakerState(s&3) == BreakerOpen && coarse.Nanos(now(b.clk)) >= b.openUntil.Load() {
		s = b.halfOpen(s)
	}
	return BreakerState(s & 3)
}

// Refuses reports whether the breaker refuses a call's first attempt now
// without asking for a probe: it is open, and its OpenFor has not passed
// on the time it counts calls at (on the real clock, read at most once per
// tick). It takes nothing and changes nothing, so that an integration can
// fail such a call at once, before it builds anything for it, with the
// error retry.Do would return; false says only that the call must be
// admitted as usual.
func (b *Breaker) Refuses() bool {
	return BreakerState(b.state.Load()&3) == BreakerOpen && b.nowNs() < b.openUntil.Load()
}

// HalfOpensAt returns when an open breaker lets probes through again, or
// the zero time if it is not open: when a caller that waits comes back.
func (b *Breaker) HalfOpensAt() time.Time {
	if BreakerState(b.state.Load()&3) != BreakerOpen {
		return time.Time{}
	}
	return coarse.Time(b.openUntil.Load())
}

// halfOpen moves the breaker from the open state s to half-open, if it is
// still in s, and returns the state it is in.
func (b *Breaker) halfOpen(s uint64) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if cur := b.state.Load(); cur != s {
		return cur
	}
	b.probesOut.Store(b.params().probes)
	b.probesOK.Store(0)
	next := (s>>2+1)<<2 | uint64(BreakerHalfOpen)
	b.state.Store(next)
	b.changed(s, next)
	return next
}

// moveFrom changes the state from s to to, if it is still s: to open for
// OpenFor from at, or to closed with an empty window.
func (b *Breaker) moveFrom(s uint64, to BreakerState, at time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state.Load() != s {
		return
	}
	if to == BreakerOpen {
		b.openUntil.Store(addNs(coarse.Nanos(at), b.params().openFor))
	} else {
		b.w.reset()
	}
	next := (s>>2+1)<<2 | uint64(to)
	b.state.Store(next)
	b.changed(s, next)
}

// ticket is what a call admitted by a breaker holds: the state it was
// admitted in, and whether it is a probe.
type ticket struct {
	state uint64
	probe bool
}

// admit reports whether a call's first attempt may be sent, and its ticket.
func (b *Breaker) admit() (ticket, bool) {
	s := b.state.Load()
	if BreakerState(s&3) == BreakerClosed {
		return ticket{state: s}, true
	}
	if BreakerState(s&3) == BreakerOpen {
		if b.nowNs() < b.openUntil.Load() { // no time.Time built: a refusal is the hot path of an open breaker
			return ticket{}, false
		}
		s = b.halfOpen(s)
	}
	// Half-open (or closed again by a racing probe): take a probe. The
	// state is read again after the take, so that a probe taken from a
	// generation that just ended is given back rather than lost.
	for range 4 {
		switch BreakerState(s & 3) {
		case BreakerClosed:
			return ticket{state: s}, true
		case BreakerOpen:
			return ticket{}, false
		}
		for {
			left := b.probesOut.Load()
			if left <= 0 {
				return ticket{}, false
			}
			if b.probesOut.CompareAndSwap(left, left-1) {
				break
			}
		}
		cur := b.state.Load()
		if cur == s {
			return ticket{state: s, probe: true}, true
		}
		b.giveBack(s)
		s = cur
	}
	return ticket{}, false
}

// giveBack returns a probe taken in state s, if the breaker is still in it.
func (b *Breaker) giveBack(s uint64) {
	b.mu.Lock()
	if b.state.Load() == s {
		b.probesOut.Add(1)
	}
	b.mu.Unlock()
}

// AllowRetry reports whether a call may send another attempt (a retry or
// a hedge): only while the breaker is closed. It is one atomic load.
func (b *Breaker) AllowRetry() bool {
	return BreakerState(b.state.Load()&3) == BreakerClosed
}

// record counts one outcome of a call admitted with tk, at ns (UnixNano)
// if it is not zero: a time the caller read on the breaker's clock, which
// saves a read. A success of a closed breaker's call, the hot path, is one
// atomic load and one atomic add into a bucket (Call.Succeeded has a copy).
func (b *Breaker) record(tk ticket, outcome Outcome, ns int64) {
	if outcome != OutcomeSuccess || tk.probe {
		b.recordSlow(tk, outcome, ns)
		return
	}
	if b.state.Load() != tk.state {
		return // the breaker has moved on since this call began
	}
	if ns == 0 {
		ns = b.nowNs()
	}
	b.w.addIn(b.w.epochNs(ns, b.bucketWidth()), 1, 0)
}

// bucketWidth is the width of a bucket of b's window; the zero Breaker has
// the default Window.
func (b *Breaker) bucketWidth() int64 {
	if b.width == 0 {
		return bucketWidth(defaultBreakerWindow)
	}
	return b.width
}

// recordSlow is record for a probe or a call that did not succeed.
func (b *Breaker) recordSlow(tk ticket, outcome Outcome, ns int64) {
	if tk.probe {
		switch outcome {
		case OutcomeNone:
			b.giveBack(tk.state)
		case OutcomeSuccess:
			if b.state.Load() == tk.state && b.probesOK.Add(1) >= b.params().probes {
				b.moveFrom(tk.state, BreakerClosed, time.Time{})
			}
		case OutcomeFailure:
			b.moveFrom(tk.state, BreakerOpen, b.now())
		}
		return
	}
	if outcome == OutcomeNone || b.state.Load() != tk.state {
		return // the breaker has moved on since this call began
	}
	at := coarse.Time(ns)
	if ns == 0 {
		at = b.now()
	}
	c := b.params()
	b.w.add(at, c.width, 1, 1)
	if calls, failures := b.w.sum(at, c.width); calls >= c.minCalls && float64(failures) >= c.ratio*float64(calls) {
		// Open for OpenFor from now, when the failure is known: at may be
		// when the attempt began (the throttle's read), and a 15 s attempt
		// with an OpenFor of 10 s would be half-open at once.
		if ns != 0 {
			at = b.now()
		}
		b.moveFrom(tk.state, BreakerOpen, at)
	}
}

// breakerParams are a Breaker's constants.
type breakerParams struct {
	ratio    float64
	minCalls uint64
	openFor  time.Duration
	probes   int64
	width    int64
}

// params returns b's constants; the zero Breaker has the defaults.
func (b *Breaker) params() breakerParams {
	if b.width == 0 {
		return breakerParams{defaultBreakerRatio, defaultBreakerMinCalls, defaultBreakerOpenFor, defaultBreakerProbes, bucketWidth(defaultBreakerWindow)}
	}
	return breakerParams{b.ratio, b.minCalls, b.openFor, b.probes, b.width}
}

// addNs is ns + d, saturating: an OpenFor of Go's "forever"
// (math.MaxInt64) must keep the breaker open, not wrap into the past and
// half-open it the moment it opens.
func addNs(ns int64, d time.Duration) int64 {
	if d > 0 && ns > math.MaxInt64-int64(d) {
		return math.MaxInt64
	}
	return ns + int64(d)
}
