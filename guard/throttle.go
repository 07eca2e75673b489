package guard

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/stormguard/retry/internal/coarse"
)

// Defaults of a zero field of [ThrottleOptions].
const (
	defaultThrottleK           = 2
	defaultThrottleWindow      = 2 * time.Minute
	defaultThrottleMinRequests = 20
	defaultThrottleMaxReject   = 0.9
)

// ThrottleOptions configures [NewThrottle]. A zero field stands for the
// default in brackets.
type ThrottleOptions struct {
	// K is how many requests the client sends per request the service
	// accepts before it starts to shed [2]; above 1. Lower sheds sooner,
	// and recovers later: the refused requests count, so that at 1 the
	// shedding would hold itself up for ever.
	K float64
	// Window is the span of time the counts cover [2m]. It slides by a
	// sixteenth of itself: what is older than 15/16 of it may be
	// forgotten already, and what is older than all of it is.
	Window time.Duration
	// MinRequests is how many requests the window must hold before the
	// Throttle refuses any [20], so that a sparse client never trips.
	MinRequests int
	// MaxReject caps the reject probability [0.9], so that some requests
	// always go through to see the service recover; in (0, 1].
	MaxReject float64
	// Clock is the time source of the window [real time].
	Clock Clock
	// Rand draws the number in [0, 1) that each refusal is decided by
	// [math/rand/v2.Float64]. Set it, with Clock, to make a simulation
	// repeat exactly from a seed; it must be safe for concurrent use if
	// the Throttle is shared by goroutines.
	Rand func() float64
}

// Throttle sheds requests on the client while the service behind it
// rejects many of them: the client-side adaptive throttling of Google's SRE
// book ("Handling Overload", chapter 21). Over a sliding Window it counts
// requests, the attempts the application tried to send (those it refused
// included), and accepts, the attempts the service answered with something
// other than an overload; and it refuses each new attempt, before it is
// sent, with probability
//
//	max(0, (requests − K·accepts) / (requests + 1))
//
// capped at MaxReject, and zero while the window holds fewer than
// MinRequests requests. A healthy service sees no shedding (requests ≈
// accepts); an overloaded one sees about K requests per request it
// accepts, not the full offered load.
//
// retry.Do asks it before every attempt, the first included: a refused attempt
// is never sent, and Do stops with retry.StopThrottled and an error matching
// retry.ErrThrottled and retry.ErrGaveUp. An attempt counts as accepted unless the
// Classifier would retry its error (a 429, a 503, UNAVAILABLE,
// RESOURCE_EXHAUSTED, a timeout): a 400 is an accept, since the service did
// its work. Share one Throttle per downstream service, like a [Budget].
//
// The zero Throttle is ready to use, with the defaults of a zero
// [ThrottleOptions] and the real clock. A Throttle is safe for concurrent
// use and takes no lock: while its reject probability is zero, an attempt
// costs two atomic loads and an atomic add (and otherwise a sum over 16
// buckets more), and a failed one an atomic add more, until failures
// since the last sum could have raised the probability. On the real
// clock, a Throttle made by NewThrottle or a [Throttles] counts attempts
// at a time read at most once per 10ms (less for a short Window), so that
// an attempt costs no clock read of its own; RejectProbability reads the
// clock.
type Throttle struct {
	k, maxReject float64
	minRequests  uint64
	clk          Clock
	clkCmp       bool // clk can be compared with ==, to share a read with a Breaker
	rnd          func() float64
	width        int64 // of a bucket of w
	w            window

	coarse *coarse.Clock // the real clock, read once per tick; nil in the zero Throttle

	// zeroIn says through which epoch (of a bucket of w) the reject
	// probability is known to be zero, and for how many more failed
	// attempts: (1 + the epoch)<<zeroSlackBits | slack, or 0 for not
	// known. A healthy service's attempts then skip the sum over the
	// window. Once requests ≤ K·accepts, an accepted attempt cannot raise
	// the probability (it adds a request and an accept, and K ≥ 1); a
	// failed one adds a request, and slack is how many of those the window
	// could take, when it was summed, with the probability still zero.
	// Each failure takes one (failed); the one that finds none left
	// clears zeroIn, so that a few failures among many successes keep
	// every caller on the fast path. A failure that races a zero being
	// noted makes the note fail (allowSlow's compare-and-swap), and the
	// next attempt sums again.
	zeroIn atomic.Int64

	on  atomic.Bool              // shedding: the reject probability was above zero when last computed
	key string                   // in its Throttles; "" alone
	ws  atomic.Pointer[watchers] // told when shedding starts and stops; a Throttles' own, for its Throttles
}

// The layout of Throttle.zeroIn.
const (
	zeroSlackBits = 16
	zeroSlackMask = 1<<zeroSlackBits - 1
	zeroMaxEpoch  = 1 << 46 // of a note: beyond it, and its negative, the probability is never noted zero
)

// zeroKnown reports whether zeroIn, loaded, says that the reject
// probability is zero through epoch e: Call.Admit's test, by hand.
func zeroKnown(zeroIn, e int64) bool { return zeroIn>>zeroSlackBits == e+1 }

// noteZero records, if zeroIn still holds before (what it held before the
// window was summed), that the probability is zero through epoch e, with
// slack more requests not accepted before it may not be.
func (t *Throttle) noteZero(before, e int64, slack float64) {
	if e+1 >= zeroMaxEpoch || e+1 <= -zeroMaxEpoch {
		return
	}
	t.zeroIn.CompareAndSwap(before, (e+1)<<zeroSlackBits|int64(min(slack, zeroSlackMask)))
}

// failed takes one from the slack of zeroIn for a request not accepted,
// and clears it when none was left: the subtraction then borrows from the
// epoch, which leaves all ones in the slack's bits.
func (t *Throttle) failed() {
	if t.zeroIn.Add(-1)&zeroSlackMask == zeroSlackMask {
		t.zeroIn.Store(0)
	}
}

// note records whether the throttle sheds, by the probability p just
// computed, and tells the watchers when that changes: once per change, by
// whoever wins the swap. It costs an attempt one atomic load.
func (t *Throttle) note(p float64) {
	if on := p != 0; on != t.on.Load() && t.on.CompareAndSwap(!on, on) {
		if ws := t.ws.Load(); ws != nil {
			ws.tell(Change{Key: t.key, Shedding: on})
		}
	}
}

// NewThrottle returns a Throttle with the options o, or an error matching
// [ErrInvalidOptions] that names the first option that cannot be used.
func NewThrottle(o ThrottleOptions) (*Throttle, error) {
	switch {
	case math.IsNaN(o.K) || math.IsInf(o.K, 0) || o.K < 0 || o.K > 0 && o.K <= 1:
		// At K = 1 the throttle's own refusals hold its probability where
		// it is, whatever the service does: it never recovers.
		return nil, invalid("ThrottleOptions.K %v is not a finite number above 1", o.K)
	case o.Window < 0:
		return nil, invalid("ThrottleOptions.Window %v is negative", o.Window)
	case o.Window > 0 && o.Window < windowBuckets*time.Millisecond:
		return nil, invalid("ThrottleOptions.Window %v is below %v", o.Window, windowBuckets*time.Millisecond)
	case o.MinRequests < 0:
		return nil, invalid("ThrottleOptions.MinRequests %d is negative", o.MinRequests)
	case math.IsNaN(o.MaxReject) || o.MaxReject < 0 || o.MaxReject > 1:
		return nil, invalid("ThrottleOptions.MaxReject %v is not in (0, 1]", o.MaxReject)
	}
	t := &Throttle{k: o.K, maxReject: o.MaxReject, minRequests: uint64(o.MinRequests), clk: o.Clock, clkCmp: comparableClock(o.Clock), rnd: o.Rand}
	if t.k == 0 {
		t.k = defaultThrottleK
	}
	if t.maxReject == 0 {
		t.maxReject = defaultThrottleMaxReject
	}
	if o.MinRequests == 0 {
		t.minRequests = defaultThrottleMinRequests
	}
	span := o.Window
	if span == 0 {
		span = defaultThrottleWindow
	}
	t.width = bucketWidth(span)
	if t.clk == nil {
		t.coarse = &coarse.Clock{Tick: time.Duration(t.width / 4)}
	}
	return t, nil
}

// nowNs is the time an attempt is counted at, in UnixNano: the injected
// clock's, or the real one's, read once per tick.
func (t *Throttle) nowNs() int64 {
	if t.coarse != nil { // set only on the real clock
		return t.coarse.Nanos()
	}
	return coarse.Nanos(now(t.clk))
}

// RejectProbability returns the probability with which the Throttle
// refuses an attempt now, for metrics.
func (t *Throttle) RejectProbability() float64 {
	p := t.rejectAt(now(t.clk))
	t.note(p)
	return p
}

// rejectAt is the SRE formula over the window that ends at at.
func (t *Throttle) rejectAt(at time.Time) float64 {
	k, maxReject, minRequests, width := t.params()
	requests, accepts := t.w.sum(at, width)
	if requests < minRequests {
		return 0
	}
	r := float64(requests)
	p := (r - k*float64(accepts)) / (r + 1)
	return min(max(p, 0), maxReject)
}

// params returns t's constants; the zero Throttle has the defaults.
func (t *Throttle) params() (k, maxReject float64, minRequests uint64, width int64) {
	if t.width == 0 {
		return defaultThrottleK, defaultThrottleMaxReject, defaultThrottleMinRequests, bucketWidth(defaultThrottleWindow)
	}
	return t.k, t.maxReject, t.minRequests, t.width
}

// allowSlow reports whether a request may be sent at ns (UnixNano), in
// epoch e of the window, when the reject probability is not known to be
// zero in e (Call.Admit tests that first, inline), and counts it if
// not; the draw (random) is made only when the probability is not zero.
// A request sent is counted when its answer comes, with it, in the same
// bucket (see answered): one atomic add per attempt, not two.
func (t *Throttle) allowSlow(ns, e int64) bool {
	k, maxReject, minRequests, width := t.params()
	at := coarse.Time(ns)
	before := t.zeroIn.Load()
	requests, accepts := t.w.sum(at, width)
	var p float64
	if r, ka := float64(requests), k*float64(accepts); r <= ka {
		t.noteZero(before, e, ka-r)
	} else if requests >= minRequests {
		p = min((r-k*float64(accepts))/(r+1), maxReject)
	}
	t.note(p)
	if p != 0 && t.random() < p {
		t.zeroIn.Store(0)
		t.w.addIn(e, 1, 0)
		return false
	}
	return true
}

// answered counts a request that allow let through in epoch e, and
// whether it was accepted.
func (t *Throttle) answered(e int64, accepted bool) {
	if accepted {
		t.w.addIn(e, 1, 1)
	} else {
		t.w.addIn(e, 1, 0) // counted before the slack is taken: see zeroIn
		t.failed()
	}
}

// random is the number a refusal is decided by.
func (t *Throttle) random() float64 {
	if t.rnd != nil {
		return t.rnd()
	}
	return rand.Float64()
}

func (t *Throttle) bucketWidth() int64 {
	if t.width == 0 {
		return bucketWidth(defaultThrottleWindow)
	}
	return t.width
}
