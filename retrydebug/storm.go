package retrydebug

import (
	"cmp"
	"slices"
	"sync"

	"github.com/stormguard/retry/guard"
)

// maxGuardKeys is how many keys of one Breakers or Throttles the page and
// the Snapshot show: those in trouble first (open, half-open, shedding),
// then by key.
const maxGuardKeys = 100

// BreakerStatus is the state of a Breaker registered with
// [Recorder.Breaker], or of one key of a Breakers registered with
// [Recorder.Breakers].
type BreakerStatus struct {
	Name string `json:"name"`
	// Key is the Breaker's key in its Breakers (an origin, a target);
	// empty for one registered alone.
	Key string `json:"key,omitempty"`
	// State is "closed", "open" or "half-open", as of now: a breaker
	// whose OpenFor has passed is half-open without waiting for a call.
	State string `json:"state"`
}

// ThrottleStatus is the state of a Throttle registered with
// [Recorder.Throttle], or of one key of a Throttles registered with
// [Recorder.Throttles].
type ThrottleStatus struct {
	Name string `json:"name"`
	Key  string `json:"key,omitempty"`
	// RejectRatio is the probability with which the Throttle refuses an
	// attempt now: 0 for a healthy service.
	RejectRatio float64 `json:"reject_ratio"`
}

// guardSet is the breakers and throttles registered with a Recorder, in
// the order registered, under their own lock.
type guardSet struct {
	mu        sync.Mutex
	breakers  []named[any] // *guard.Breaker or *guard.Breakers
	throttles []named[any] // *guard.Throttle or *guard.Throttles
}

// Breaker registers b under name, so that the page shows its state.
// Registering a name again replaces it, and registering it with nil
// removes it. At most as many breakers and Breakers as operations are
// kept, and names past that are ignored, so that a Breaker registered
// per request cannot grow the Recorder.
func (r *Recorder) Breaker(name string, b *guard.Breaker) {
	r.register(&r.guards.breakers, name, b, b == nil)
}

// Breakers registers bs under name, so that the page shows the state of
// each of its keys (up to 100, those not closed first). It is kept as
// [Recorder.Breaker] keeps a Breaker.
func (r *Recorder) Breakers(name string, bs *guard.Breakers) {
	r.register(&r.guards.breakers, name, bs, bs == nil)
}

// Throttle registers t under name, so that the page shows its reject
// ratio. It is kept as [Recorder.Breaker] keeps a Breaker.
func (r *Recorder) Throttle(name string, t *guard.Throttle) {
	r.register(&r.guards.throttles, name, t, t == nil)
}

// Throttles registers ts under name, so that the page shows the reject
// ratio of each of its keys (up to 100, those that shed first). It is
// kept as [Recorder.Breaker] keeps a Breaker.
func (r *Recorder) Throttles(name string, ts *guard.Throttles) {
	r.register(&r.guards.throttles, name, ts, ts == nil)
}

// Guards registers every set of k under name, the one call for the guards
// an integration takes through a guard.Keyed: its Budgets (the tokens of
// up to 100 keys, the emptiest first), Breakers and Throttles, as
// [Recorder.Budget], [Recorder.Breakers] and [Recorder.Throttles] keep
// theirs. A nil set is skipped; Guards(name, guard.Keyed{}) removes them.
func (r *Recorder) Guards(name string, k guard.Keyed) {
	r.budgetSet(name, k.Budgets)
	r.register(&r.guards.breakers, name, k.Breakers, k.Breakers == nil)
	r.register(&r.guards.throttles, name, k.Throttles, k.Throttles == nil)
}

// budgetSet registers bs under name, or removes name's when nil.
func (r *Recorder) budgetSet(name string, bs *guard.Budgets) {
	_, maxOps := r.limits()
	r.mu.Lock()
	defer r.mu.Unlock()
	i := slices.IndexFunc(r.budgets, func(b namedBudget) bool { return b.name == name })
	switch {
	case i >= 0 && bs == nil:
		r.budgets = slices.Delete(r.budgets, i, i+1)
	case i >= 0:
		r.budgets[i] = namedBudget{name: name, set: bs}
	case bs != nil && len(r.budgets) < maxOps:
		r.budgets = append(r.budgets, namedBudget{name: name, set: bs})
	}
}

func (r *Recorder) register(list *[]named[any], name string, g any, remove bool) {
	_, maxOps := r.limits()
	r.guards.mu.Lock()
	defer r.guards.mu.Unlock()
	setNamed(list, name, g, remove, maxOps)
}

// breakerStatuses reads the registered breakers.
func (r *Recorder) breakerStatuses() []BreakerStatus {
	r.guards.mu.Lock()
	list := slices.Clone(r.guards.breakers)
	r.guards.mu.Unlock()
	out := []BreakerStatus{}
	for _, ng := range list {
		switch g := ng.v.(type) {
		case *guard.Breaker:
			out = append(out, BreakerStatus{Name: ng.name, State: g.State().String()})
		case *guard.Breakers:
			var keyed []BreakerStatus
			for key, b := range g.All() {
				keyed = append(keyed, BreakerStatus{Name: ng.name, Key: key, State: b.State().String()})
			}
			slices.SortStableFunc(keyed, func(a, b BreakerStatus) int {
				return cmp.Compare(breakerRank(a.State), breakerRank(b.State))
			})
			out = append(out, keyed[:min(len(keyed), maxGuardKeys)]...)
		}
	}
	return out
}

// breakerRank orders states by trouble: open, half-open, closed.
func breakerRank(state string) int {
	switch state {
	case guard.BreakerOpen.String():
		return 0
	case guard.BreakerHalfOpen.String():
		return 1
	}
	return 2
}

// throttleStatuses reads the registered throttles.
func (r *Recorder) throttleStatuses() []ThrottleStatus {
	r.guards.mu.Lock()
	list := slices.Clone(r.guards.throttles)
	r.guards.mu.Unlock()
	out := []ThrottleStatus{}
	for _, ng := range list {
		switch g := ng.v.(type) {
		case *guard.Throttle:
			out = append(out, ThrottleStatus{Name: ng.name, RejectRatio: g.RejectProbability()})
		case *guard.Throttles:
			var keyed []ThrottleStatus
			for key, t := range g.All() {
				keyed = append(keyed, ThrottleStatus{Name: ng.name, Key: key, RejectRatio: t.RejectProbability()})
			}
			slices.SortStableFunc(keyed, func(a, b ThrottleStatus) int { return cmp.Compare(b.RejectRatio, a.RejectRatio) })
			out = append(out, keyed[:min(len(keyed), maxGuardKeys)]...)
		}
	}
	return out
}
