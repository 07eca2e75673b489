package chaos

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
)

// maxNames bounds the names a Switch counts; faults of further names are
// counted together under otherName, so that injectors made per request
// cannot grow a Switch.
const maxNames = 100

const otherName = "(other faults)"

// Switch arms the faults that name it: it is off when made, and its faults
// fire only between [Switch.On] and [Switch.Off]. It holds the seed that the
// faults are drawn from and counts, per fault name, the requests drawn for
// and the faults injected.
//
// The zero Switch is off, with seed 0. A Switch is safe for concurrent
// use; turning it on or off takes effect at once for every injector that
// shares it.
type Switch struct {
	on        atomic.Bool
	seed      uint64
	injectors atomic.Uint64 // the ids given to injectors, in the order made

	mu     sync.Mutex
	counts map[string]*counts
}

// counts are the counts of one fault name.
type counts struct {
	requests, injected atomic.Uint64
}

// NewSwitch returns a Switch, off, whose faults are drawn from seed: the
// same seed and the same requests give the same faults.
func NewSwitch(seed int64) *Switch {
	return &Switch{seed: uint64(seed)}
}

// On arms the Switch's faults.
func (s *Switch) On() { s.on.Store(true) }

// Off disarms them: requests that start after Off get no fault.
func (s *Switch) Off() { s.on.Store(false) }

// Enabled reports whether the Switch is on. A nil Switch is off.
func (s *Switch) Enabled() bool { return s != nil && s.on.Load() }

// Stats is what a Switch has done, for a debug page or a metric.
type Stats struct {
	On     bool         `json:"on"`
	Seed   int64        `json:"seed"`
	Faults []FaultStats `json:"faults"` // by name
}

// FaultStats are the counts of the faults of one name.
type FaultStats struct {
	Name string `json:"name"`
	// Requests counts the requests drawn for: those that matched the
	// fault, while the Switch was on, and that no earlier fault of their
	// injector had answered.
	Requests uint64 `json:"requests"`
	// Injected counts the requests that got the fault.
	Injected uint64 `json:"injected"`
}

// Stats returns the Switch's state and counts, the faults sorted by name.
// Every fault of an injector made with the Switch is listed from the
// start, at zero until drawn for.
func (s *Switch) Stats() Stats {
	st := Stats{On: s.Enabled()}
	if s == nil {
		return st
	}
	st.Seed = int64(s.seed)
	s.mu.Lock()
	for name, c := range s.counts {
		st.Faults = append(st.Faults, FaultStats{Name: name, Requests: c.requests.Load(), Injected: c.injected.Load()})
	}
	s.mu.Unlock()
	slices.SortFunc(st.Faults, func(a, b FaultStats) int { return cmp.Compare(a.Name, b.Name) })
	return st
}

// countsOf returns the counts of name, made on first use.
func (s *Switch) countsOf(name string) *counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.counts == nil {
		s.counts = make(map[string]*counts)
	}
	if c, ok := s.counts[name]; ok {
		return c
	}
	if len(s.counts) >= maxNames {
		name = otherName
		if c, ok := s.counts[name]; ok {
			return c
		}
	}
	c := &counts{}
	s.counts[name] = c
	return c
}

// draw returns the uniform number in [0, 1) of fault i for the n-th
// request of the injector id: a pure function of the seed and its
// arguments.
func (s *Switch) draw(id, n uint64, i int) float64 {
	h := splitmix(s.seed ^ splitmix(id^splitmix(n^splitmix(uint64(i)))))
	return float64(h>>11) / (1 << 53)
}

// splitmix is the finalizer of SplitMix64 (Steele, Lea and Flood, "Fast
// splittable pseudorandom number generators", OOPSLA 2014): a bijection
// of 64 bits whose outputs for consecutive inputs look independent.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}
