package limiter

import (
	"math"
	"time"
)

// Algorithm moves the limit.
type Algorithm uint8

const (
	// Gradient: the limit follows the ratio of the minimum latency to the
	// recent one (Netflix's Gradient2, Envoy's adaptive concurrency).
	Gradient Algorithm = iota
	// AIMD: additive increase while latency stays near its minimum,
	// multiplicative decrease on overload.
	AIMD
	// Fixed: the limit is Initial.
	Fixed
)

const (
	// Window is the number of samples averaged into one measurement; the
	// limit moves once a window. An average, not single samples, because
	// one sample's latency varies more than queueing moves it.
	Window = 25
	// ProbeEvery is how often an adaptive limit drops to ProbeLimit for
	// one window to measure the unloaded latency, as Envoy's adaptive
	// concurrency filter does (its default: every 60 s, at 3). Between
	// probes the minimum is the smallest window average since the last
	// one. Without probes, a server that stays loaded sees only loaded
	// latencies, takes them for its minimum, and its limit creeps up.
	ProbeEvery = 10 * time.Second
	ProbeLimit = 3
	backoff    = 0.9 // multiplicative decrease on overload
	aimdDrop   = 2.0 // AIMD: a window this many times the minimum is overload
)

// algo is the state of the limit's algorithm, under the Limiter's lock.
// Latencies are float64 nanoseconds.
type algo struct {
	kind                 Algorithm
	limit, lo, hi        float64
	tolerance, smoothing float64

	sum              float64 // this window's latencies
	n                int     // and their number
	busy, overloaded bool    // this window saw the limit in use / an overload
	recent           float64 // the last window's average
	minimum          float64 // the smallest window average since the last probe

	probing    bool
	probeStart time.Time // samples of work begun before it are not the probe's
	nextProbe  time.Time // zero: at the first sample
	saved      float64   // the limit before the probe
}

func newAlgo(c Config) algo {
	return algo{
		kind: c.Algorithm, limit: float64(c.Initial),
		lo: float64(c.Min), hi: float64(c.Max),
		tolerance: c.Tolerance, smoothing: c.Smoothing,
	}
}

// base is the minimum latency: the smallest window average since the
// last probe.
func (a *algo) base() float64 { return a.minimum }

// latency is the recent latency: the last window's average, or the
// running one before the first window ends.
func (a *algo) latency() float64 {
	if a.recent == 0 && a.n > 0 {
		return a.sum / float64(a.n)
	}
	return a.recent
}

// sample feeds one latency (ns) of work begun at start and ended at now,
// with the count in flight, or an overload; at the end of a window the
// limit moves.
func (a *algo) sample(start, now time.Time, rtt float64, inflight int, overloaded bool) {
	if a.kind != Fixed && !a.probing && !now.Before(a.nextProbe) {
		a.probing, a.probeStart, a.saved = true, now, a.limit
		a.limit = min(a.limit, max(a.lo, ProbeLimit))
		a.sum, a.n, a.busy, a.overloaded = 0, 0, false, false
		return
	}
	if a.probing && start.Before(a.probeStart) {
		return // begun at the old limit: not an unloaded latency
	}
	a.sum += max(rtt, 1)
	a.n++
	a.busy = a.busy || float64(inflight) >= a.limit/2
	a.overloaded = a.overloaded || overloaded
	if a.n < Window {
		return
	}
	a.recent = a.sum / float64(a.n)
	busy, over := a.busy, a.overloaded
	a.sum, a.n, a.busy, a.overloaded = 0, 0, false, false
	if a.probing {
		a.probing, a.minimum, a.limit = false, a.recent, a.saved
		a.nextProbe = now.Add(ProbeEvery)
		return
	}
	if a.minimum == 0 || a.recent < a.minimum {
		a.minimum = a.recent
	}
	a.move(busy, over)
}

// move moves the limit at the end of a window. The limit grows only when
// it is what held the work back: a service that used under half of its
// limit says nothing of a higher one.
func (a *algo) move(busy, overloaded bool) {
	if a.kind == Fixed {
		return
	}
	if overloaded {
		a.set(a.limit * backoff)
		return
	}
	base := a.base()
	switch a.kind {
	case AIMD:
		if a.recent > aimdDrop*base {
			a.set(a.limit * backoff)
		} else if busy {
			a.set(a.limit + 1)
		}
	default: // Gradient
		g := max(0.5, min(1, a.tolerance*base/a.recent))
		if g >= 1 && !busy {
			return
		}
		next := a.limit*g + math.Sqrt(a.limit)
		a.set(a.limit*(1-a.smoothing) + next*a.smoothing)
	}
}

func (a *algo) set(v float64) { a.limit = max(a.lo, min(a.hi, v)) }
