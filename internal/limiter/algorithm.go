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

// The Gradient algorithm's defaults, Netflix Gradient2's, for the server's
// Limiter and the client's alike.
const (
	DefaultTolerance = 1.5
	DefaultSmoothing = 0.2
)

const (
	// Window is the number of samples averaged into one measurement; the
	// limit moves once a window. An average, not single samples, because
	// one sample's latency varies more than queueing moves it.
	Window = 25
	// Baseline is the number of busy windows (windows that saw the limit
	// in use) between two probes of the minimum latency, and ProbeEvery
	// the least time between two: a probe costs about a window at half
	// the limit, and at thousands of requests a second twenty windows
	// pass in a quarter of a second (Envoy's filter probes once a minute).
	Baseline   = 20
	ProbeEvery = 10 * time.Second
	// A probe averages whole windows until its mean is known within
	// ProbeError (its standard error, as a share of it), at most
	// ProbeWindows of them: the baseline is that one measurement until the
	// next probe, so it must not be one noisy window. A service whose
	// latency hardly varies probes for one window; one whose latencies
	// vary as a lognormal of σ = 1 (a standard deviation 1.3 times the
	// mean), for four.
	ProbeWindows = 4
	ProbeError   = 0.05
	// Headroom caps what the Gradient limit adds once work queues inside
	// the service (Gradient2's queueSize, 4): growing by √limit while
	// nothing queues finds the capacity fast, but at the balance, where
	// limit×g + headroom = limit, every unit of headroom is a request
	// waiting inside the service.
	Headroom = 4
	backoff  = 0.9 // multiplicative decrease on overload
	aimdDrop = 2.0 // AIMD: a window this many times the baseline is overload
)

// algo is the state of the limit's algorithm, under the Limiter's lock.
// Latencies are float64 nanoseconds.
//
// The baseline, "the minimum", is the latency when nothing queued inside
// the service. Under overload that never lets up every window is queued,
// so a minimum over recent windows drifts up to the queued latency and the
// limit grows without end (Gradient2's long-term average drifts the same
// way). So the baseline is measured, as Envoy's adaptive concurrency
// filter measures its minRTT: after Baseline busy windows, and at most
// once every ProbeEvery, the limit halves for ProbeWindows windows of
// requests admitted once the count in flight has fallen under it, so that
// what queued inside the service has drained; their average is the
// baseline until the next probe. Then the limit is restored. Before the
// first probe the baseline is the smallest window yet. Between probes it
// does not fall to a smaller window: with latencies that vary (a
// lognormal of σ = 1), the smallest of the hundreds of windows in
// ProbeEvery lies far below their mean, every window looks queued against
// it, and the limit collapsed to a third of the capacity. A probe costs
// about four windows at half the limit; it also lets the baseline rise
// when the service itself has become slower, and fall when it got faster.
type algo struct {
	kind                 Algorithm
	limit, lo, hi        float64
	tolerance, smoothing float64

	sum              float64 // this window's latencies
	sq               float64 // and their squares
	n                int     // and their number
	busy, overloaded bool    // this window saw the limit in use / an overload
	recent           float64 // the last window's average
	baseline         float64 // the last probe's average (before one, the smallest window)

	busyWindows int       // since the last probe
	probeFrom   time.Time // when a probe's limit was reached; only requests admitted since count
	probing     bool
	restore     float64   // the limit before the probe
	lastProbe   time.Time // when the last probe began
	fromProbe   bool      // the baseline is a probe's
	smooth      float64   // the mean of the last window and the smooth before it: Gradient's recent latency
}

func newAlgo(c Config) algo {
	return algo{
		kind: c.Algorithm, limit: float64(c.Initial),
		lo: float64(c.Min), hi: float64(c.Max),
		tolerance: c.Tolerance, smoothing: c.Smoothing,
	}
}

// base is the baseline latency, 0 before the first window.
func (a *algo) base() float64 { return a.baseline }

// latency is the recent latency: the last window's average, or the
// running one before the first window ends.
func (a *algo) latency() float64 {
	if a.recent == 0 && a.n > 0 {
		return a.sum / float64(a.n)
	}
	return a.recent
}

// sample feeds the latency of a request admitted at start and done at
// now, with the count in flight, or an overload; at the end of a window
// the limit moves.
func (a *algo) sample(start, now time.Time, inflight int, overloaded bool) {
	if a.probing {
		// The probe counts only requests admitted once the count in
		// flight has fallen under the halved limit: what the old limit
		// let in beyond it has drained, and does not stand in their way.
		if a.probeFrom.IsZero() && float64(inflight-1) < a.limit {
			a.probeFrom = now
		}
		if a.probeFrom.IsZero() || start.Before(a.probeFrom) {
			return
		}
	}
	x := max(float64(now.Sub(start)), 1)
	a.sum += x
	a.sq += x * x
	a.n++
	a.busy = a.busy || float64(inflight) >= a.limit/2
	a.overloaded = a.overloaded || overloaded
	if a.n%Window != 0 || a.probing && !a.measured() {
		return
	}
	a.recent = a.sum / float64(a.n)
	if !a.probing {
		if a.smooth == 0 {
			a.smooth = a.recent
		} else {
			a.smooth = (a.smooth + a.recent) / 2
		}
	}
	busy, over := a.busy, a.overloaded
	a.sum, a.sq, a.n, a.busy, a.overloaded = 0, 0, 0, false, false
	if a.probing {
		a.probing, a.baseline, a.limit = false, a.recent, a.restore
		a.fromProbe = true
	} else if a.baseline == 0 || a.recent < a.baseline && !a.fromProbe {
		a.baseline = a.recent
	}
	a.move(busy, over)
	if a.kind != Fixed && busy {
		if a.busyWindows++; a.busyWindows >= Baseline && (a.lastProbe.IsZero() || now.Sub(a.lastProbe) >= ProbeEvery) {
			a.lastProbe = now
			a.busyWindows, a.probing, a.probeFrom, a.restore = 0, true, time.Time{}, a.limit
			a.set(a.limit / 2)
		}
	}
}

// measured reports whether a probe has averaged enough windows: ProbeWindows,
// or fewer once the standard error of their mean is within ProbeError of it.
func (a *algo) measured() bool {
	if a.n >= ProbeWindows*Window {
		return true
	}
	n := float64(a.n)
	mean := a.sum / n
	variance := max(0, a.sq/n-mean*mean)
	return variance/n <= ProbeError*ProbeError*mean*mean
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
		g := max(0.5, min(1, a.tolerance*base/a.smooth))
		if g >= 1 && !busy {
			return
		}
		h := math.Sqrt(a.limit)
		if g < 1 {
			h = min(h, Headroom)
		}
		next := a.limit*g + h
		a.set(a.limit*(1-a.smoothing) + next*a.smoothing)
	}
}

func (a *algo) set(v float64) { a.limit = max(a.lo, min(a.hi, v)) }
