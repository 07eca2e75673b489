package retryhttp

import (
	"math"
	"sync/atomic"
)

// originStates is a set of origins in some state (a Budget exhausted, a
// hold), so that the moves into and out of it are logged, but at most one
// line a Window per origin: an origin that flaps at the edge of its Budget
// (9% failures at 1,000 requests a second) or between holds would
// otherwise write a pair of lines a second. A move that is not written
// waits: the origin's next event of either kind (a give-up for its Budget,
// a retry allowed, a Retry-After, a normal answer) once the Window has
// passed writes the line of the state the origin is in then, with the
// count of the moves not written ("suppressed_changes"). So the latest
// line of an origin that keeps being called says its state within a
// Window. It is guarded by its sampler's lock.
type originStates struct {
	m       map[string]*originState
	seq     uint64
	n       atomic.Int32 // origins in the state, read without the lock: most calls need no lock
	pending atomic.Int32 // origins whose latest move is not written yet
}

type originState struct {
	in       bool
	entered  uint64 // seq when it last entered
	lastLine int64  // UnixNano of its latest line; math.MinInt64 for none
	moves    int    // moves since that line
	pending  bool   // the latest move is not written yet
}

// enter puts origin in the state, and reports whether to write the line of
// its state now (see originStates), with the count of moves not written
// before it. With maxLogKeys origins known already, it forgets one that is
// not in the state, or else the one that entered first (an origin long
// since gone quiet, most likely: its recovery line is not written) rather
// than stop logging the moves of new origins.
func (s *logSampler) enter(st *originStates, origin string, ns, window int64) (bool, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := st.m[origin]
	if !ok {
		if st.m == nil {
			st.m = make(map[string]*originState)
		}
		if len(st.m) >= maxLogKeys {
			st.forgetOne()
		}
		o = &originState{lastLine: math.MinInt64}
		st.m[origin] = o
	}
	if !o.in {
		st.seq++
		o.in, o.entered = true, st.seq
		st.n.Add(1)
		st.moved(o)
	}
	return st.line(o, ns, window)
}

// quiet reports whether no origin is in the state and none has a move to
// write: then leave has nothing to do, and its caller need not read the
// clock for it (most calls).
func (st *originStates) quiet() bool { return st.n.Load() == 0 && st.pending.Load() == 0 }

// leave takes origin out of the state, and reports whether to write the
// line of its state now, as enter does.
func (s *logSampler) leave(st *originStates, origin string, ns, window int64) (bool, int) {
	if st.quiet() {
		return false, 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	o, ok := st.m[origin]
	if !ok {
		return false, 0
	}
	if o.in {
		o.in = false
		st.n.Add(-1)
		st.moved(o)
	}
	return st.line(o, ns, window)
}

// moved counts a move of o.
func (st *originStates) moved(o *originState) {
	o.moves++
	if !o.pending {
		o.pending = true
		st.pending.Add(1)
	}
}

// line reports whether o's state is written at ns: when its latest move
// is not written yet, and it wrote no line in the Window before ns.
func (st *originStates) line(o *originState, ns, window int64) (bool, int) {
	if !o.pending || o.lastLine != math.MinInt64 && ns >= o.lastLine && ns-o.lastLine < window {
		return false, 0
	}
	n := o.moves - 1
	o.lastLine, o.moves, o.pending = ns, 0, false
	st.pending.Add(-1)
	return true, n
}

// forgetOne forgets an origin: one out of the state if any, else the one
// that entered first.
func (st *originStates) forgetOne() {
	oldest, first := "", uint64(0)
	for k, o := range st.m {
		if !o.in {
			st.forget(k, o)
			return
		}
		if oldest == "" || o.entered < first {
			oldest, first = k, o.entered
		}
	}
	st.forget(oldest, st.m[oldest])
}

func (st *originStates) forget(k string, o *originState) {
	delete(st.m, k)
	if o.in {
		st.n.Add(-1)
	}
	if o.pending {
		st.pending.Add(-1)
	}
}
