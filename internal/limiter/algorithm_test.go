package limiter_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/stormguard/retry/internal/limiter"
)

// service is a service of capacity concurrent requests behind l, whose
// excess waits inside it (FIFO), with more demand than any limit admits,
// on fake time.
type service struct {
	l        *limiter.Limiter
	capacity int
	now      time.Time
	waiting  []time.Time // admitted, waiting for a worker
	busy     []job
}

type job struct{ start, end time.Time }

func newService(l *limiter.Limiter, capacity int) *service {
	return &service{l: l, capacity: capacity, now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// run serves n requests of d each, and returns the limit after each.
func (s *service) run(n int, d time.Duration) []int {
	return s.runWith(n, func() time.Duration { return d })
}

// runWith serves n requests, each of work(), and returns the limit after
// each.
func (s *service) runWith(n int, work func() time.Duration) []int {
	limits := make([]int, 0, n)
	for range n {
		for s.l.TryAcquire(0) {
			s.waiting = append(s.waiting, s.now)
		}
		for len(s.busy) < s.capacity && len(s.waiting) > 0 {
			s.busy = append(s.busy, job{s.waiting[0], s.now.Add(work())})
			s.waiting = s.waiting[1:]
		}
		i := 0
		for k, j := range s.busy {
			if j.end.Before(s.busy[i].end) {
				i = k
			}
		}
		j := s.busy[i]
		s.busy = slices.Delete(s.busy, i, i+1)
		s.now = j.end
		s.l.Release(j.start, s.now, limiter.Success)
		limits = append(limits, s.l.Stats().Limit)
	}
	return limits
}

// Under overload that never lets up, every window is queued inside the
// service, so the baseline (the smallest of the last Baseline windows)
// would drift up to the queued latency and the Gradient limit grow to
// Max. The probe (the limit halves once every Baseline busy windows)
// drains the service's own queue and measures its latency unqueued again,
// so the limit stays within Tolerance or so of the capacity.
func TestGradientHoldsUnderSustainedOverload(t *testing.T) {
	t.Parallel()
	const capacity = 10
	l := limiter.New(limiter.Config{
		Algorithm: limiter.Gradient, Initial: 20, Min: 1, Max: 1000,
		Tolerance: 1.5, Smoothing: 0.2,
	})
	limits := newService(l, capacity).run(50_000, 10*time.Millisecond)
	late := limits[len(limits)/2:]
	assert.LessOrEqual(t, slices.Max(late), 3*capacity, "highest limit in the second half")
	assert.GreaterOrEqual(t, slices.Min(late), capacity/2, "lowest limit in the second half")
}

// When the service itself becomes slower, the probes let the baseline
// rise to its new latency, and the limit comes back to its capacity; a
// baseline that only fell would take every window for queueing and drive
// the limit down to Min.
func TestGradientFollowsASlowerService(t *testing.T) {
	t.Parallel()
	const capacity = 10
	l := limiter.New(limiter.Config{
		Algorithm: limiter.Gradient, Initial: 20, Min: 1, Max: 1000,
		Tolerance: 1.5, Smoothing: 0.2,
	})
	s := newService(l, capacity)
	s.run(20_000, 10*time.Millisecond)
	limits := s.run(50_000, 30*time.Millisecond)
	late := limits[len(limits)/2:]
	assert.GreaterOrEqual(t, slices.Min(late), capacity/2, "lowest limit in the second half")
	assert.LessOrEqual(t, slices.Max(late), 3*capacity, "highest limit in the second half")
	st := l.Stats()
	assert.InDelta(t, 30*time.Millisecond, st.MinLatency, float64(5*time.Millisecond), "MinLatency = %v, want about 30ms", st.MinLatency)
}

// A probe costs about a window at half the limit, so at a high rate they
// are at most every ProbeEvery, not every Baseline busy windows (at
// 10,000 requests a second, twenty windows pass in 50 ms).
func TestProbesAtMostEveryProbeEvery(t *testing.T) {
	t.Parallel()
	const capacity = 10
	l := limiter.New(limiter.Config{
		Algorithm: limiter.Gradient, Initial: 20, Min: 1, Max: 1000,
		Tolerance: 1.1, Smoothing: 0.2,
	})
	s := newService(l, capacity)
	start := s.now
	limits := s.run(200_000, time.Millisecond) // 20 s at 10,000 a second
	elapsed := s.now.Sub(start)
	probes := 0
	for i := 1; i < len(limits); i++ {
		if float64(limits[i]) <= 0.6*float64(limits[i-1]) {
			probes++
		}
	}
	assert.LessOrEqual(t, probes, int(elapsed/limiter.ProbeEvery)+1, "%d probes in %v", probes, elapsed)
	assert.GreaterOrEqual(t, probes, int(elapsed/limiter.ProbeEvery)-1, "%d probes in %v", probes, elapsed)
}

// Once work queues inside the service, the Gradient limit adds at most
// Headroom a window, so it settles at about Tolerance × the capacity +
// Headroom (√limit, at a capacity of 100, settles a few higher:
// more requests waiting inside the service).
func TestGradientSettlesWithinHeadroom(t *testing.T) {
	t.Parallel()
	const capacity = 100
	l := limiter.New(limiter.Config{
		Algorithm: limiter.Gradient, Initial: 20, Min: 1, Max: 1000,
		Tolerance: 1.1, Smoothing: 0.2,
	})
	limits := newService(l, capacity).run(200_000, 10*time.Millisecond)
	late := slices.Clone(limits[len(limits)/2:])
	slices.Sort(late)
	median := late[len(late)/2]
	t.Logf("median %d, p10 %d, p90 %d", median, late[len(late)/10], late[len(late)*9/10])
	assert.LessOrEqual(t, median, int(1.1*capacity)+limiter.Headroom, "median limit in the second half")
	assert.GreaterOrEqual(t, median, capacity, "median limit in the second half")
}

// With latencies that vary from one request to the next (a lognormal of
// σ = 1: a standard deviation 1.3 times the mean), the smallest of the
// hundreds of windows between two probes lies far below their mean; a
// baseline that fell to it took every window for queueing and held the
// limit at a third of the capacity. The baseline is the probe's, averaged
// until it is known within ProbeError, so the limit stays near the
// capacity.
func TestGradientHoldsWithVariableLatency(t *testing.T) {
	t.Parallel()
	const capacity = 20
	l := limiter.New(limiter.Config{
		Algorithm: limiter.Gradient, Initial: 20, Min: 1, Max: 1000,
		Tolerance: 1.1, Smoothing: 0.2,
	})
	rng := rand.New(rand.NewPCG(1, 2))
	work := func() time.Duration {
		return time.Duration(float64(10*time.Millisecond) * math.Exp(rng.NormFloat64()-0.5))
	}
	limits := newService(l, capacity).runWith(200_000, work)
	late := slices.Clone(limits[len(limits)/2:])
	slices.Sort(late)
	t.Logf("limit p10 %d, median %d, p90 %d", late[len(late)/10], late[len(late)/2], late[len(late)*9/10])
	assert.GreaterOrEqual(t, late[len(late)/10], capacity*3/4, "the limit's 10th percentile in the second half")
}
