package retry

import (
	"slices"
	"sync"
	"time"
)

// Defaults of the zero Hedger.
const (
	defaultHedgeQuantile    = 0.95
	defaultHedgeMinDelay    = time.Millisecond
	defaultHedgeMaxDelay    = time.Second
	defaultHedgeMaxInFlight = 2
	defaultHedgeMaxFraction = 0.05
	hedgeBurst              = 10  // hedges the fraction bound allows at once
	hedgeWindow             = 512 // latencies kept for the adaptive delay
	hedgeWarmup             = 16  // latencies needed before the delay adapts
	hedgeRecompute          = 32  // new latencies between two computations of the quantile
)

// Hedger sends another copy of a slow call while the first is still
// running, and takes whichever answers first: retries fix failures, hedging
// fixes slowness ("The Tail at Scale", Dean and Barroso, 2013). It is used
// through [Hedge] and [HedgeValue].
//
// A copy is started when no attempt has finished for the hedge delay: Delay
// if set, or else the Quantile of the latencies of the calls this Hedger
// has seen succeed recently (the last 512), bounded by MinDelay and
// MaxDelay, so that nobody has to tune a number that drifts. Until it has
// seen 16, it waits MaxDelay. A call's latency runs from the start of its
// first attempt (or of the retry after its latest wait) to its success,
// whichever copy won: the slow attempts that a hedge cut short count, so
// that at the 95th percentile about 5% of calls are hedged. Share one
// Hedger between the calls to one service, and only those: its latencies
// are that service's.
//
// Hedges are also bounded in number: at most MaxFraction of the calls, over
// time, with a burst of 10. The Tail at Scale's hedged requests cost a few
// percent more load (2% in its example, 5% at the 95th percentile); without
// the bound, a service slowed past MaxDelay by overload would get a second
// copy of every call, twice its load, when it can least afford it. A
// Budget bounds hedges too, as it bounds retries, but only when failures
// mount: a slow service that answers is not failing.
//
// The zero Hedger is ready to use: adaptive at the 95th percentile, between
// 1ms and 1s, at most 2 attempts in flight, hedges for at most 5% of calls.
// A Hedger is safe for concurrent use; its fields must not change once it
// is in use.
type Hedger struct {
	Delay       time.Duration // fixed hedge delay [0: adaptive]
	Quantile    float64       // of recent latencies, for the adaptive delay [0.95]
	MinDelay    time.Duration // floor of the adaptive delay [1ms]
	MaxDelay    time.Duration // cap of the adaptive delay, and the delay until it adapts [1s]
	MaxInFlight int           // attempts running at once, the first included [2]
	MaxFraction float64       // hedges per call, over time [0.05]; 1 or more: no bound

	mu      sync.Mutex
	spent   float64         // hedge tokens spent: hedgeBurst minus those left, so that a zero Hedger starts full
	samples []time.Duration // ring of the last hedgeWindow latencies
	next    int             // where the next sample goes
	fresh   int             // samples since the quantile was last computed
	delay   time.Duration   // the adaptive delay, once computed
}

// HedgeDelay returns the delay this Hedger waits now before it starts
// another attempt, for metrics and tests.
func (h *Hedger) HedgeDelay() time.Duration {
	if h.Delay > 0 {
		return h.Delay
	}
	lo, hi := h.bounds()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.samples) < hedgeWarmup {
		return hi
	}
	if h.fresh > 0 && (h.delay == 0 || h.fresh >= hedgeRecompute) {
		sorted := slices.Clone(h.samples)
		slices.Sort(sorted)
		q := h.Quantile
		if !(q > 0 && q < 1) {
			q = defaultHedgeQuantile
		}
		h.delay = sorted[min(int(q*float64(len(sorted))), len(sorted)-1)]
		h.fresh = 0
	}
	return min(max(h.delay, lo), hi)
}

func (h *Hedger) bounds() (lo, hi time.Duration) {
	lo, hi = h.MinDelay, h.MaxDelay
	if lo <= 0 {
		lo = defaultHedgeMinDelay
	}
	if hi <= 0 {
		hi = defaultHedgeMaxDelay
	}
	return lo, max(lo, hi)
}

// begin earns a call's share of a hedge: MaxFraction of one.
func (h *Hedger) begin() {
	f := h.maxFraction()
	if f >= 1 {
		return
	}
	h.mu.Lock()
	h.spent = max(h.spent-f, 0)
	h.mu.Unlock()
}

// allowHedge takes a hedge's token, if one is left.
func (h *Hedger) allowHedge() bool {
	if h.maxFraction() >= 1 {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.spent+1 > hedgeBurst {
		return false
	}
	h.spent++
	return true
}

func (h *Hedger) maxFraction() float64 {
	if !(h.MaxFraction > 0) { // zero, negative or NaN
		return defaultHedgeMaxFraction
	}
	return h.MaxFraction
}

func (h *Hedger) maxInFlight() int {
	if h.MaxInFlight <= 0 {
		return defaultHedgeMaxInFlight
	}
	return h.MaxInFlight
}

// observe records the latency of a call that succeeded.
func (h *Hedger) observe(d time.Duration) {
	if h.Delay > 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.samples) < hedgeWindow {
		h.samples = append(h.samples, d)
	} else {
		h.samples[h.next] = d
		h.next = (h.next + 1) % hedgeWindow
	}
	h.fresh++
}
